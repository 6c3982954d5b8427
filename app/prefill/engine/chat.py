"""Stream a chat through llama.cpp, reusing the KV cache across turns.

The engine keeps the tokens that are in the KV cache, and the text they came
from as segments (each prompt remainder, each answer). A new prompt reuses whole
segments whose text it starts with, so an answer's own generated tokens are
kept (re-tokenising its text may give other tokens), then tokenises only the
rest. Only what follows the longest common prefix with the cache is evaluated.
"""

from __future__ import annotations

import codecs
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from prefill.engine.backend import BackendReport, backend_report, resolve_gpu_layers
from prefill.engine.errors import EngineBusy, EngineError, TemplateError
from prefill.engine.events import Finished, MetricsSnapshot, PrefillDone, Token
from prefill.engine.gguf_guard import read_model_header
from prefill.engine.gguf_header import GGUFHeader
from prefill.engine.kv import kv_bytes_per_cell
from prefill.engine.llama_runtime import LlamaRuntime
from prefill.engine.metrics import RequestClock
from prefill.engine.overflow import Fitted, fit_messages
from prefill.engine.settings import LoadSettings, OverflowSettings, SamplingSettings
from prefill.engine.stop_strings import StopMatcher
from prefill.engine.template import ChatTemplate, Message

Event = PrefillDone | Token | MetricsSnapshot | Finished
SNAPSHOT_EVERY_S = 0.25


@dataclass(frozen=True)
class _Segment:
    text: str
    tokens: tuple[int, ...]


class ChatEngine:
    """A loaded model with its KV cache. One thread uses it at a time."""

    def __init__(self, path: Path, header: GGUFHeader, runtime: LlamaRuntime, backend: BackendReport):
        self.path = path
        self.header = header
        self.runtime = runtime
        self.backend = backend
        self.settings = runtime.settings
        self.bytes_per_cell = kv_bytes_per_cell(header, self.settings.kv_type, self.settings.kv_type)
        bos = runtime.token_text(runtime.bos_id) if runtime.bos_id >= 0 else ""
        eos = runtime.token_text(runtime.eos_id) if runtime.eos_id >= 0 else ""
        self.template = ChatTemplate(header.chat_template, bos_token=bos, eos_token=eos)
        self._tokens: list[int] = []  # exactly what is in the KV cache, in order
        self._segments: list[_Segment] = []
        # The last _prepare answer; it depends on the segments, so it is dropped when they change.
        self._prepared: tuple[tuple[Message, ...], tuple[str, list[int], int, str]] | None = None
        self._busy = threading.Lock()

    @classmethod
    def load(
        cls, path: str | Path, settings: LoadSettings | None = None,
        progress: Callable[[float], bool] | None = None,
    ) -> ChatEngine:
        """Check the file, then load it with llama.cpp; `progress` gets 0..1 and may return False to stop.

        Raises:
            ModelLoadError: missing, empty, truncated or non-GGUF file, or llama.cpp refused it.
        """
        settings = settings or LoadSettings()
        p = Path(path)
        header = read_model_header(p)
        layers = resolve_gpu_layers(settings.n_gpu_layers, header, settings)
        runtime = LlamaRuntime(p, settings, layers, header.n_layer, progress)
        return cls(p, header, runtime, backend_report(settings.n_gpu_layers, runtime.offload, layers))

    def close(self) -> None:
        self.runtime.close()

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
        self.runtime.kv_truncate(0)
        self._tokens.clear()
        self._segments.clear()
        self._prepared = None

    # --- prompts --------------------------------------------------------------------
    def render(self, messages: Sequence[Message]) -> str:
        text = self.template.render(messages, add_generation_prompt=True)
        if self.runtime.add_bos and self.template.bos_token and text.startswith(self.template.bos_token):
            text = text[len(self.template.bos_token) :]  # llama.cpp adds BOS itself
        return text

    def _prompt(self, text: str) -> tuple[list[int], int, str]:
        """Tokens for `text`, the number of leading segments reused, and the remainder."""
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
            tokens.extend(self.runtime.tokenize(rest, add_special=(pos == 0 and self.runtime.add_bos)))
        return tokens, used, rest

    def _prepare(self, messages: Sequence[Message]) -> tuple[str, list[int], int, str]:
        """Text, tokens, segments reused and remainder for `messages`; the last answer is kept,
        so fitting a request and then sending it renders and tokenises it once."""
        key = tuple(messages)
        if self._prepared is not None and self._prepared[0] == key:
            return self._prepared[1]
        text = self.render(messages)
        result = (text, *self._prompt(text))
        self._prepared = (key, result)
        return result

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """How many tokens the prompt for `messages` takes."""
        return len(self._prepare(messages)[1])

    def fit(self, messages: Sequence[Message], sampling: SamplingSettings, overflow: OverflowSettings) -> Fitted:
        reserve = overflow.reserve or min(sampling.max_tokens, self.n_ctx // 4)
        return fit_messages(messages, self.count_tokens, self.n_ctx, reserve, overflow.policy)

    # --- streaming --------------------------------------------------------------------
    def stream(
        self,
        messages: Sequence[Message],
        sampling: SamplingSettings | None = None,
        overflow: OverflowSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[Event]:
        """Prefill the prompt, then decode; yields PrefillDone, Token…, MetricsSnapshot…, Finished.

        Raises:
            ContextOverflow: the prompt does not fit and the policy is `stop` (or nothing fits).
            TemplateError: the chat template failed or tried to leave its sandbox.
            EngineBusy: another request is running.
        """
        if not self._busy.acquire(blocking=False):
            raise EngineBusy("the engine is still answering another request")
        try:
            yield from self._stream(messages, sampling or SamplingSettings(), overflow or OverflowSettings(), cancel)
        finally:
            self._busy.release()

    def _stream(
        self,
        messages: Sequence[Message],
        sampling: SamplingSettings,
        overflow: OverflowSettings,
        cancel: threading.Event | None,
    ) -> Iterator[Event]:
        clock = RequestClock()
        if not messages or messages[-1].role != "user":
            raise TemplateError("a chat request must end with a user message")
        fitted = self.fit(messages, sampling, overflow)
        _text, prompt, used, rest = self._prepare(fitted.messages)
        rt = self.runtime
        if not prompt or not _text.strip():  # nothing to decode: sampling would have no logits
            raise TemplateError("the chat template rendered an empty prompt: there is nothing to send")
        if len(prompt) >= self.n_ctx:
            raise EngineError("the prompt fills the whole context")

        # Longest common prefix with the cache; at least one token is evaluated for its logits.
        keep = 0
        limit = min(len(prompt), len(self._tokens))
        while keep < limit and prompt[keep] == self._tokens[keep]:
            keep += 1
        keep = min(keep, len(prompt) - 1)
        rt.kv_truncate(keep)
        del self._tokens[keep:]
        self._prepared = None
        self._segments = self._segments[:used]
        reused = sum(len(s.tokens) for s in self._segments)
        self._segments.append(_Segment(rest, tuple(prompt[reused:])))

        rt.perf_reset()
        clock.t_prefill_start = time.perf_counter()
        todo = prompt[keep:]
        for i in range(0, len(todo), rt.n_batch):  # n_batch pieces: llama.cpp aborts on more
            if cancel is not None and cancel.is_set():
                self._sync_segments()
                snap = clock.snapshot(rt.kv_cells_used(), self.n_ctx, self.bytes_per_cell, "cancelled")
                yield Finished("cancelled", "", snap)
                return
            chunk = todo[i : i + rt.n_batch]
            try:
                rt.decode(chunk)
            except EngineError:
                self.reset_cache()
                raise
            self._tokens.extend(chunk)
        clock.t_prefill_end = time.perf_counter()
        perf = rt.perf()
        evaluated = len(todo)
        prefill_ms = perf.t_p_eval_ms if perf.n_p_eval == evaluated and perf.t_p_eval_ms > 0 else (
            (clock.t_prefill_end - clock.t_prefill_start) * 1000
        )
        clock.base = MetricsSnapshot(
            prompt_tokens=len(prompt),
            cached_tokens=keep,
            evaluated_tokens=evaluated,
            prefill_ms=prefill_ms,
            prefill_tps=evaluated / prefill_ms * 1000 if prefill_ms > 0 else 0.0,
        )
        yield PrefillDone(len(prompt), keep, evaluated, prefill_ms, fitted.dropped, fitted.note)
        yield from self._decode(sampling, cancel, clock)

    def _decode(self, sampling: SamplingSettings, cancel: threading.Event | None, clock: RequestClock) -> Iterator[Event]:
        rt = self.runtime
        seed = sampling.seed if sampling.seed >= 0 else random.getrandbits(32)
        sampler = rt.new_sampler(sampling, seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = StopMatcher(sampling.stop)
        n_answer = 0
        pieces: list[str] = []  # everything emitted
        raw: list[bytes] = []  # the bytes of the answer tokens that are in the cache
        eog, n_ctx, times, tokens = rt.eog, self.n_ctx, clock.token_times, self._tokens
        next_snapshot = time.perf_counter() + SNAPSHOT_EVERY_S
        reason = "length"
        hit = False
        try:
            while n_answer < sampling.max_tokens:
                tok = rt.sample(sampler)
                if tok in eog:
                    reason = "stop"
                    break
                now = time.perf_counter()
                times.append(now)
                n_answer += 1
                piece = rt.piece(tok)
                out, hit = stops.feed(decoder.decode(piece))
                if out:
                    pieces.append(out)
                    yield Token(out, n_answer)
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
            rt.free_sampler(sampler)
        # A character cut off by the end of the answer is dropped, never shown as U+FFFD.
        tail = "" if hit else stops.flush()
        if tail:
            pieces.append(tail)
            yield Token(tail, n_answer)
        cached_text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(b"".join(raw))
        self._segments.append(_Segment(cached_text, tuple(tokens[len(tokens) - len(raw) :])))
        metrics = clock.snapshot(rt.kv_cells_used(), n_ctx, self.bytes_per_cell, reason)
        yield Finished(reason, "".join(pieces), metrics)

    def _sync_segments(self) -> None:
        """After a cancelled prefill the cache holds part of the last segment: forget its text."""
        covered = 0
        for i, seg in enumerate(self._segments):
            if covered + len(seg.tokens) > len(self._tokens):
                self._segments = self._segments[:i]
                self._prepared = None
                return
            covered += len(seg.tokens)

