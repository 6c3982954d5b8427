"""Tool calls read from each family's answers, fed whole and cut at every point, the families told
apart by their templates, and the generic form's prompt and turns."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence

import pytest

from prefill.engine.message import Message, ToolCall
from prefill.engine.prompt.answer_split import AnswerSplit
from prefill.engine.prompt.reasoning import ReasoningParser, ReasoningSyntax
from prefill.engine.prompt.tool_calls import (
    Item,
    MalformedCall,
    compact_json,
    generic_tool_system_prompt,
    render_call_as_text,
    render_result_as_text,
)
from prefill.engine.prompt.tool_formats import (
    COMMAND_R7B,
    DEEPSEEK_R1,
    DEEPSEEK_V3_1,
    FORMATS,
    FUNCTIONARY_V3_1,
    FUNCTIONARY_V3_2,
    GENERIC,
    GLM_4_5,
    GPT_OSS,
    GRANITE,
    HERMES,
    KIMI_K2,
    LLAMA_3,
    MISTRAL,
    MISTRAL_NEMO,
    PHI4_MINI,
    QWEN3_CODER,
    ToolFormat,
    detect_tool_format,
)
from prefill.engine.request import Tool

ID = "call_test"


def call(name: str, args: dict[str, object] | None = None, id_: str = ID) -> ToolCall:
    return ToolCall(id_, name, compact_json(args or {}))


W = call("get_weather", {"city": "Paris"})
T = call("get_time", {"zone": "CET"})
WJ = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TJ = '{"name": "get_time", "arguments": {"zone": "CET"}}'


class Bad:
    """Expects a MalformedCall whose text is `text` (the reason is free)."""

    def __init__(self, text: str):
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MalformedCall) and other.text == self.text and bool(other.reason)

    def __repr__(self) -> str:
        return f"Bad({self.text!r})"


def joined(items: Sequence[Item]) -> list[Item]:
    """Adjacent text pieces as one (a stream may cut text anywhere)."""
    out: list[Item] = []
    for x in items:
        if isinstance(x, str) and out and isinstance(out[-1], str):
            out[-1] += x
        else:
            out.append(x)
    return out


def parse(fmt: ToolFormat, pieces: Sequence[str]) -> list[Item]:
    p = fmt.parser(lambda: ID)
    out: list[Item] = []
    for piece in pieces:
        out += p.feed(piece)
    return joined(out + p.finish())


def cuts(text: str) -> Iterator[list[str]]:
    """The text whole, a character at a time, cut once at every point, and cut at random."""
    yield [text]
    yield list(text)
    for i in range(1, len(text)):
        yield [text[:i], text[i:]]
    rng = random.Random(text)
    for _ in range(10):
        points = sorted(rng.sample(range(1, len(text)), min(6, len(text) - 1))) if len(text) > 1 else []
        yield [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def check(fmt: ToolFormat, text: str, expected: list[object]) -> None:
    for pieces in cuts(text):
        got = parse(fmt, pieces)
        assert got == expected, (fmt.name, pieces)


CASES: list[tuple[ToolFormat, str, list[object]]] = [
    # Hermes 2/3 Pro, Qwen 2.5/3
    (HERMES, f"<tool_call>\n{WJ}\n</tool_call>", [W]),
    (HERMES, f"Let me look.\n<tool_call>\n{WJ}\n</tool_call>\n<tool_call>\n{TJ}\n</tool_call>\nBack soon.",
     ["Let me look.", W, T, "Back soon."]),
    (HERMES, 'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call> sorry',
     ["Checking.", Bad('<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>'), "sorry"]),
    (HERMES, '<tool_call>{"name": "launch_rocket", "arguments": {"to": "moon"}}</tool_call>',
     [call("launch_rocket", {"to": "moon"})]),
    (HERMES, '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>', [W]),
    (HERMES, f"<tool_call>\n{WJ}", [W]),  # the answer stopped on the closer
    (HERMES, f"<tool_call>\n{WJ}\n{TJ}\n</tool_call>", [W, T]),  # two calls in one block
    (HERMES, "Use <b>bold</b>, a <tool or a < b; </tool_call> is dropped. <tool_call",
     ["Use <b>bold</b>, a <tool or a < b;  is dropped. <tool_call"]),
    (HERMES, '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>',
     [Bad('<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>')]),
    (HERMES, '<tool_call>{"arguments": {}}</tool_call>', [Bad('<tool_call>{"arguments": {}}</tool_call>')]),
    (GENERIC, f"Sure.\n\n<tool_call>\n{WJ}\n</tool_call>", ["Sure.", W]),
    # Qwen3-Coder
    (QWEN3_CODER, "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                  "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
     [call("get_weather", {"city": "Paris", "days": 3})]),
    (QWEN3_CODER, "I'll check both.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                  "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n"
                  "</parameter>\n</function>\n</tool_call>", ["I'll check both.", W, T]),
    (QWEN3_CODER, '<function=search>\n<parameter=filter>\n{"tags": ["a", "b"]}\n</parameter>\n</function> Done.',
     [call("search", {"filter": {"tags": ["a", "b"]}}), "Done."]),
    (QWEN3_CODER, "<tool_call>\nget_weather Paris\n</tool_call>",
     [Bad("<tool_call>\nget_weather Paris\n</tool_call>")]),
    # GLM 4.5+
    (GLM_4_5, "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>", [W]),
    (GLM_4_5, "Two lookups.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
              "</tool_call>\n<tool_call>get_time\n<arg_key>zone</arg_key>\n<arg_value>CET</arg_value>\n</tool_call>"
              "\nThen I answer.", ["Two lookups.", W, T, "Then I answer."]),
    (GLM_4_5, '<tool_call>tag\n<arg_key>names</arg_key>\n<arg_value>["a", "b"]</arg_value>\n</tool_call>',
     [call("tag", {"names": ["a", "b"]})]),
    (GLM_4_5, "<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
     [Bad("<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>")]),
    # Llama 3.x
    (LLAMA_3, '{"name": "get_weather", "parameters": {"city": "Paris"}}', [W]),
    (LLAMA_3, '\n\n {"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>', [W]),
    (LLAMA_3, '{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}', [W]),
    (LLAMA_3, '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
              '{"name": "get_time", "parameters": {"zone": "CET"}}', [W, T]),
    (LLAMA_3, '{"name": "get_weather", "parameters": {"city": "Paris"}} I will report back.',
     [W, "I will report back."]),
    (LLAMA_3, '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>', [W]),
    (LLAMA_3, '<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>',
     [call("brave_search", {"query": "weather in Paris"})]),
    (LLAMA_3, "<|python_tag|>print(2 + 2)", [call("python", {"code": "print(2 + 2)"})]),
    (LLAMA_3, '{"name": "Ada", "born": 1815}', ['{"name": "Ada", "born": 1815}']),
    (LLAMA_3, 'Here: {"name": "get_weather", "parameters": {}}', ['Here: {"name": "get_weather", "parameters": {}}']),
    (LLAMA_3, '{"name": "get_weather", "parameters": {"city": "Paris"}',
     [Bad('{"name": "get_weather", "parameters": {"city": "Paris"}')]),
    # Mistral: the JSON array (Nemo, Small 3.1) and NAME[ARGS] (Magistral, Devstral, Small 3.2)
    (MISTRAL_NEMO, '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}]',
     [call("get_weather", {"city": "Paris"}, "abcDEF123")]),
    (MISTRAL_NEMO, f"Looking both up. [TOOL_CALLS][{WJ}, {TJ}]", ["Looking both up.", W, T]),
    (MISTRAL_NEMO, '[TOOL_CALLS][{"name": "get_weather", "arguments": {city: Paris}}] Sorry.',
     [Bad('[TOOL_CALLS][{"name": "get_weather", "arguments": {city: Paris}}]'), "Sorry."]),
    (MISTRAL, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', [W]),
    (MISTRAL, 'Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
     ["Checking.", W, T]),
    (MISTRAL, '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
     [call("get_weather", {"city": "Paris"}, "a1b2c3d4e")]),
    (MISTRAL, '[TOOL_CALLS]get_weather[ARGS]{"city": Paris} and more',
     [Bad('[TOOL_CALLS]get_weather[ARGS]{"city": Paris}'), "and more"]),
    (MISTRAL, "[TOOL_CALLS]get the weather", [Bad("[TOOL_CALLS]get"), "the weather"]),
    # gpt-oss, where the channel headers reach the answer as text
    (GPT_OSS, '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
              '{"city": "Paris"}<|call|>', [W]),
    (GPT_OSS, '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}'
              '<|call|><|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>'
              '{"zone": "CET"}<|call|>', [W, T]),
    (GPT_OSS, '<|channel|>final<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary '
              'to=functions.get_weather json<|message|>{"city": "Paris"}<|call|>', ["Let me check.", W]),
    (GPT_OSS, '<|channel|>commentary to=functions.get_weather json<|message|>{"city": Paris}<|call|>',
     [Bad('<|channel|>commentary to=functions.get_weather json<|message|>{"city": Paris}')]),
    # DeepSeek R1 / V3 and V3.1
    (DEEPSEEK_R1, '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
                  '{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', [W]),
    (DEEPSEEK_R1, 'Two calls.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
                  '{"city": "Paris"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n'
                  '```json\n{"zone": "CET"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', ["Two calls.", W, T]),
    (DEEPSEEK_V3_1, '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
                    '<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"zone": "CET"}<｜tool▁call▁end｜>'
                    '<｜tool▁calls▁end｜>', [W, T]),
    (DEEPSEEK_V3_1, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather Paris<｜tool▁call▁end｜>",
     [Bad("<｜tool▁call▁begin｜>get_weather Paris<｜tool▁call▁end｜>")]),
    # Command R7B
    (COMMAND_R7B, '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
                  '{"city": "Paris"}},\n    {"tool_call_id": "1", "tool_name": "get_time", "parameters": '
                  '{"zone": "CET"}}\n]<|END_ACTION|>', [W, T]),
    (COMMAND_R7B, "<|START_RESPONSE|>It is sunny in Paris.<|END_RESPONSE|>", ["It is sunny in Paris."]),
    (COMMAND_R7B, '<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"city": }}]<|END_ACTION|>',
     [Bad('<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"city": }}]<|END_ACTION|>')]),
    # Granite, Phi-4-mini
    (GRANITE, f"<|tool_call|>[{WJ}]", [W]),
    (GRANITE, f"Checking both.<|tool_call|>[{WJ}, {TJ}]", ["Checking both.", W, T]),
    (GRANITE, "<|tool_call|>oops, no call", [Bad("<|tool_call|>"), "oops, no call"]),
    (GRANITE, '<|tool_call|>[{"name": "get_weather", "arguments": {"city": Paris}}] Hm.',
     [Bad('<|tool_call|>[{"name": "get_weather", "arguments": {"city": Paris}}]'), "Hm."]),
    (PHI4_MINI, f"<|tool_call|>{WJ}<|/tool_call|>", [W]),
    (PHI4_MINI, f"<|tool_call|>{WJ}<|/tool_call|>\n<|tool_call|>{TJ}<|/tool_call|> Then more.", [W, T, "Then more."]),
    (PHI4_MINI, f"Try functools[{WJ}]", ["Try", W]),
    (PHI4_MINI, "import functools; functools.partial(f)", ["import functools; functools.partial(f)"]),
    # Kimi K2
    (KIMI_K2, '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
              '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
     [call("get_weather", {"city": "Paris"}, "functions.get_weather:0")]),
    (KIMI_K2, 'Both. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
              '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1'
              '<|tool_call_argument_begin|>{"zone": "CET"}<|tool_call_end|><|tool_calls_section_end|>',
     ["Both.", call("get_weather", {"city": "Paris"}, "functions.get_weather:0"),
      call("get_time", {"zone": "CET"}, "functions.get_time:1")]),
    (KIMI_K2, "<|tool_call_begin|>functions.get_weather:0 Paris<|tool_call_end|>",
     [Bad("<|tool_call_begin|>functions.get_weather:0 Paris<|tool_call_end|>")]),
    # Functionary v3.1 (Llama 3.1) and v3.2
    (FUNCTIONARY_V3_1, '<function=get_weather>{"city": "Paris"}</function>', [W]),
    (FUNCTIONARY_V3_1, 'Both: <function=get_weather>{"city": "Paris"}</function><function=get_time>'
                       '{"zone": "CET"}</function>', ["Both:", W, T]),
    (FUNCTIONARY_V3_1, "<|python_tag|>print(2 + 2)<|eom_id|>", [call("python", {"code": "print(2 + 2)"})]),
    (FUNCTIONARY_V3_1, '<function=get_weather>{"city": </function>',
     [Bad('<function=get_weather>{"city": </function>')]),
    (FUNCTIONARY_V3_2, "all\nHello there!", ["Hello there!"]),
    (FUNCTIONARY_V3_2, 'get_weather\n{"city": "Paris"}', [W]),
    (FUNCTIONARY_V3_2, 'all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "CET"}',
     ["Let me check.", W, T]),
    (FUNCTIONARY_V3_2, "python\nprint(2 + 2)", [call("python", {"code": "print(2 + 2)"})]),
    (FUNCTIONARY_V3_2, "all\nIn Python:\n>>> print(1)\n1", ["In Python:\n>>> print(1)\n1"]),
    (FUNCTIONARY_V3_2, 'get_weather\n{"city": Paris}', [Bad('get_weather\n{"city": Paris}')]),
]


@pytest.mark.parametrize(("fmt", "text", "expected"), CASES, ids=[f"{c[0].name}-{i}" for i, c in enumerate(CASES)])
def test_calls_read_alike_whole_and_cut_anywhere(fmt: ToolFormat, text: str, expected: list[object]) -> None:
    check(fmt, text, expected)


FRAGMENTS = ("Hi ", " ", "\n", "{", "}", "[", "]", '"', "\\", ":", ",", ";", "<", "|", ">", '"name": "f"',
             '"arguments": {"a": "x\\"y"}', '"parameters": {}', "all\n", "f\n", "[ARGS]", "<|message|>",
             " to=functions.f", "<｜tool▁sep｜>", "function", "```json", "<|tool_call_argument_begin|>", "<function=f>",
             "<parameter=a>", "</parameter>", "<arg_key>a</arg_key>", "<arg_value>1</arg_value>", ".call(a=1)")


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_random_streams_read_alike_however_cut(fmt: ToolFormat) -> None:
    rng = random.Random(fmt.name)
    pool = FRAGMENTS + fmt.syntax.opens + fmt.syntax.drops
    for _ in range(60):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 14)))
        whole = parse(fmt, [text])
        points = sorted(rng.sample(range(1, len(text)), min(3, len(text) - 1))) if len(text) > 1 else []
        assert parse(fmt, list(text)) == whole, text
        assert parse(fmt, [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]) == whole, text
        markers = [m for m in fmt.syntax.opens + fmt.syntax.drops if m != ">>>"]  # v3.2's >>> alone is text
        assert not any(m in x for x in whole if isinstance(x, str) for m in markers), text


def test_ids_are_made_unless_the_format_carries_one() -> None:
    p = HERMES.parser()
    got = [x for x in p.feed(f"<tool_call>{WJ}</tool_call><tool_call>{TJ}</tool_call>") + p.finish()
           if isinstance(x, ToolCall)]
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", c.id) for c in got)
    assert got[0].id != got[1].id


def test_arguments_are_compact_json_of_an_object() -> None:
    got = parse(HERMES, ['<tool_call>{"name": "f", "arguments": {"city":  "Zürich", "n": [1, 2]}}</tool_call>'])
    assert got == [ToolCall(ID, "f", '{"city":"Zürich","n":[1,2]}')]
    assert parse(HERMES, ['<tool_call>{"name": "f"}</tool_call>']) == [ToolCall(ID, "f", "{}")]


def test_a_call_inside_the_thinking_is_not_a_call() -> None:
    """The parser only sees the answer: the reasoning parser has split the thinking off first."""
    split = AnswerSplit(ReasoningParser(ReasoningSyntax((("<think>", "</think>"),))))
    stream = (f"<think>I could write <tool_call>{TJ}</tool_call> but the weather is what counts.</think>"
              f"Let me check.\n<tool_call>\n{WJ}\n</tool_call>")
    parser = HERMES.parser(lambda: ID)
    items: list[Item] = []
    for ch in stream:
        items += parser.feed(split.split(ch)[1])
    items += parser.feed(split.finish()[1]) + parser.finish()
    assert "<tool_call>" in split.thinking_text
    assert joined(items) == ["Let me check.", W]


TEMPLATES = {
    "gpt-oss": "{{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' }}",
    "deepseek-v3.1": "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + "
                     "tool['function']['arguments'] + '<｜tool▁call▁end｜>'}}",
    "deepseek-r1": "{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + name + '\\n' + "
                   "'```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}",
    "command-r7b": "<|START_THINKING|>{{ message.reasoning_content }}<|END_THINKING|><|START_ACTION|>[",
    "kimi-k2": "{% if tools %}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{% endif %}",
    "glm-4.5": "{{ '\\n<tool_call>' + tc.name }}<arg_key>{{ k }}</arg_key>\\n<arg_value>{{ v }}</arg_value>",
    "qwen3-coder": "{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}{{- '<parameter=' + name + '>\\n' }}",
    "phi-4-mini": "{{ '<|system|>' + system + '<|tool|>' + tools + '<|/tool|>' + '<|end|>' }}",
    "granite": "<|start_of_role|>assistant<|end_of_role|><|tool_call|>{{ message.tool_calls | tojson }}",
    "hermes": "<tools>{{ tools }}</tools> <tool_call>\\n{\"name\": <function-name>, \"arguments\": {}}\\n</tool_call>",
    "functionary-v3.2": "{{ '<|start_header_id|>' + role + '<|end_header_id|>\\n\\n>>>all\\n' + content }}",
    "functionary-v3.1": "<|start_header_id|>assistant<|end_header_id|>\\n\\n<function={{ name }}>{{ args }}</function>",
    "llama-3": "{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' }}",
    "mistral": "{{- '[TOOL_CALLS]' + tool_call.function.name + '[ARGS]' + arguments }}",
    "mistral-nemo": "[AVAILABLE_TOOLS]{{ tools }}[/AVAILABLE_TOOLS]{{ '[TOOL_CALLS][' + calls + ']' }}",
    "generic": "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}{% endfor %}",
}


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_detection_from_template_markers(name: str) -> None:
    assert detect_tool_format(TEMPLATES[name]).name == name


def test_every_format_is_detectable_and_no_template_is_generic() -> None:
    assert {f.name for f in FORMATS} == set(TEMPLATES)
    assert detect_tool_format(None) is GENERIC
    assert detect_tool_format("") is GENERIC


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.json_call is not None], ids=lambda f: f.name)
def test_json_call_wrapping_reads_back_as_a_call(fmt: ToolFormat) -> None:
    assert fmt.json_call is not None
    open_, close = fmt.json_call
    assert open_.startswith(fmt.trigger)
    check(fmt, f"{open_}{WJ}{close}", [W])


def test_formats_without_the_json_shape_say_so() -> None:
    shaped = {f.name for f in FORMATS if f.json_call is not None}
    assert shaped == {"hermes", "generic", "granite", "phi-4-mini", "mistral-nemo"}


TOOLS = (
    Tool("get_weather", "The weather in a city.",
         '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'),
    Tool("get_time", "", '{"type": "object", "properties": {"zone": {"type": "string", "enum": ["CET", "UTC"]}}}'),
)


def test_the_generic_prompt_names_every_tool_with_its_schema() -> None:
    prompt = generic_tool_system_prompt(TOOLS)
    for t in TOOLS:
        assert f'"name": "{t.name}"' in prompt
        assert json.dumps(json.loads(t.parameters)) in prompt
    assert "The weather in a city." in prompt
    assert "<tool_call>" in prompt and "</tool_call>" in prompt


def test_earlier_rounds_written_as_text_read_back() -> None:
    text = render_call_as_text(W)
    assert text == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert GENERIC.json_call is not None and text == GENERIC.json_call[0] + WJ + GENERIC.json_call[1]
    check(GENERIC, text, [W])
    result = render_result_as_text(Message("tool", '{"temp": 21}', tool_call_id=ID, name="get_weather"))
    assert result == '<tool_response name="get_weather">\n{"temp": 21}\n</tool_response>'
    assert render_result_as_text(Message("tool", "ok")) == "<tool_response>\nok\n</tool_response>"


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
def test_gpt_oss_call_channel_reaches_the_tool_parser_through_the_reasoning_parser(cut: int) -> None:
    from prefill.engine.prompt.answer_split import AnswerSplit
    from prefill.engine.prompt.reasoning import ReasoningParser, ReasoningSyntax
    from prefill.engine.prompt.tool_formats import GPT_OSS

    text = ("<|channel|>analysis<|message|>Need the weather.<|start|>assistant<|channel|>commentary "
            'to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo"}')
    split = AnswerSplit(ReasoningParser(ReasoningSyntax((), True)), None, GPT_OSS.parser())
    for i in range(0, len(text), cut):
        split.token(text[i : i + cut], 1, 0.0)
    split.end("", 1)
    assert [(c.name, c.arguments) for c in split.calls] == [("get_weather", '{"city":"Oslo"}')]
    assert split.thinking_text == "Need the weather." and split.answer_text == ""


ZIP_TOOL = Tool("ship", parameters=json.dumps({"type": "object", "properties": {
    "zip": {"type": "string"}, "count": {"type": "integer"}, "gift": {"type": "boolean"},
    "note": {"type": ["string", "null"]}, "tags": {"type": "array"}}}))


@pytest.mark.parametrize("fmt, text", [
    (QWEN3_CODER, "<tool_call>\n<function=ship>\n<parameter=zip>\n12345\n</parameter>\n<parameter=count>\n3\n"
                  "</parameter>\n<parameter=gift>\ntrue\n</parameter>\n<parameter=note>\nnull\n</parameter>\n"
                  '<parameter=tags>\n["a"]\n</parameter>\n<parameter=extra>\n1.5\n</parameter>\n</function>\n</tool_call>'),
    (GLM_4_5, "<tool_call>ship\n<arg_key>zip</arg_key>\n<arg_value>12345</arg_value>\n<arg_key>count</arg_key>\n"
              "<arg_value>3</arg_value>\n<arg_key>gift</arg_key>\n<arg_value>true</arg_value>\n<arg_key>note</arg_key>\n"
              "<arg_value>null</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>[\"a\"]</arg_value>\n"
              "<arg_key>extra</arg_key>\n<arg_value>1.5</arg_value>\n</tool_call>"),
])
def test_bare_values_read_as_their_parameters_types(fmt: ToolFormat, text: str) -> None:
    """A string parameter keeps its text ("12345", not 12345); the others read as JSON; an undeclared one too."""
    parser = fmt.parser(tools=(ZIP_TOOL,))
    items = joined([*parser.feed(text), *parser.finish()])
    assert len(items) == 1 and isinstance(items[0], ToolCall), items
    assert json.loads(items[0].arguments) == {"zip": "12345", "count": 3, "gift": True, "note": None,
                                              "tags": ["a"], "extra": 1.5}
    untyped = fmt.parser()  # no schema known: as before, JSON where it parses
    got = joined([*untyped.feed(text), *untyped.finish()])
    assert json.loads(got[0].arguments)["zip"] == 12345
