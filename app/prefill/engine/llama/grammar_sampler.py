"""Sampling inside a grammar while checking only the token the chain picks.

llama.cpp's grammar sampler judges every candidate's text against the grammar: put in front of
the chain it does that for the whole vocabulary at every step, and cut SmolLM2's decode speed
to about 0.6x. llama.cpp's own common sampler (common/sampling.cpp, `common_sampler_sample`
with grammar_first off) keeps the grammar out of the chain: the chain picks a token, the grammar
judges that one token, and only when it is rejected is the grammar applied to the whole
vocabulary and the chain run again. `GrammarSampler` does the same as one `llama_sampler`
(its apply and accept are Python callbacks), so both decode loops sample it with
`llama_sampler_sample` as they sample a plain chain.

A lazy constraint (tool calls the model may or may not make) leaves the text free until its
trigger appears. llama.cpp's lazy grammar cannot be used for that from here: when the token
that completes the trigger carries text the grammar rejects (`>{` where `>\\n` is expected),
its accept throws through the C API and the process aborts. Here the trigger is watched in
Python, and a token that would start the grammar wrongly is set aside and another one sampled.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import llama_cpp
import numpy as np

_NEG_INF = float("-inf")
_ITEM = ctypes.sizeof(llama_cpp.llama_token_data)
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
_SET_ASIDE_TRIES = 8  # tokens set aside at one step before a lazy constraint is given up
# One token's grammar step past this ends its request (the decode loops check `over_budget`): the
# schema's price (engine/prompt/grammar_cost.py) keeps a step to a few ms; this is the backstop.
STEP_BUDGET_S = 0.25
_NAME = ctypes.create_string_buffer(b"prefill-grammar")
_name_fn = ctypes.CFUNCTYPE(ctypes.c_void_p, llama_cpp.llama_sampler_p_ctypes)

Sampler = Any  # a llama_sampler pointer as the bindings hand it out
_DATA_P = ctypes.POINTER(llama_cpp.llama_token_data)


def _pointer(array: np.ndarray[Any, np.dtype[np.void]]) -> Any:
    """A llama_token_data pointer to a numpy record array's memory."""
    return ctypes.cast(array.ctypes.data, _DATA_P)


@dataclass(frozen=True)
class Constraint:
    """What the sampler must keep the answer inside.

    Attributes:
        grammar: GBNF text whose start rule is `root`.
        lazy_trigger: empty: the grammar applies from the first token. Otherwise the text before
            this trigger is free, and the grammar applies from where it first appears: the
            grammar must begin with the trigger's text.
    """

    grammar: str
    lazy_trigger: str = ""


class GrammarSampler:
    """A sampler chain and a grammar as one llama_sampler (`pointer`); `close` frees all of it.

    The chain comes in two parts: `pre` (the ban on end-of-generation, penalties: logits changed,
    none dropped) and `post` (top-k … the pick). The grammar judges the chain's pick; on a
    rejection the original candidates are restored, `pre` applied, the grammar applied and
    `post` run again, as llama.cpp does. When `post` starts with top-k (`keep` tokens; 1 for
    greedy) only the `keep` best allowed tokens can matter, so the grammar judges the best
    candidates first, widening until `keep` of them pass, rather than the whole vocabulary:
    the same pick, at a fraction of the cost.

    `step_s` is what the last token's step took (its apply and accept: the chain, the grammar, any
    resampling); `over_budget` says it took more than STEP_BUDGET_S. llama.cpp's grammar runs in C
    and cannot be stopped midway, so the decode loop can only end the request after such a step.

    When the grammar allows nothing the chain could pick (its end reached while end-of-generation
    is banned) it is released: the rest is sampled by the chain alone, and `released` says so. A
    fault inside a callback (llama.cpp cannot take an exception) releases it too, kept in `fault`.
    """

    def __init__(
        self, vocab: Any, pre: Sampler, post: Sampler, keep: int | None, grammar: Sampler, trigger: str,
        n_vocab: int, byte_tokens: Callable[[], Mapping[int, int]],
    ):
        self.vocab = vocab
        self.pre, self.post, self.keep = pre, post, keep
        self.grammar = grammar  # while a lazy one waits for its trigger: the untouched grammar
        self.trigger = trigger.encode("utf-8")
        self.active = not self.trigger
        self.released = False
        self.fault: BaseException | None = None
        self.resampled = 0  # picks the grammar rejected: sampled again with the grammar first
        self.set_aside = 0  # picks that would have begun a lazy grammar with text it rejects
        self.step_s = 0.0  # the last token's step, apply to accept
        self._began = 0.0
        self._bytes: Mapping[int, int] = byte_tokens() if self.trigger else {}
        self._tail = b""  # the last bytes before the trigger could complete
        self._pieces: dict[int, bytes] = {}
        self._piece_buf = ctypes.create_string_buffer(256)
        self._pending = -1  # the token apply chose; accept finds it already judged
        self._switch: Sampler | None = None  # the grammar fed up to the trigger, for the pending token
        self._scratch = np.zeros(n_vocab, dtype=_TOKEN_DATA)  # the candidates as they came
        self._best = np.zeros(n_vocab, dtype=_TOKEN_DATA)  # the best of them, for the grammar to judge
        self._one = llama_cpp.llama_token_data(0, 0.0, 0.0)
        self._one_arr = llama_cpp.llama_token_data_array(ctypes.pointer(self._one), 1, -1, False)
        self._one_p = ctypes.pointer(self._one_arr)
        # the callbacks live as long as this object: the runtime holds it until the sampler is freed
        self._callbacks = (
            _name_fn(lambda _smpl: ctypes.addressof(_NAME)),
            llama_cpp.llama_sampler_i_accept(self._on_accept),
            llama_cpp.llama_sampler_i_apply(self._on_apply),
            llama_cpp.llama_sampler_i_reset(self._on_reset),
        )
        self._iface = llama_cpp.llama_sampler_i()
        self._iface.name = ctypes.cast(self._callbacks[0], llama_cpp.llama_sampler_i_name)
        self._iface.accept, self._iface.apply, self._iface.reset = self._callbacks[1:]
        # clone and free stay NULL: nothing clones it, and `close` frees what it holds
        self.pointer: Sampler = llama_cpp.llama_sampler_init(ctypes.byref(self._iface), None)

    def starts_with_trigger(self) -> bool:
        """Whether the grammar takes the trigger's own text first (a lazy grammar must)."""
        fed = self._fed(self.trigger)
        if fed is None:
            return False
        llama_cpp.llama_sampler_free(fed)
        return True

    @property
    def over_budget(self) -> bool:
        """Whether the last token's step took more than STEP_BUDGET_S."""
        return self.step_s > STEP_BUDGET_S

    def why_stopped(self) -> str:
        """Why an answer whose step went over the budget ends, in words (both decode loops say it)."""
        return (f"its grammar took {self.step_s * 1000:.0f} ms to judge one token, more than the "
                f"{STEP_BUDGET_S * 1000:.0f} ms allowed: the JSON schema or tools are too costly to "
                "follow (a pattern that can read the same text many ways?)")

    def close(self) -> None:
        llama_cpp.llama_sampler_free(self.pointer)
        for s in (self.pre, self.post, self.grammar, self._switch):
            if s is not None:
                llama_cpp.llama_sampler_free(s)
        self.pre = self.post = self.grammar = self._switch = None

    # --- the callbacks llama_sampler_sample makes ----------------------------------------
    def _on_apply(self, _smpl: Any, cur_p: Any) -> None:
        self._began = time.perf_counter()
        try:
            self._choose(cur_p)
        except BaseException as e:  # noqa: BLE001 - nothing may cross back into C; kept in `fault`
            self._fail(e)
            self._chain(cur_p)  # something must be chosen, or llama.cpp aborts
            cur = cur_p.contents
            self._pending = cur.data[cur.selected].id

    def _on_accept(self, _smpl: Any, token: int) -> None:
        try:
            self._take(token)
        except BaseException as e:  # noqa: BLE001
            self._fail(e)
        llama_cpp.llama_sampler_accept(self.pre, token)
        llama_cpp.llama_sampler_accept(self.post, token)
        if self._began:
            self.step_s, self._began = time.perf_counter() - self._began, 0.0

    def _on_reset(self, _smpl: Any) -> None:
        llama_cpp.llama_sampler_reset(self.pre)
        llama_cpp.llama_sampler_reset(self.post)
        llama_cpp.llama_sampler_reset(self.grammar)  # a grammar resets to its start
        self._drop_switch()
        self.active, self.released, self._tail, self._pending = not self.trigger, False, b"", -1

    # --- choosing -----------------------------------------------------------------------
    def _chain(self, cur_p: Any) -> None:
        llama_cpp.llama_sampler_apply(self.pre, cur_p)
        llama_cpp.llama_sampler_apply(self.post, cur_p)

    def _choose(self, cur_p: Any) -> None:
        if self.released:
            self._chain(cur_p)
            return
        cur = cur_p.contents
        data, size, was_sorted = cur.data, cur.size, cur.sorted
        if size > len(self._scratch):
            self._scratch, self._best = np.zeros(size, _TOKEN_DATA), np.zeros(size, _TOKEN_DATA)
        given = self._view(data, size)
        saved, at, nbytes = self._scratch.ctypes.data, given.ctypes.data, size * _ITEM
        ctypes.memmove(saved, at, nbytes)  # the chain sorts and rewrites the candidates (memmove:
        # a record array's own copy is several times slower)

        def restore() -> None:
            ctypes.memmove(at, saved, nbytes)
            cur.data, cur.size, cur.selected, cur.sorted = data, size, -1, was_sorted

        self._chain(cur_p)
        token = cur.data[cur.selected].id
        if self.active:
            if not self._fits(self.grammar, token):
                self.resampled += 1
                restore()
                token = self._resample(cur_p, given)
            self._pending = token
        else:
            self._choose_waiting(cur_p, token, restore, given)

    def _resample(self, cur_p: Any, given: np.ndarray[Any, np.dtype[np.void]]) -> int:
        """The pick with the grammar applied first (the candidates restored): llama.cpp's resampling."""
        apply = llama_cpp.llama_sampler_apply
        cur = cur_p.contents
        apply(self.pre, cur_p)  # penalties change the order: judge the best after them
        size = cur.size
        moved = ctypes.cast(cur.data, ctypes.c_void_p).value != given.ctypes.data
        if self.keep is None or moved or size != len(given):
            apply(self.grammar, cur_p)  # the whole vocabulary (top-p alone needs all of it)
            if not np.isfinite(self._view(cur.data, size)["logit"]).any():
                return self._release(cur_p, given)
            apply(self.post, cur_p)
            return int(cur.data[cur.selected].id)
        logits = given["logit"]
        best = self._best
        n = min(max(64, 4 * self.keep), size)
        while True:
            picked = np.argpartition(logits, size - n)[size - n:] if n < size else slice(None)
            best[:n] = given[picked]
            cur.data, cur.size, cur.selected, cur.sorted = self._best_ptr(), n, -1, False
            apply(self.grammar, cur_p)
            allowed = int(np.isfinite(best["logit"][:n]).sum())
            if allowed >= self.keep or n == size:
                break
            n = min(n * 8, size)
        if not allowed:
            return self._release(cur_p, given)
        apply(self.post, cur_p)  # on the best candidates: the same pick as on all of them
        return int(cur.data[cur.selected].id)

    def _release(self, cur_p: Any, given: np.ndarray[Any, np.dtype[np.void]]) -> int:
        """Nothing the grammar allows may be picked: let it go, and pick with the chain alone."""
        self.released = True
        cur = cur_p.contents
        ctypes.memmove(given.ctypes.data, self._scratch.ctypes.data, len(given) * _ITEM)
        cur.data, cur.size, cur.selected, cur.sorted = _pointer(given), len(given), -1, False
        self._chain(cur_p)
        return int(cur.data[cur.selected].id)

    def _best_ptr(self) -> Any:
        return _pointer(self._best)

    def _choose_waiting(
        self, cur_p: Any, token: int, restore: Callable[[], None], given: np.ndarray[Any, np.dtype[np.void]],
    ) -> None:
        """Free text; a token that completes the trigger must also fit the grammar with what follows."""
        set_aside: list[int] = []
        for _ in range(_SET_ASIDE_TRIES):
            fits, switch = self._trigger_check(token)
            if fits:
                self._drop_switch()
                self._switch, self._pending = switch, token
                return
            set_aside.append(token)
            self.set_aside += 1
            restore()
            given["logit"][np.isin(given["id"], set_aside)] = _NEG_INF
            self._chain(cur_p)
            cur = cur_p.contents
            token = cur.data[cur.selected].id
        self.released = True  # the model keeps writing the trigger wrongly: leave its text free
        self._pending = token

    def _trigger_check(self, token: int) -> tuple[bool, Sampler | None]:
        """(whether `token` may come next, the grammar fed up to it when it completes the trigger)."""
        window = self._tail + self._piece(token)
        at = window.find(self.trigger)
        if at < 0:
            return True, None
        fed = self._fed(window[at:])
        return fed is not None, fed

    # --- accepting ----------------------------------------------------------------------
    def _take(self, token: int) -> None:
        pending, self._pending = self._pending, -1
        switch, self._switch = self._switch, None
        if self.released:
            pass
        elif self.active:
            if token == pending or self._fits(self.grammar, token):
                llama_cpp.llama_sampler_accept(self.grammar, token)
            else:  # a token apply never chose (accepted from outside) and the grammar rejects
                self.released = True
        else:
            if token != pending:
                if switch is not None:
                    llama_cpp.llama_sampler_free(switch)
                fits, switch = self._trigger_check(token)
                if not fits:
                    self.released = True
                    return
            if switch is not None:
                llama_cpp.llama_sampler_free(self.grammar)
                self.grammar, self.active = switch, True
            else:
                keep = len(self.trigger) - 1
                self._tail = (self._tail + self._piece(token))[-keep:] if keep else b""

    # --- helpers ------------------------------------------------------------------------
    def _fits(self, grammar: Sampler, token: int) -> bool:
        one = self._one
        one.id, one.logit = token, 1.0  # type: ignore[assignment]
        self._one_arr.selected = -1
        llama_cpp.llama_sampler_apply(grammar, self._one_p)
        return bool(one.logit != _NEG_INF)

    def _fed(self, text: bytes) -> Sampler | None:
        """A copy of the waiting grammar that has taken `text` (one single-byte token a byte),
        or None where the grammar rejects it."""
        fed = llama_cpp.llama_sampler_clone(self.grammar)
        for byte in text:
            token = self._bytes.get(byte)
            if token is None or not self._fits(fed, token):
                llama_cpp.llama_sampler_free(fed)
                return None
            llama_cpp.llama_sampler_accept(fed, token)
        return fed

    @staticmethod
    def _view(data: Any, size: int) -> np.ndarray[Any, np.dtype[np.void]]:
        """llama.cpp's candidates as a numpy record array over the same memory (no copy)."""
        addr = ctypes.cast(data, ctypes.c_void_p).value or 0
        raw = memoryview((ctypes.c_char * (size * _ITEM)).from_address(addr)).cast("B")
        return np.frombuffer(raw, dtype=_TOKEN_DATA)

    def _piece(self, token: int) -> bytes:
        """The token's text as the grammar sees it (special tokens written out)."""
        p = self._pieces.get(token)
        if p is None:
            n = llama_cpp.llama_token_to_piece(self.vocab, token, self._piece_buf, 256, 0, True)
            p = self._piece_buf.raw[: max(n, 0)]
            self._pieces[token] = p
        return p

    def _drop_switch(self) -> None:
        if self._switch is not None:
            llama_cpp.llama_sampler_free(self._switch)
            self._switch = None

    def _fail(self, e: BaseException) -> None:
        if self.fault is None:
            self.fault = e
        self.released = True
