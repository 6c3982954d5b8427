"""Grammars for JSON and tool calls, applied by the sampler, on the real SmolLM2 and llama.cpp."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import pytest

from prefill.engine.errors import GrammarError
from prefill.engine.llama.runtime import LlamaRuntime
from prefill.engine.message import Message
from prefill.engine.prompt.answer_decoder import AnswerDecoder
from prefill.engine.prompt.grammar import (
    GENERIC_WRAP,
    Constraint,
    constraint_for,
    json_object_grammar,
    schema_grammar,
    tool_call_grammar,
)
from prefill.engine.request import ChatRequest, ResponseFormat, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings, ServeSampling

GREEDY = SamplingSettings(temperature=0.0, max_tokens=120)
TRIP = json.dumps({
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"],
    "additionalProperties": False,
})
WEATHER = Tool("get_weather", "The weather in a city", json.dumps({
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}))
ADD = Tool("add", "Add two integers", json.dumps({
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}))


@pytest.fixture(scope="module")
def rt(smollm2: Path) -> Iterator[LlamaRuntime]:
    runtime = LlamaRuntime(smollm2, LoadSettings(n_ctx=1024, n_gpu_layers="none"), 0, 30)
    yield runtime
    runtime.close()


def generate(rt: LlamaRuntime, user: str, constraint: Constraint | None,
             sampling: SamplingSettings = GREEDY) -> tuple[str, str, AnswerDecoder]:
    """SmolLM2's answer to `user` (ChatML), sampled as the decode loops do: (text, reason, decoder)."""
    rt.kv_truncate(0)
    rt.decode(rt.tokenize(f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n", add_special=True))
    answer = AnswerDecoder(rt, sampling, (), constraint)
    text, reason = "", "length"
    try:
        for _ in range(sampling.max_tokens):
            tok = rt.sample(answer.sampler)
            if answer.stop_on_eog and tok in rt.eog:
                reason = "stop"
                break
            text += answer.feed(rt.piece(tok))[0]
            assert rt.decode_one(tok) == 0
        text += answer.flush()
    finally:
        answer.close()
    assert rt.constraint_of(answer.sampler) is None  # freed with the rest
    return text, reason, answer


def fits(value: Any, schema: dict[str, Any]) -> bool:
    """The few JSON-schema rules these tests use: type, properties, required,
    additionalProperties: false, enum, minimum, maximum."""
    if "enum" in schema and value not in schema["enum"]:
        return False
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict) or not set(schema.get("required", ())) <= value.keys():
            return False
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False and not value.keys() <= props.keys():
            return False
        return all(fits(v, props[k]) for k, v in value.items() if k in props)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)
                and value >= schema.get("minimum", value) and value <= schema.get("maximum", value))
    if kind == "string":
        return isinstance(value, str)
    return True


def accepts(rt: LlamaRuntime, grammar: str, text: str) -> bool:
    """Whether llama.cpp's grammar takes `text` whole (fed byte by byte) and may then end."""
    g = llama_cpp.llama_sampler_init_grammar(rt.vocab, grammar.encode(), b"root")
    assert g, "llama.cpp rejected the grammar"
    one = llama_cpp.llama_token_data(0, 1.0, 0.0)
    arr = llama_cpp.llama_token_data_array(ctypes.pointer(one), 1, -1, False)

    def allowed(token: int) -> bool:
        one.id, one.logit = token, 1.0
        llama_cpp.llama_sampler_apply(g, ctypes.byref(arr))
        return bool(one.logit != float("-inf"))

    try:
        for byte in text.encode():
            token = rt.byte_tokens[byte]
            if not allowed(token):
                return False
            llama_cpp.llama_sampler_accept(g, token)
        return allowed(rt.eos_id)
    finally:
        llama_cpp.llama_sampler_free(g)


# --- what the model writes under a grammar ---------------------------------------------------
def test_json_object_output_is_a_json_object(rt: LlamaRuntime) -> None:
    text, reason, answer = generate(rt, "Describe Paris as a JSON object.", Constraint(json_object_grammar()))
    assert reason == "stop"  # the grammar complete, end-of-generation was allowed
    assert isinstance(json.loads(text), dict)
    assert answer.grammar is not None and not answer.grammar.released and answer.grammar.fault is None


def test_schema_output_validates(rt: LlamaRuntime) -> None:
    text, reason, _ = generate(rt, "Plan a trip to Paris: the city and the number of days, as JSON.",
                               Constraint(schema_grammar(TRIP)))
    assert reason == "stop"
    assert fits(json.loads(text), json.loads(TRIP)), text


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_schema_output_validates_when_sampling(rt: LlamaRuntime, seed: int) -> None:
    """Top-k, top-p, min-p and temperature: a rejected pick is sampled again among the best allowed."""
    sampling = SamplingSettings(temperature=1.0, seed=seed, max_tokens=120)
    text, reason, answer = generate(rt, "Plan a trip to Paris as JSON.", Constraint(schema_grammar(TRIP)), sampling)
    assert reason == "stop"
    assert fits(json.loads(text), json.loads(TRIP)), text


def test_without_a_constraint_the_chain_is_plain(rt: LlamaRuntime) -> None:
    text, reason, answer = generate(rt, "What is the capital of France?", None)
    assert answer.grammar is None and reason == "stop" and "Paris" in text


def test_a_tool_call_names_one_tool_and_fits_its_arguments(rt: LlamaRuntime) -> None:
    tools = {t.name: json.loads(t.parameters) for t in (WEATHER, ADD)}
    for question in ("What is the weather in Paris?", "What is 2 plus 3?"):
        text, reason, _ = generate(rt, question, Constraint(tool_call_grammar([WEATHER, ADD], GENERIC_WRAP, False)))
        assert reason == "stop"
        assert text.startswith(GENERIC_WRAP[0]) and text.endswith(GENERIC_WRAP[1]), text
        call = json.loads(text[len(GENERIC_WRAP[0]):-len(GENERIC_WRAP[1])])
        assert call.keys() == {"name", "arguments"} and call["name"] in tools
        assert fits(call["arguments"], tools[call["name"]]), text


def test_a_lazy_grammar_leaves_the_text_before_its_trigger_free(rt: LlamaRuntime) -> None:
    free, _, _ = generate(rt, "What is the capital of France?", None)
    assert free == "The capital of France is Paris."
    text, reason, answer = generate(rt, "What is the capital of France?",
                                    Constraint('root ::= "capital of France is Rome."', "capital"))
    assert (text, reason) == ("The capital of France is Rome.", "stop")
    assert answer.grammar is not None and answer.grammar.active


def test_a_token_that_would_begin_the_grammar_wrongly_is_set_aside(rt: LlamaRuntime) -> None:
    """" capital" completes the trigger "cap" but carries "ital", which the grammar rejects: llama.cpp's
    own lazy grammar would throw through its C API (the process aborts); here another token is picked."""
    text, reason, answer = generate(rt, "What is the capital of France?",
                                    Constraint('root ::= "cape of France."', "cap"))
    assert answer.grammar is not None and answer.grammar.set_aside >= 1 and answer.grammar.fault is None
    assert "capital" not in text and reason == "stop"
    assert "cap" not in text or text[text.index("cap"):] == "cape of France."


def test_a_lazy_grammar_never_triggered_changes_nothing(rt: LlamaRuntime) -> None:
    free, _, _ = generate(rt, "What is the capital of France?", None)
    lazy, _, answer = generate(rt, "What is the capital of France?",
                               Constraint(tool_call_grammar([ADD], GENERIC_WRAP, True), "<tool_call>"))
    assert lazy == free
    assert answer.grammar is not None and not answer.grammar.active and answer.grammar.resampled == 0


def test_tool_choice_auto_constrains_a_call_the_model_starts(rt: LlamaRuntime) -> None:
    request = ChatRequest((Message("user", "hi"),), tools=(WEATHER, ADD), tool_choice="auto")
    constraint = constraint_for(request, None, "")
    assert constraint is not None and constraint.lazy_trigger == "<tool_call>"
    # SmolLM2 echoes this, opener and all, then writes the call (greedy; what it writes for a prompt
    # moves with llama.cpp's CPU kernels: "Repeat exactly this text: <tool_call>" stopped working)
    text, reason, answer = generate(rt, "Echo: add <tool_call>", constraint)
    before, marker, rest = text.partition("<tool_call>")
    assert marker and before.strip()  # free words, then a call
    assert reason == "stop" and answer.grammar is not None and answer.grammar.active
    call = json.loads(rest.removeprefix("\n").removesuffix(GENERIC_WRAP[1]))
    assert call["name"] in {"get_weather", "add"}


def test_with_end_of_generation_banned_the_grammar_lets_go_at_its_end(rt: LlamaRuntime) -> None:
    sampling = ServeSampling(temperature=0.0, max_tokens=60, ignore_eos=True)
    text, reason, answer = generate(rt, "Describe Paris as a JSON object.", Constraint(json_object_grammar()),
                                    sampling)
    assert reason == "length" and answer.grammar is not None and answer.grammar.released
    obj, end = json.JSONDecoder().raw_decode(text)
    assert isinstance(obj, dict) and end < len(text)  # then free text, and no crash


# --- the grammars themselves -----------------------------------------------------------------
@pytest.mark.parametrize("low, high", [(1, None), (-5, 123), (None, -7), (0, 0), (37, 1050), (-100, -20)])
def test_integer_bounds_admit_exactly_the_range(rt: LlamaRuntime, low: int | None, high: int | None) -> None:
    schema: dict[str, Any] = {"type": "integer"}
    if low is not None:
        schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    grammar = schema_grammar(json.dumps(schema))
    for n in range(-130, 1100):
        assert accepts(rt, grammar, str(n)) == ((low is None or n >= low) and (high is None or n <= high)), n
    assert not accepts(rt, grammar, "007")


def test_exclusive_bounds(rt: LlamaRuntime) -> None:
    grammar = schema_grammar('{"type": "integer", "exclusiveMinimum": 2, "exclusiveMaximum": 5.5}')
    assert [n for n in range(-3, 9) if accepts(rt, grammar, str(n))] == [3, 4, 5]


def test_strings_are_json_strings(rt: LlamaRuntime) -> None:
    grammar = schema_grammar('{"type": "string"}')
    assert accepts(rt, grammar, '"a \\"quoted\\" \\n line"')
    assert not accepts(rt, grammar, '"a raw\nnewline"')  # json.loads would refuse it


def test_lengths_and_counts(rt: LlamaRuntime) -> None:
    short = schema_grammar('{"type": "string", "minLength": 2, "maxLength": 4}')
    assert [n for n in range(7) if accepts(rt, short, '"' + "x" * n + '"')] == [2, 3, 4]
    few = schema_grammar('{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}')
    assert [n for n in range(6) if accepts(rt, few, json.dumps(list(range(n))))] == [1, 2, 3]
    for no_items in ('{"type": "array", "items": {"type": "integer"}, "maxItems": 0}', '{"items": false}'):
        assert accepts(rt, schema_grammar(no_items), "[]") and not accepts(rt, schema_grammar(no_items), "[1]")
    absent = schema_grammar('{"type": "object", "properties": {"a": false, "b": {"type": "integer"}}}')
    assert accepts(rt, absent, '{"b": 1}') and not accepts(rt, absent, '{"a": 1}')
    long = schema_grammar('{"type": "string", "maxLength": 2000}')  # a repetition, not 2000 nested groups
    assert accepts(rt, long, '"' + "y" * 2000 + '"') and not accepts(rt, long, '"' + "y" * 2001 + '"')


def test_two_tools_with_the_same_ref_name_keep_their_own(rt: LlamaRuntime) -> None:
    a = Tool("a", "", '{"type": "object", "properties": {"u": {"$ref": "#/$defs/Unit"}}, "required": ["u"],'
                      ' "$defs": {"Unit": {"enum": ["c", "f"]}}}')
    b = Tool("b", "", '{"type": "object", "properties": {"u": {"$ref": "#/$defs/Unit"}}, "required": ["u"],'
                      ' "$defs": {"Unit": {"type": "integer", "minimum": 0}}}')
    grammar = tool_call_grammar([a, b], ("", ""), several=False)
    assert accepts(rt, grammar, '{"name": "a", "arguments": {"u": "c"}}')
    assert accepts(rt, grammar, '{"name": "b", "arguments": {"u": 7}}')
    assert not accepts(rt, grammar, '{"name": "a", "arguments": {"u": 7}}')  # name and arguments tied
    assert not accepts(rt, grammar, '{"name": "b", "arguments": {"u": "c"}}')


def test_several_calls_or_one(rt: LlamaRuntime) -> None:
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert accepts(rt, tool_call_grammar([ADD], GENERIC_WRAP, several=True), call + "\n" + call)
    assert not accepts(rt, tool_call_grammar([ADD], GENERIC_WRAP, several=False), call + "\n" + call)
    assert accepts(rt, tool_call_grammar([ADD], GENERIC_WRAP, several=False), call)


def test_wrap_text_is_escaped(rt: LlamaRuntime) -> None:
    wrap = ('[CALL "x\\y"]\t', "\t[END \\]")  # the markers' own text, escaped; the blank space around them free
    grammar = tool_call_grammar([ADD], wrap, several=False)
    call = '{"name": "add", "arguments": {"a": 1, "b": 2}}'
    assert accepts(rt, grammar, wrap[0] + call + wrap[1])
    assert accepts(rt, grammar, wrap[0].strip() + call + wrap[1].strip())


@pytest.mark.parametrize("schema, words", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"type": "integer", "minimum": 5, "maximum": 1}', "no integer lies between"),
    ('{"$ref": "https://example.com/schema.json"}', "cannot be made into a grammar"),
    ('{"$ref": "#/$defs/Missing"}', "points at nothing"),
    ('{"type": "object", "properties": {"a": false}, "required": ["a"]}', "schema of false"),
    ('{"type": "array", "items": {"not": {}, "anyOf": false}}', "cannot be made into a grammar"),
    ('{"type": "array", "prefixItems": false}', "admits no value"),
    ('{"type": "frobnicate"}', "cannot be made into a grammar"),
    ('{"type": "array", "items": {"type": "string"}, "minItems": 100000}', "more than the 2000"),
    ('{"type": "string", "maxLength": 2001}', "more than the 2000"),
    ('{"type": "string", "minLength": 3, "maxLength": 2}', "more than maxLength"),
    ('{"type": "string", "maxLength": -1}', "whole number"),
    ('{"type": "string", "pattern": "^a{5000}$"}', "repetition"),
    ('{"type": "object", "properties": {"a": {"enum": ["' + "x" * 300_000 + '"]}}}', "allowed"),
    ("[" * 5000 + "]" * 5000, "nests too deeply"),
])
def test_a_bad_schema_is_a_worded_error(schema: str, words: str) -> None:
    with pytest.raises(GrammarError, match=words):
        schema_grammar(schema)


def test_a_grammar_llama_cpp_rejects_is_an_error_before_decoding(rt: LlamaRuntime) -> None:
    for bad in ("root ::= undefined-rule", "root ::= (", "   "):
        with pytest.raises(GrammarError):
            AnswerDecoder(rt, GREEDY, (), Constraint(bad))
    with pytest.raises(GrammarError, match="does not begin with its trigger"):
        AnswerDecoder(rt, GREEDY, (), Constraint('root ::= "{}"', lazy_trigger="<tool_call>"))


# --- which grammar a request needs -----------------------------------------------------------
def request(**kw: Any) -> ChatRequest:
    return ChatRequest((Message("user", "hi"),), **kw)


def test_constraint_for_each_kind_of_request() -> None:
    assert constraint_for(request(), None, "") is None
    assert constraint_for(request(tools=(ADD,), tool_choice="none"), None, "") is None
    obj = constraint_for(request(response_format=ResponseFormat("json_object")), None, "")
    assert obj == Constraint(json_object_grammar())
    schema = constraint_for(request(response_format=ResponseFormat("json_schema", TRIP)), None, "")
    assert schema == Constraint(schema_grammar(TRIP))
    required = constraint_for(request(tools=(WEATHER, ADD), tool_choice="required"), None, "")
    assert required == Constraint(tool_call_grammar([WEATHER, ADD], GENERIC_WRAP, several=True))
    named = constraint_for(request(tools=(WEATHER, ADD), tool_choice="add"), ("[C]", "[/C]"), "")
    assert named == Constraint(tool_call_grammar([ADD], ("[C]", "[/C]"), several=False))
    auto = constraint_for(request(tools=(ADD,)), ("[TOOL_CALLS]", ""), "[TOOL_CALLS]")
    assert auto == Constraint(tool_call_grammar([ADD], ("[TOOL_CALLS]", ""), several=True), "[TOOL_CALLS]")


def test_auto_with_a_response_format_is_calls_or_the_json(rt: LlamaRuntime) -> None:
    c = constraint_for(request(tools=(ADD,), response_format=ResponseFormat("json_schema", TRIP)), None, "")
    assert c is not None and not c.lazy_trigger
    assert accepts(rt, c.grammar, '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>')
    assert accepts(rt, c.grammar, '{"city": "Oslo", "days": 2}')
    assert not accepts(rt, c.grammar, "Just words.")
