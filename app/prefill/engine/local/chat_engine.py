"""Stream a chat through llama.cpp, reusing the KV cache across turns.

The engine keeps the tokens that are in the KV cache, and the text they came
from as segments (each prompt remainder, each answer). A new prompt reuses whole
segments whose text it starts with, so an answer's own generated tokens are
kept (re-tokenising its text may give other tokens), then tokenises only the
rest. Only what follows the longest common prefix with the cache is evaluated.
"""

from __future__ import annotations

import codecs
import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from prefill.engine.chat_backend import Event, one_at_a_time
from prefill.engine.drafts import rules
from prefill.engine.drafts.batch_drift import TieMargin
from prefill.engine.drafts.draft_length import DecodeCosts, DraftLength
from prefill.engine.drafts.ngram_draft import NgramIndex
from prefill.engine.errors import EngineError, TemplateError
from prefill.engine.events import Finished, FinishReason, MetricsSnapshot, PrefillDone
from prefill.engine.gguf.guard import read_model_header
from prefill.engine.gguf.header import GGUFHeader
from prefill.engine.gguf.model_kind import check_chat_model
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.llama.offload import DeviceReport, device_report, resolve_gpu_layers
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.local import kv_resume, speculative
from prefill.engine.local.draft_model import DraftModel
from prefill.engine.local.kv_disk import KvDiskCache, SaveResult
from prefill.engine.message import ImagePart, Message, images_of
from prefill.engine.metrics import RequestClock
from prefill.engine.prompt.answer_decoder import AnswerDecoder
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.grammar import Constraint
from prefill.engine.prompt.model_chat import ModelChat
from prefill.engine.prompt.overflow import Fitted, fit_messages
from prefill.engine.prompt.thinking_budget import ThinkingLimit
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.engine.speculation import DRAFT_MAX
from prefill.engine.vision import prompt_images
from prefill.engine.vision.projector import Projector, is_image_token

SNAPSHOT_EVERY_S = 0.25
_NO_IMAGES: Mapping[str, ImagePart] = MappingProxyType({})  # a prompt whose markers all stay text


@dataclass(frozen=True)
class _Segment:
    text: str
    tokens: tuple[int, ...]


class ChatEngine:
    """A loaded model with its KV cache. One thread uses it at a time."""

    def __init__(self, path: Path, header: GGUFHeader, runtime: LlamaRuntime, device: DeviceReport):
        self.path = path
        self.header = header
        self.runtime = runtime
        self.device = device
        self.settings = runtime.settings
        self.bytes_per_cell = kv_bytes_per_cell(header, self.settings.kv_type, self.settings.kv_type)
        self.chat = ModelChat(header.chat_template, runtime)
        self.format, self.reasoning = self.chat.format, self.chat.reasoning
        self._tokens: list[int] = []  # exactly what is in the KV cache, in order
        self._segments: list[_Segment] = []
        # The last _prepare answer; it depends on the segments, so it is dropped when they change.
        self._prepared: tuple[tuple[object, ...], tuple[str, list[int], int, str]] | None = None
        self._busy = threading.Lock()
        self._restored: tuple[int, float] | None = None  # tokens and ms of a restore the next prefill reports
        # "ngram": greedy answers are decoded speculatively with drafts from the text itself, "draft":
        # with drafts from the draft model (`use_draft_model`; see local/speculative.py); "off": one
        # token per step.
        self.speculative = "off"
        self.draft_max = DRAFT_MAX  # the longest draft checked in one step (the adaptive length's cap)
        self.speculation_note = ""  # why the last answer was not decoded speculatively when asked to be
        self.draft_model: DraftModel | None = None
        # What decodes cost, kept across answers and draft sources: they belong to the model and the
        # machine (a source prices its own guesses: DraftSource.token_seconds).
        self.decode_costs = DecodeCosts()  # what its decodes cost, one token or a checked draft (across answers)
        self._judged: dict[str, dict[int, list[float]]] = {}  # by mode: drafts' acceptance by kind (DraftLength)
        self._tie_margin = TieMargin()  # how far this model's batched logits drift from one-token ones
        self.projector: Projector | None = None  # the mmproj that lets the model see images (`use_projector`)

    @classmethod
    def load(
        cls, path: str | Path, settings: LoadSettings | None = None,
        progress: Callable[[float], bool] | None = None, mmproj: str | Path | None = None,
    ) -> ChatEngine:
        """Check the file, then load it with llama.cpp; `progress` gets 0..1 and may return False to stop.
        `mmproj`: the projector that lets it see images (`use_projector`).

        Raises:
            ModelLoadError: missing, empty, truncated or non-GGUF file, or llama.cpp refused it
                (ProjectorError: the projector).
        """
        settings = settings or LoadSettings()
        p = Path(path)
        header = read_model_header(p)
        check_chat_model(header, p.name)
        layers = resolve_gpu_layers(settings.n_gpu_layers, header, settings)
        runtime = LlamaRuntime(p, settings, layers, header.n_layer, progress)
        engine = cls(p, header, runtime, device_report(settings.n_gpu_layers, runtime.offload, layers))
        if mmproj is not None:
            try:
                engine.use_projector(mmproj)
            except BaseException:
                engine.close()
                raise
        return engine

    def close(self) -> None:
        self.use_draft_model(None)
        self.use_projector(None)
        self.runtime.close()

    # --- what it can do (chat_backend.ChatBackend): all of it, but serve a remote's prompt ----
    @property
    def local(self) -> ChatEngine:
        return self

    @property
    def speculates(self) -> ChatEngine:
        return self

    @property
    def sees_images(self) -> ChatEngine:
        return self

    @property
    def disk_cache(self) -> ChatEngine:
        return self

    @property
    def endpoint(self) -> None:
        return None

    # --- the projector (images) -----------------------------------------------------------
    def use_projector(self, path: str | Path | None) -> None:
        """Load the projector (mmproj) that turns images into this model's tokens (None: unload it).
        The cache is emptied: its images were embedded by the projector it replaces.

        Raises:
            ProjectorError: the file is not a projector, or not one for this model (its width differs).
        """
        new = Projector(path, self.runtime) if path is not None else None
        old, self.projector = self.projector, new
        if old is not None or new is not None:
            self.reset_cache()
            self.__dict__.pop("cache_scope", None)  # a saved state depends on the projector too
        if old is not None:
            old.close()

    # --- the draft model --------------------------------------------------------------
    def use_draft_model(self, path: str | Path | None) -> None:
        """Load the draft model `speculative = "draft"` drafts with (None: unload it). It gets this
        model's context size and offload settings; the one it replaces stays when it is refused.

        Raises:
            DraftModelError: the file cannot be loaded, or its vocabulary is not this model's.
        """
        new = DraftModel.load(path, self.runtime) if path is not None else None
        if self.draft_model is not None:
            self.draft_model.close()
        self.draft_model = new
        self._judged.pop("draft", None)  # another draft model guesses otherwise

    @property
    def draft_memory_bytes(self) -> int:
        """The loaded draft model's weights and KV cache (0 without one): memory beside this model's."""
        return self.draft_model.memory_bytes if self.draft_model is not None else 0

    # --- state ----------------------------------------------------------------------
    @property
    def n_ctx(self) -> int:
        return self.runtime.n_ctx

    @property
    def cached_tokens(self) -> list[int]:
        return list(self._tokens)

    def kv_snapshot(self) -> MetricsSnapshot:
        used = self.runtime.kv_cells_used()
        return MetricsSnapshot(
            kv_used=used,
            kv_total=self.n_ctx,
            kv_bytes=used * self.bytes_per_cell,
            kv_bytes_total=self.n_ctx * self.bytes_per_cell,
        )

    def reset_cache(self) -> None:
        self._restored = None
        self.runtime.kv_truncate(0)
        self._tokens.clear()
        self._segments.clear()
        self._prepared = None

    # --- the cache on disk (between requests, on the engine's thread) ---------------------
    @functools.cached_property
    def cache_scope(self) -> str:
        """What a saved state of this engine depends on besides its tokens (model, cache settings, build)."""
        identity = kv_resume.model_identity(self.path)
        if self.projector is not None:
            identity += "+" + kv_resume.model_identity(self.projector.path)
        return kv_resume.cache_scope(identity, self.settings, self.n_ctx, self.runtime.flash_attn_on)

    def save_state(self, disk: KvDiskCache) -> SaveResult:
        """Save the KV cache, its tokens and their segments to `disk`, keyed by scope and tokens."""
        segments = [(s.text, len(s.tokens)) for s in self._segments]
        return kv_resume.save(self.runtime, disk, self.cache_scope, self._tokens, segments)

    def restore_state(
        self, disk: KvDiskCache, messages: Sequence[Message], options: TemplateOptions | None = None
    ) -> kv_resume.Restored:
        """Restore the saved state that the prompt for `messages` (and a next user turn) reuses
        most, when it reuses more than the live cache; the next prefill reports it."""
        if not messages or messages[-1].role != "user":
            messages = [*messages, Message("user", "…")]
        text = self.render(messages, options)
        live = kv_resume.reusable([(s.text, len(s.tokens)) for s in self._segments], text)
        found = kv_resume.restore(self.runtime, disk, self.cache_scope, text, live)
        if found.cleared:
            self.reset_cache()
        if found.header is not None:
            tokens, at = found.header.tokens, 0
            self._tokens, self._segments, self._prepared = list(tokens), [], None
            for seg_text, n in found.header.segments:
                self._segments.append(_Segment(seg_text, tokens[at : at + n]))
                at += n
            self._restored = (len(tokens), found.ms)
        return found

    # --- prompts --------------------------------------------------------------------
    def render(self, messages: Sequence[Message], options: TemplateOptions | None = None) -> str:
        """The prompt text, in the model's format (the chat module's)."""
        return self.chat.render(messages, options)

    def _prompt(self, text: str, images: Mapping[str, ImagePart] = _NO_IMAGES) -> tuple[list[int], int, str]:
        """Tokens for `text` (whose image markers stand for `images`, by digest), the number of
        leading segments reused, and the remainder."""
        tokens: list[int] = []
        pos = used = 0
        for seg in self._segments:
            if not seg.text or not text.startswith(seg.text, pos):
                break
            tokens.extend(seg.tokens)
            pos += len(seg.text)
            used += 1
        rest = text[pos:]
        if rest:
            tokens.extend(prompt_images.tokenize_with_images(
                rest, pos == 0, self.chat.tokenize, images, self.projector, self.path.name))
        return tokens, used, rest

    def _prepare(self, request: ChatRequest) -> tuple[str, list[int], int, str]:
        """Text, tokens, segments reused and remainder for the request's prompt; the last answer is
        kept, so fitting a request and then sending it renders and tokenises it once."""
        key = (request.messages, request.options, request.offered_tools)
        if self._prepared is not None and self._prepared[0] == key:
            return self._prepared[1]
        text = self.chat.text_of(request)
        result = (text, *self._prompt(text, images_of(request.messages)))
        self._prepared = (key, result)
        return result

    def count_tokens(self, request: ChatRequest) -> int:
        """How many tokens the request's prompt takes."""
        return len(self._prepare(request)[1])

    def fit(self, request: ChatRequest) -> Fitted:
        """The request's messages as the overflow policy fits them into the context."""
        reserve = request.overflow.reserve_for(request.sampling.max_tokens, self.n_ctx)
        return fit_messages(request.messages, lambda ms: len(self._prepare(request.with_messages(ms))[1]),
                            self.n_ctx, reserve, request.overflow.policy)

    # --- streaming --------------------------------------------------------------------
    def stream(self, request: ChatRequest, cancel: threading.Event | None = None) -> Iterator[Event]:
        """Prefill the prompt, then decode; yields PrefillDone, Token…, MetricsSnapshot…, Finished.

        Raises:
            ContextOverflow: the prompt does not fit and the policy is `stop` (or nothing fits).
            TemplateError: the chat template refused, failed, or tried to leave its sandbox.
            EngineBusy: another request is running.
        """
        return one_at_a_time(self._busy, self._stream(request, cancel))

    def _stream(self, request: ChatRequest, cancel: threading.Event | None) -> Iterator[Event]:
        clock = RequestClock()
        messages = request.messages
        if not messages or messages[-1].role not in ("user", "tool"):  # "tool": a tool loop's next round
            raise TemplateError("a chat request must end with a user message or a tool result")
        constraint = self.chat.constraint(request)  # a schema that makes no grammar fails before any work
        fitted = self.fit(request)
        text, prompt, used, rest = self._prepare(request.with_messages(fitted.messages))
        rt = self.runtime
        if not prompt or not text.strip():  # nothing to decode: sampling would have no logits
            raise TemplateError("the chat template rendered an empty prompt: there is nothing to send")
        if len(prompt) >= self.n_ctx:
            raise EngineError("the prompt fills the whole context")

        # Longest common prefix with the cache; at least one token is evaluated for its logits.
        keep = 0
        limit = min(len(prompt), len(self._tokens))
        while keep < limit and prompt[keep] == self._tokens[keep]:
            keep += 1
        keep = prompt_images.run_start(prompt, min(keep, len(prompt) - 1))
        cache_note = ""
        if not rt.kv_truncate(keep):
            # Recurrent and hybrid memory cannot be trimmed part-way, and a sliding window may no
            # longer hold what the prefix needs: llama.cpp cleared the cache, so read it all again.
            cache_note = (
                f"this model's cache cannot keep {keep} tokens and drop the rest "
                "(recurrent, hybrid or sliding-window memory): the whole prompt was read again"
            )
            keep = 0
            used = 0
            rest = text
            self._segments.clear()
        del self._tokens[keep:]
        self._prepared = None
        self._segments = self._segments[:used]
        reused = sum(len(s.tokens) for s in self._segments)
        self._segments.append(_Segment(rest, tuple(prompt[reused:])))

        rt.perf_reset()
        clock.t_prefill_start = time.perf_counter()
        todo = prompt[keep:]
        encode_ms = 0.0  # the vision encoder's share, reported apart from the text's prefill
        # n_batch pieces of text (llama.cpp aborts on more), and each image whole (the projector's own batches)
        pieces = prompt_images.spans(todo, rt.n_batch) if self.projector is not None else (
            (i, i + rt.n_batch, False) for i in range(0, len(todo), rt.n_batch))
        for start, end, image in pieces:
            if cancel is not None and cancel.is_set():
                self._sync_segments()
                snap = clock.snapshot(rt.kv_cells_used(), self.n_ctx, self.bytes_per_cell, "cancelled")
                yield Finished("cancelled", "", snap)
                return
            chunk = todo[start:end]
            try:
                if image and self.projector is not None:
                    encode_ms += self.projector.evaluate(chunk[0], keep + start)
                else:
                    rt.decode(chunk)
            except EngineError:
                self.reset_cache()
                raise
            self._tokens.extend(chunk)
        clock.t_prefill_end = time.perf_counter()
        perf = rt.perf()
        evaluated = len(todo)
        prefill_ms = perf.t_p_eval_ms if perf.n_p_eval == evaluated and perf.t_p_eval_ms > 0 else (
            (clock.t_prefill_end - clock.t_prefill_start) * 1000 - encode_ms
        )
        n_image = prompt_images.image_tokens(prompt, self.projector)
        clock.base = MetricsSnapshot(
            prompt_tokens=len(prompt),
            cached_tokens=keep,
            evaluated_tokens=evaluated,
            prefill_ms=prefill_ms,
            prefill_tps=evaluated / prefill_ms * 1000 if prefill_ms > 0 else 0.0,
            image_tokens=n_image,
            image_encode_ms=encode_ms,
        )
        restored, self._restored = self._restored, None
        yield PrefillDone(len(prompt), keep, evaluated, prefill_ms, fitted.dropped, fitted.note, cache_note,
                          min(keep, restored[0]) if restored else 0, restored[1] if restored else 0.0,
                          n_image, encode_ms)
        split = self.chat.reader(text, clock, request=request)
        yield from self._decode(request.sampling, cancel, clock, split, constraint,
                                self.chat.thinking_limit(text, request))

    def _decode(
        self, sampling: SamplingSettings, cancel: threading.Event | None, clock: RequestClock,
        split: AnswerSplit, constraint: Constraint | None = None, thinking: ThinkingLimit | None = None,
    ) -> Iterator[Event]:
        rt = self.runtime
        answer = AnswerDecoder(rt, sampling, self.chat.stops(sampling), constraint, thinking)
        sampler, feed = answer.sampler, answer.feed
        n_answer = 0
        raw: list[bytes] = []  # the bytes of the answer tokens that are in the cache
        eog, n_ctx, times, tokens = rt.eog, self.n_ctx, clock.token_times, self._tokens
        next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
        reason: FinishReason = "length"
        error = ""
        hit = False
        source = self._draft_source(sampling, constraint, cancel, thinking)
        drafts = speculative.DraftStats(self._tie_margin) if source is not None else None
        try:
            if source is not None and drafts is not None:
                done = yield from speculative.decode_speculative(
                    rt, answer, split, clock, sampling, tokens, raw, cancel, self.bytes_per_cell, drafts,
                    source, DraftLength(most=self.draft_max, weigh=rules.WEIGH_COSTS, costs=self.decode_costs,
                                        prior=source.prior, guess=source.token_seconds,
                                        judged=self._judged.setdefault(self.speculative, {})),
                )
                reason, hit, n_answer = done.reason, done.hit, done.n_answer
            while drafts is None and n_answer < sampling.max_tokens:
                tok = answer.forced()  # the close of a thinking that spent its budget
                if tok is None:
                    tok = rt.sample(sampler)
                    if answer.grammar is not None and answer.grammar.over_budget:  # this answer ends, in words
                        reason, error = "error", answer.grammar.why_stopped()
                        break
                    if tok in eog:
                        reason = "stop"
                        break
                now = time.perf_counter()
                times.append(now)
                n_answer += 1
                piece = rt.piece(tok)
                out, hit = feed(piece)
                yield from split.token(out, n_answer, now)
                if hit:
                    reason = "stop"
                    break
                if cancel is not None and cancel.is_set():
                    reason = "cancelled"
                    break
                if len(tokens) >= n_ctx or rt.decode_one(tok) != 0:
                    reason = "context_full"
                    break
                tokens.append(tok)
                raw.append(piece)
                if now >= next_snapshot:
                    next_snapshot = now + SNAPSHOT_EVERY_S
                    yield clock.snapshot(len(tokens), n_ctx, self.bytes_per_cell, live=True)
        finally:
            answer.close()
        yield from split.end("" if hit else answer.flush(), n_answer, reason)
        cached_text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(b"".join(raw))
        self._segments.append(_Segment(cached_text, tuple(tokens[len(tokens) - len(raw) :])))
        metrics = clock.snapshot(rt.kv_cells_used(), n_ctx, self.bytes_per_cell, reason)
        finished = split.finished(reason, drafts.on(metrics) if drafts is not None else metrics)
        yield replace(finished, error=error) if error else finished

    def _draft_source(
        self, sampling: SamplingSettings, constraint: Constraint | None, cancel: threading.Event | None,
        thinking: ThinkingLimit | None = None,
    ) -> speculative.DraftSource | None:
        """This answer's drafts, as `speculative` asks; None (and the reason in `speculation_note`)
        when it decodes one token per step."""
        mode = self.speculative
        note = ""
        if mode == "draft" and self.draft_model is None:
            note = "no draft model is loaded: speculative decoding is off"
        elif mode in ("ngram", "draft"):
            note = rules.why_not(self.runtime, sampling, constraint) or rules.why_not_thinking(thinking)
            if not note and self.projector is not None and any(is_image_token(t) for t in self._tokens):
                note = "an image is in the chat: speculative decoding is off (its tokens are no words to draft)"
        self.speculation_note = note
        if note or mode not in ("ngram", "draft"):
            return None
        if self.draft_model is not None and mode == "draft":
            return self.draft_model.begin(self._tokens, cancel)
        return NgramIndex(self._tokens)

    def _sync_segments(self) -> None:
        """After a cancelled prefill the cache holds part of the last segment: forget its text."""
        covered = 0
        for i, seg in enumerate(self._segments):
            if covered + len(seg.tokens) > len(self._tokens):
                self._segments = self._segments[:i]
                self._prepared = None
                return
            covered += len(seg.tokens)
