"""A schema's patterns priced before they run: refused in words where llama.cpp would take seconds a
token, followed where they are cheap; recursive references followed or refused in words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from prefill.bench.grammar_steps import grammar_step_times
from prefill.engine.errors import GrammarError
from prefill.engine.llama.grammar_sampler import STEP_BUDGET_S
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.prompt.grammar import schema_grammar, tool_call_grammar
from prefill.engine.prompt.grammar_cost import MAX_POSITIONS, MAX_STEPS, price_pattern
from prefill.engine.request import Tool
from prefill.engine.settings import LoadSettings, ServeSampling
from tests.engine.prompt.test_grammar import accepts


@pytest.fixture(scope="module")
def rt(smollm2: Path) -> Iterator[LlamaRuntime]:
    runtime = LlamaRuntime(smollm2, LoadSettings(n_ctx=256, n_gpu_layers="none"), 0, 1)
    yield runtime
    runtime.close()


def string(pattern: str) -> str:
    return json.dumps({"type": "string", "pattern": pattern})


# --- patterns that read the same text many ways -------------------------------------------------
@pytest.mark.parametrize("pattern", [
    "^((a?){20}){20}$",  # the report's 247-byte body: over a minute a token
    "^((a?){10}){10}$",  # 4.6 s
    "^((a?){5}){5}$",
    "^(a?){40}$",
    "^(a+)+$",
    "^(a|a)*$",
    "^(\\w+\\s?)*$",
    "^((x|y?){9}){9}$",
])
def test_a_pattern_that_reads_text_many_ways_is_refused_in_words(pattern: str) -> None:
    with pytest.raises(GrammarError, match="many ways") as e:
        schema_grammar(string(pattern))
    assert pattern in str(e.value)


def test_nested_counts_multiply() -> None:
    assert price_pattern("^([0-9]{100}){20}$").positions == MAX_POSITIONS  # each count under 100 ...
    with pytest.raises(GrammarError, match=f"more than {MAX_POSITIONS} characters"):
        schema_grammar(string("^([0-9]{100}){21}$"))  # ... but 2100 in all


def test_the_refusal_comes_before_any_grammar_is_made(rt: LlamaRuntime) -> None:
    """Inside a tool's parameters too: the same door."""
    costly = {"type": "string", "pattern": "^((a?){9}){9}$"}
    tool = Tool("t", "", json.dumps({"type": "object", "properties": {"s": costly}}))
    with pytest.raises(GrammarError, match="many ways"):
        tool_call_grammar([tool], ("", ""), several=False)


@pytest.mark.parametrize("pattern, text, wrong", [
    ("^((ab){5}){5}$", "ab" * 25, "ab" * 24),
    ("^([0-9]{5}){5}$", "1234567890" * 2 + "12345", "12345"),
    ("^([a-z]{2,5}-){1,5}[a-z]{2,5}$", "ab-cde-fghij", "ab--cd"),
    ("^[a-z0-9._%+-]+@[a-z0-9.-]+[.][a-z]{2,}$", "jo.smith@example.org", "jo@example"),
    ("^(red|green|blue)( (red|green|blue))*$", "red blue green", "red  blue"),
    ("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "2026-12-04", "2026-12-4"),
    ("^(a?){8}$", "aaaaa", "aaaaaaaaa"),  # a little ambiguity is cheap
    ("^.*a.*b.*$", "xxaxxbxx", "xxbxxaxx"),
])
def test_reasonable_patterns_are_followed(rt: LlamaRuntime, pattern: str, text: str, wrong: str) -> None:
    assert price_pattern(pattern).steps <= MAX_STEPS
    grammar = schema_grammar(string(pattern))
    assert accepts(rt, grammar, json.dumps(text)) and not accepts(rt, grammar, json.dumps(wrong))


# --- recursive references -----------------------------------------------------------------------
NODE = {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
        "required": ["v"], "additionalProperties": False}
LINKED = {"$defs": {"node": NODE}, "$ref": "#/$defs/node"}
TREE = {"type": "object", "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name"], "additionalProperties": False}


def test_a_recursive_reference_is_followed(rt: LlamaRuntime) -> None:
    linked = schema_grammar(json.dumps(LINKED))
    assert accepts(rt, linked, json.dumps({"v": 1, "next": {"v": 2, "next": {"v": 3}}}))
    assert not accepts(rt, linked, json.dumps({"v": 1, "next": {"w": 2}}))
    tree = schema_grammar(json.dumps(TREE))
    assert accepts(rt, tree, json.dumps({"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}, {"name": "d"}]}))
    assert not accepts(rt, tree, json.dumps({"name": "a", "kids": [{"kids": []}]}))


@pytest.mark.parametrize("schema, loop", [
    ({"anyOf": [{"$ref": "#"}, {"type": "string"}]}, "# -> #"),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
      "$ref": "#/$defs/a"}, "#/$defs/a -> #/$defs/b -> #/$defs/a"),
])
def test_a_value_that_must_begin_with_itself_is_refused_naming_the_loop(schema: dict[str, Any], loop: str) -> None:
    with pytest.raises(GrammarError, match="refers to itself") as e:
        schema_grammar(json.dumps(schema))
    assert loop in str(e.value)


# --- the fuzz: whatever is let through is cheap to follow -----------------------------------------
def _quantifier() -> st.SearchStrategy[str]:
    counts = st.tuples(st.integers(0, 8), st.integers(0, 4)).map(lambda t: f"{{{t[0]},{t[0] + t[1]}}}")
    return st.sampled_from(["", "?", "*", "+"]) | st.integers(1, 8).map(lambda n: f"{{{n}}}") | counts


_atoms = st.sampled_from(["a", "b", "ab", "[ab]", ".", "[0-9]", "a?", "x"])


def _patterns() -> st.SearchStrategy[str]:
    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.tuples(inner, _quantifier()).map(lambda t: f"({t[0]}){t[1]}")
        seq = st.lists(inner, min_size=2, max_size=3).map("".join)
        alt = st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")")
        return group | seq | alt
    return st.recursive(_atoms, grow, max_leaves=6).map(lambda p: f"^{p}$")


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    text = _patterns().map(lambda p: {"type": "string", "pattern": p})
    counted = st.tuples(text, st.integers(0, 3), st.integers(0, 3)).map(
        lambda t: {"type": "array", "items": t[0], "minItems": t[1], "maxItems": t[1] + t[2]})
    either = st.lists(text, min_size=2, max_size=3).map(lambda xs: {"anyOf": xs})
    return text | counted | either


# no shrinking: every try of a slow grammar is slow
@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(_schemas(), st.integers(0, 3))
@example({"type": "string", "pattern": "^((a?){7}){7}$"}, 1)  # ~1.6 s a token on SmolLM2 without its price
@example({"type": "array", "items": {"type": "string", "pattern": "^(a?){40}$"}, "maxItems": 2}, 2)
def test_every_schema_let_through_costs_little_a_token(rt: LlamaRuntime, schema: dict[str, Any], seed: int) -> None:
    try:
        grammar = schema_grammar(json.dumps(schema))
    except GrammarError:
        return  # refused in words: nothing runs
    # top-k off: a rejected pick is sampled again with the grammar judging the whole vocabulary
    sampling = ServeSampling(temperature=1.0, top_k=0, max_tokens=4)
    times = grammar_step_times(rt, grammar, 4, seed, sampling)
    assert max(times) < STEP_BUDGET_S, (schema, times)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("ab.()[]{}|*+?^$\\-,0123456789dws")), max_size=30))
def test_any_pattern_is_priced_or_refused_in_words(pattern: str) -> None:
    """Whatever a client writes, the reader ends with a price or a GrammarError (no other fault, no hang)."""
    try:
        price = price_pattern(pattern)
    except GrammarError as e:
        assert str(e).startswith("the pattern /")
    else:
        assert price.positions <= MAX_POSITIONS and price.steps <= MAX_STEPS
