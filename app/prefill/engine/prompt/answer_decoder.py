"""One answer's tokens turned into text: the sampler chain, bytes to UTF-8, and the stop strings.

Both decode loops (the chat engine's one sequence, the scheduler's slots) sample and read tokens
through this, so the seed, the sampler's set-up, a character split across tokens and a stop string
split across tokens are handled in one place.
"""

from __future__ import annotations

import codecs
import ctypes
import random
from collections.abc import Sequence

from prefill.engine.llama.grammar_sampler import Constraint, GrammarSampler
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.prompt.stop_strings import StopMatcher
from prefill.engine.prompt.thinking_budget import ThinkingBudget, ThinkingLimit
from prefill.engine.settings import SamplingSettings, ServeSampling


class AnswerDecoder:
    """The sampler for one answer (freed by `close`) and its text so far.

    `feed(piece)` takes a sampled token's bytes and returns the text safe to show and whether a
    stop string ended the answer; text that could begin a stop string is held back until it is
    known not to, and `flush` gives it at the end.

    A `constraint` (a grammar: JSON, tool calls) is applied by the sampler; an unusable one raises
    GrammarError here, before anything is sampled. `grammar` is its state (None without one):
    `released` when it had to let go (its end reached while end-of-generation is banned), `fault`
    if its callback failed.

    A `thinking` limit keeps a reasoning model's thinking to its budget: before sampling, the loop
    asks `forced()` for a token to feed instead (the close of the thinking, once the budget is spent).
    """

    def __init__(
        self, runtime: LlamaRuntime, sampling: SamplingSettings, stops: Sequence[str] = (),
        constraint: Constraint | None = None, thinking: ThinkingLimit | None = None,
    ):
        self.runtime = runtime
        self.seed = sampling.seed if sampling.seed >= 0 else random.getrandbits(32)
        self.sampler: ctypes.c_void_p = runtime.new_sampler(sampling, self.seed, constraint)
        self.grammar: GrammarSampler | None = runtime.constraint_of(self.sampler) if constraint else None
        self._freed = False
        self.max_tokens = sampling.max_tokens
        self.stop_on_eog = not (isinstance(sampling, ServeSampling) and sampling.ignore_eos)
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self._stops = StopMatcher(stops)
        self.budget = ThinkingBudget(thinking, runtime.tokenize) if thinking else None
        self._forced = False  # the token being fed was forced, not sampled

    def forced(self) -> int | None:
        """A token the thinking budget puts in place of sampling (given to the sampler's history as
        if sampled); None: sample."""
        tok = self.budget.forced() if self.budget is not None else None
        self._forced = tok is not None
        if tok is not None:
            self.runtime.accept(self.sampler, tok)
        return tok

    def feed(self, piece: bytes) -> tuple[str, bool]:
        """A token's bytes: (text safe to show, whether a stop string was hit)."""
        text = self._utf8(piece)
        if self.budget is not None:
            self.budget.saw(text, self._forced)
        return self._stops.feed(text)

    @property
    def stopped_by(self) -> str:
        """The stop string that ended the answer ("" when none did)."""
        return self._stops.matched

    def flush(self) -> str:
        """The end of the answer: text held back for a stop string that never came.
        A character cut off by the end is dropped, never shown as U+FFFD."""
        return self._stops.flush()

    def close(self) -> None:
        if not self._freed:
            self._freed = True
            self.runtime.free_sampler(self.sampler)
