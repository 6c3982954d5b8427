"""When an answer may be decoded speculatively, shared by the chat engine (engine/local) and the
server's slots (engine/batch): drafts are checked against the model's likeliest token, so the rules
are those under which that token is the answer plain greedy decoding writes."""

from __future__ import annotations

import os

from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.prompt.grammar import Constraint
from prefill.engine.prompt.thinking_budget import ThinkingLimit
from prefill.engine.settings import SamplingSettings, ServeSampling

SPECULATIVE_MODES = ("off", "ngram", "draft")  # "draft": a draft model (ChatEngine.use_draft_model)
# Drafts are checked only where they pay at the measured costs (DraftLength.cost). The test suite sets
# PREFILL_DRAFT_ALWAYS=1 so drafts are checked whatever the timing: its draft counts must not depend
# on how busy the machine is.
WEIGH_COSTS = os.environ.get("PREFILL_DRAFT_ALWAYS", "") != "1"


def why_not(runtime: LlamaRuntime, sampling: SamplingSettings, constraint: Constraint | None) -> str:
    """Why speculation cannot run for this answer; "" when it can."""
    if sampling.temperature > 0:
        return ("speculative decoding runs with greedy sampling only (temperature 0): drafts are checked "
                "against the model's likeliest token, so a sampled answer is decoded one token per step")
    if sampling.repeat_penalty != 1.0 or (isinstance(sampling, ServeSampling) and (
            sampling.frequency_penalty or sampling.presence_penalty or sampling.ignore_eos)):
        return "speculative decoding runs without penalties only (repeat penalty 1)"
    if not runtime.flash_attn_on:  # as llama.cpp resolved it ("auto": where the backend supports it)
        return ("speculative decoding needs flash attention on: without it a batched decode's logits "
                "differ from a one-token decode's and the answer could drift from plain greedy decoding")
    if constraint is not None:
        return "speculative decoding is off for an answer held to a grammar"
    if runtime.recurrent or runtime.sliding_window > 0:
        return "speculative decoding is off for a model whose cache cannot drop a rejected draft"
    if runtime.n_batch < 2:
        return "speculative decoding needs a batch of at least 2 tokens"
    return ""


def why_not_thinking(thinking: ThinkingLimit | None) -> str:
    """Why an answer with a thinking budget is not decoded speculatively; "" without one."""
    if thinking is None:
        return ""
    return ("speculative decoding is off for an answer with a thinking budget "
            "(the close of the thinking is fed token by token)")
