"""The tool-call formats of the model families, and which one a model uses.

`detect_tool_format` reads the model's chat template for the markers its family writes, checking
in the order llama.cpp's common/chat.cpp picks its handlers: the more specific first (GLM and
Qwen3-Coder before Hermes, whose `<tool_call>` they share; Functionary before Llama 3.x), and the
generic form for every other template or a model without one. Each reader is lenient where the
families are known to wander (DeepSeek's two layouts, Mistral's two, `<function=…>` without its
`<tool_call>`), so a detection that picks a sibling still reads the calls.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from prefill.engine.message import new_call_id
from prefill.engine.prompt.tool_calls import (
    GENERIC_CLOSE,
    GENERIC_OPEN,
    BareValue,
    CallScan,
    CallSyntax,
    RawCall,
    Read,
    ToolCallParser,
    Unreadable,
    closer_end,
    first_marker,
    json_calls,
    load_json,
    load_json_values,
    skip_space,
)
from prefill.engine.request import Tool


def _inner(text: str, opener: str, *closers: str) -> str:
    """A call's text without its opening and closing markers (the closer may be missing: the
    answer can stop on it)."""
    text = text.removeprefix(opener)
    for c in closers:
        if text.endswith(c):
            return text[: -len(c)]
    return text


# --- Hermes 2/3 Pro, Qwen 2.5, Qwen 3, and the generic form: <tool_call>{…}</tool_call> ---------
def _hermes_read(text: str) -> Read:
    return json_calls(load_json_values(_inner(text, GENERIC_OPEN, GENERIC_CLOSE)))


HERMES_SYNTAX = CallSyntax((GENERIC_OPEN,), closer_end(GENERIC_CLOSE), _hermes_read, (GENERIC_CLOSE,))


# --- Qwen3-Coder: <tool_call><function=NAME><parameter=P>value</parameter></function></tool_call> -
_FUNCTION = re.compile(r"<function=([^>\n]*)>(.*?)(?:</function>|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)


def _one_newline_trimmed(value: str) -> str:
    """A value as written between its tags, less the newline the format puts on each side."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def _qwen3_coder_end(text: str, scan: CallScan) -> int | None:
    return closer_end(GENERIC_CLOSE if text.startswith(GENERIC_OPEN) else "</function>")(text, scan)


def _qwen3_coder_read(text: str) -> Read:
    body = _inner(text, GENERIC_OPEN, GENERIC_CLOSE)
    calls: Read = []
    for f in _FUNCTION.finditer(body):
        args = {p.group(1).strip(): BareValue(_one_newline_trimmed(p.group(2)))
                for p in _PARAMETER.finditer(f.group(2))}
        calls.append(RawCall(f.group(1).strip(), args))
    if not calls:
        raise Unreadable("the call has no <function=…> block")
    return calls


QWEN3_CODER_SYNTAX = CallSyntax((GENERIC_OPEN, "<function="), _qwen3_coder_end, _qwen3_coder_read,
                                (GENERIC_CLOSE,))


# --- GLM 4.5+: <tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call> ------------
_ARG = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)(?:</arg_value>|\Z)", re.S)


def _glm_read(text: str) -> Read:
    body = _inner(text, GENERIC_OPEN, GENERIC_CLOSE).strip()
    if body.startswith("{"):  # the Hermes form, which GLM sometimes falls back to
        return json_calls(load_json(body))
    head = body.split("<arg_key>", 1)[0]
    return [RawCall(head.strip(), {k.strip(): BareValue(v) for k, v in _ARG.findall(body)})]


GLM_SYNTAX = CallSyntax((GENERIC_OPEN,), closer_end(GENERIC_CLOSE), _glm_read, (GENERIC_CLOSE,))


# --- Llama 3.x: {"name": …, "parameters": …} as the answer, or after <|python_tag|> ---------------
PYTHON_TAG = "<|python_tag|>"
_MESSAGE_ENDS = ("<|eom_id|>", "<|eot_id|>")
_LLAMA_STARTS = ('{"name":"', '{"type":"function","name":"')
_BUILTIN = re.compile(r"\s*(\w+)\.call\((.*)\)\s*\Z", re.S)


def _llama_leading(text: str, first: bool) -> bool | None:
    """A call is the whole answer, or follows another (after a `;`): it starts like one."""
    compact = "".join(text[:96].split())
    if not first:
        compact = compact.removeprefix(";")
    if compact.startswith(_LLAMA_STARTS):
        return True
    if any(s.startswith(compact) for s in _LLAMA_STARTS):
        return None if len(text) <= 96 else False
    return False


def _llama_end(text: str, scan: CallScan) -> int | None:
    if not text.startswith(PYTHON_TAG):
        return scan.end(text, text.find("{"))
    j = skip_space(text, len(PYTHON_TAG))
    if j == len(text):
        return None
    return scan.end(text, j) if text[j] == "{" else closer_end(*_MESSAGE_ENDS)(text, scan)


def _call_shaped(obj: dict[str, object]) -> bool:
    return (isinstance(obj.get("name"), str)
            and ("parameters" in obj or "arguments" in obj)
            and set(obj) <= {"type", "name", "parameters", "arguments"})


def _keyword_args(src: str) -> dict[str, object]:
    """`a=1, b="x"` (a built-in tool's call, as Python) -> its literal values; nothing is run."""
    try:
        node = ast.parse(f"f({src})", mode="eval").body
        if not isinstance(node, ast.Call) or node.args:
            raise ValueError
        return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (SyntaxError, ValueError, TypeError, RecursionError):
        raise Unreadable("the built-in tool's arguments are not literal keyword arguments") from None


def _code_call(code: str) -> RawCall:
    if not code.strip():
        raise Unreadable("the call has no code")
    return RawCall("python", {"code": code.strip()})


def _llama_read(text: str) -> Read:
    if not text.startswith(PYTHON_TAG):
        obj = load_json(text.strip().removeprefix(";").strip())
        if not isinstance(obj, dict) or not _call_shaped(obj):
            return [text]  # JSON the answer was asked for, not a call
        return [RawCall(obj["name"], obj.get("parameters", obj.get("arguments")))]
    body = _inner(text, PYTHON_TAG, *_MESSAGE_ENDS)
    if body.strip().startswith("{"):
        return json_calls(load_json(body.strip()))
    m = _BUILTIN.match(body)
    if m:
        return [RawCall(m.group(1), _keyword_args(m.group(2)))]
    return [_code_call(body)]


LLAMA_SYNTAX = CallSyntax((PYTHON_TAG,), _llama_end, _llama_read, _MESSAGE_ENDS, _llama_leading)


# --- Mistral: [TOOL_CALLS][{…}, …] (Nemo, Small 3.x), [TOOL_CALLS]NAME[ARGS]{…} (Magistral, Devstral) -
TOOL_CALLS = "[TOOL_CALLS]"
_ARGS = "[ARGS]"
_NOT_A_NAME = re.compile(r"[\s{]")


def _mistral_end(text: str, scan: CallScan) -> int | None:
    i = skip_space(text, len(TOOL_CALLS))
    if i == len(text):
        return None
    if text[i] in "[{":
        return scan.end(text, i)
    j = text.find(_ARGS, i)
    bad = _NOT_A_NAME.search(text, i, j if j >= 0 else len(text))
    if bad is not None:  # a name (and [CALL_ID]) runs to [ARGS]: a space or a brace before it ends the call
        return bad.start()
    return None if j < 0 else scan.value_end(text, j + len(_ARGS))


def _mistral_read(text: str) -> Read:
    body = text[len(TOOL_CALLS) :].strip()
    if body.startswith(("[", "{")):
        return json_calls(load_json(body), id_key="id")
    head, sep, args = body.partition(_ARGS)
    if not sep:
        raise Unreadable("[TOOL_CALLS] is not followed by NAME[ARGS]{…}")
    if not args.strip():
        raise Unreadable("no arguments follow [ARGS]")
    name, _, call_id = head.partition("[CALL_ID]")
    return [RawCall(name.strip(), args.strip(), call_id.strip())]


MISTRAL_SYNTAX = CallSyntax((TOOL_CALLS,), _mistral_end, _mistral_read)


# --- gpt-oss: <|start|>assistant<|channel|>commentary to=functions.NAME …<|message|>{…}<|call|> ----
# The chat module's reasoning parser may take the headers; these are read where they reach the answer.
_OSS_OPENS = ("<|start|>", "<|channel|>")
_OSS_MESSAGE = "<|message|>"
_OSS_CLOSES = ("<|call|>", "<|end|>", "<|return|>")
_RECIPIENT = re.compile(r"\bto=([^\s<]+)")
_MAX_HEADER = 256


def _oss_end(text: str, scan: CallScan) -> int | None:
    j = text.find(_OSS_MESSAGE)
    if j < 0:  # a header is short: a marker left alone this long opens none
        return None if len(text) <= _MAX_HEADER else next(len(o) for o in _OSS_OPENS if text.startswith(o))
    body = j + len(_OSS_MESSAGE)
    if not _RECIPIENT.search(text, 0, j):
        return body  # a channel that is not a call: its header goes, its text streams on
    k = skip_space(text, body)
    if k == len(text):
        return None
    if text[k] == "{":
        return scan.end(text, k)
    hit = first_marker(text[body:], _OSS_CLOSES + _OSS_OPENS)
    if hit is None:
        return None
    return body + hit[0] + (len(hit[1]) if hit[1] in _OSS_CLOSES else 0)


def _oss_read(text: str) -> Read:
    j = text.find(_OSS_MESSAGE)
    m = _RECIPIENT.search(text, 0, j) if j >= 0 else None
    if m is None:
        return []
    body = _inner(text[j + len(_OSS_MESSAGE) :], "", *_OSS_CLOSES)
    return [RawCall(m.group(1).removeprefix("functions."), body.strip())]


GPT_OSS_SYNTAX = CallSyntax(_OSS_OPENS, _oss_end, _oss_read, _OSS_CLOSES)


# --- DeepSeek R1 / V3: <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜> --
# --- DeepSeek V3.1:    <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜> ---------------------
DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_FENCE = re.compile(r"\s*```(?:json)?\s*(.*?)\s*```\s*\Z", re.S)


def _deepseek_read(text: str) -> Read:
    head, sep, rest = _inner(text, DS_CALL_BEGIN, DS_CALL_END).partition(DS_SEP)
    if not sep:
        raise Unreadable("the call has no <｜tool▁sep｜>")
    if head.strip() == "function":  # R1 / V3: the type, then the name on its own line
        name, _, rest = rest.partition("\n")
    else:
        name = head
    fenced = _FENCE.match(rest)
    return [RawCall(name.strip(), fenced.group(1) if fenced else rest.strip())]


DEEPSEEK_SYNTAX = CallSyntax((DS_CALL_BEGIN,), closer_end(DS_CALL_END), _deepseek_read,
                             (DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_END))


# --- Command R7B: <|START_ACTION|>[{"tool_call_id": …, "tool_name": …, "parameters": …}]<|END_ACTION|> -
# Its ids count from 0 in every answer; the template maps ids back to those numbers itself, so the
# calls get ids of their own here.
R7B_OPEN, R7B_CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"


def _r7b_read(text: str) -> Read:
    return json_calls(load_json(_inner(text, R7B_OPEN, R7B_CLOSE).strip()), "tool_name", ("parameters",))


R7B_SYNTAX = CallSyntax((R7B_OPEN,), closer_end(R7B_CLOSE), _r7b_read,
                        ("<|START_RESPONSE|>", "<|END_RESPONSE|>", R7B_CLOSE))


# --- Granite: <|tool_call|>[{…}]; Phi-4-mini: <|tool_call|>{…}<|/tool_call|>, functools[{…}] ------
GRANITE_OPEN, PHI_CLOSE, FUNCTOOLS = "<|tool_call|>", "<|/tool_call|>", "functools["


def _json_start(text: str) -> int:
    return len(FUNCTOOLS) - 1 if text.startswith(FUNCTOOLS) else len(GRANITE_OPEN)


def _bracketed_end(text: str, scan: CallScan) -> int | None:
    start = _json_start(text)
    e = scan.value_end(text, start)
    if e is None or e == start:
        return e
    rest = text[e:].lstrip()
    if rest.startswith(PHI_CLOSE):
        return len(text) - len(rest) + len(PHI_CLOSE)
    return None if PHI_CLOSE.startswith(rest) else e  # the optional closer may be on its way


def _bracketed_read(text: str) -> Read:
    start = _json_start(text)
    e = CallScan().value_end(text, start)
    if e is None or e == start:
        raise Unreadable("no JSON object or array follows the call marker")
    calls = json_calls(load_json(text[start:e]), id_key="id")
    tail = text[e:].strip()
    return calls + ([tail] if tail and not PHI_CLOSE.startswith(tail) else [])


GRANITE_SYNTAX = CallSyntax((GRANITE_OPEN,), _bracketed_end, _bracketed_read, (PHI_CLOSE,))
PHI4_SYNTAX = CallSyntax((GRANITE_OPEN, FUNCTOOLS), _bracketed_end, _bracketed_read, (PHI_CLOSE,))


# --- Kimi K2: <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|> --
KIMI_SECTION = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
KIMI_BEGIN, KIMI_ARGS, KIMI_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
_KIMI_HEAD = re.compile(r"(?:functions\.)?(.+?)(:\d+)?\Z", re.S)


def _kimi_read(text: str) -> Read:
    head, sep, args = _inner(text, KIMI_BEGIN, KIMI_END).partition(KIMI_ARGS)
    if not sep:
        raise Unreadable("the call has no <|tool_call_argument_begin|>")
    m = _KIMI_HEAD.match(head.strip())
    if m is None:
        raise Unreadable("the call names no function")
    carried = head.strip() if head.strip().startswith("functions.") and m.group(2) else ""
    return [RawCall(m.group(1), args.strip(), carried)]


KIMI_SYNTAX = CallSyntax((KIMI_BEGIN,), closer_end(KIMI_END), _kimi_read, KIMI_SECTION + (KIMI_END,))


# --- Functionary v3.1 (Llama 3.1): <function=NAME>{…}</function>, <|python_tag|>code --------------
_FV31_CALL = re.compile(r"<function=([^>]*)>(.*?)(?:</function>)?\Z", re.S)


def _fv31_end(text: str, scan: CallScan) -> int | None:
    closers = ("</function>",) if text.startswith("<function=") else _MESSAGE_ENDS
    return closer_end(*closers)(text, scan)


def _fv31_read(text: str) -> Read:
    if text.startswith(PYTHON_TAG):
        return [_code_call(_inner(text, PYTHON_TAG, *_MESSAGE_ENDS))]
    m = _FV31_CALL.match(text)
    if m is None:
        raise Unreadable("the <function=…> tag is not closed")
    return [RawCall(m.group(1).strip(), m.group(2).strip())]


FUNCTIONARY_V31_SYNTAX = CallSyntax(("<function=", PYTHON_TAG), _fv31_end, _fv31_read, ("</function>",))


# --- Functionary v3.2: >>>NAME\n{…}; >>>all\ntext; the first recipient comes without >>> ---------
_RECIPIENT_LINE = re.compile(r"(\w+)\n")
_WORD = re.compile(r"\w*")


def _fv32_leading(text: str, first: bool) -> bool | None:
    if not first:
        return False
    if _WORD.fullmatch(text):
        return None
    return _RECIPIENT_LINE.match(text) is not None


def _fv32_end(text: str, scan: CallScan) -> int | None:
    at = 3 if text.startswith(">>>") else 0
    m = _RECIPIENT_LINE.match(text, at)
    if m is None:
        return None if _WORD.fullmatch(text, at) else at
    if m.group(1) == "all":
        return m.end()
    if m.group(1) == "python":
        nxt = text.find(">>>", m.end())
        return nxt if nxt >= 0 else None
    k = skip_space(text, m.end())
    if k == len(text):
        return None
    return scan.end(text, k) if text[k] == "{" else m.end()  # no JSON: the line was text


def _fv32_read(text: str) -> Read:
    at = 3 if text.startswith(">>>") else 0
    m = _RECIPIENT_LINE.match(text, at)
    if m is None:
        return [text]
    body = text[m.end() :]
    if m.group(1) == "all":
        return []
    if m.group(1) == "python":
        return [_code_call(body)]
    return [RawCall(m.group(1), body.strip())] if body.strip().startswith("{") else [text]


FUNCTIONARY_V32_SYNTAX = CallSyntax((">>>",), _fv32_end, _fv32_read, (), _fv32_leading)


# --- the formats and their detection ---------------------------------------------------------
@dataclass(frozen=True)
class ToolFormat:
    """A family's way of writing tool calls.

    Attributes:
        name: the family, as logs and tests name it.
        rule: how its template is recognised, in words.
        detect: the rule, as a test on a template's source.
        syntax: what its calls look like, for the parser.
        json_call: the text that opens and closes ONE call whose body is exactly the JSON object
            {"name": "...", "arguments": {...}}, for constrained decoding; None when the family's
            calls are not that shape (constrained calls then use the generic form).
        trigger: the text that starts a call (where a lazy grammar starts).
    """

    name: str
    rule: str
    detect: Callable[[str], bool] = field(repr=False)
    syntax: CallSyntax = field(repr=False)
    json_call: tuple[str, str] | None
    trigger: str

    def parser(self, new_id: Callable[[], str] = new_call_id, tools: Sequence[Tool] = ()) -> ToolCallParser:
        """A parser for one answer; `new_id` makes the id of a call that carries none; `tools`: the
        functions offered (their schemas say how a bare-text argument reads)."""
        return ToolCallParser(self.syntax, new_id, tools)


def _has(*markers: str) -> Callable[[str], bool]:
    return lambda src: all(m in src for m in markers)


def _any(*markers: str) -> Callable[[str], bool]:
    return lambda src: any(m in src for m in markers)


_HERMES_JSON = (GENERIC_OPEN + "\n", "\n" + GENERIC_CLOSE)

GPT_OSS = ToolFormat("gpt-oss", "has <|channel|>", _has("<|channel|>"), GPT_OSS_SYNTAX, None, " to=functions.")
DEEPSEEK_V3_1 = ToolFormat(
    "deepseek-v3.1", "has <｜tool▁calls▁begin｜> and no ```json fence",
    lambda src: DS_CALLS_BEGIN in src and "```json" not in src, DEEPSEEK_SYNTAX, None, DS_CALLS_BEGIN)
DEEPSEEK_R1 = ToolFormat("deepseek-r1", "has <｜tool▁calls▁begin｜>", _has(DS_CALLS_BEGIN), DEEPSEEK_SYNTAX, None,
                         DS_CALLS_BEGIN)
COMMAND_R7B = ToolFormat("command-r7b", "has <|START_ACTION|>", _has(R7B_OPEN), R7B_SYNTAX, None, R7B_OPEN)
KIMI_K2 = ToolFormat("kimi-k2", "has <|tool_calls_section_begin|> or tool_declare",
                     _any(KIMI_SECTION[0], "tool_declare"), KIMI_SYNTAX, None, KIMI_SECTION[0])
GLM_4_5 = ToolFormat("glm-4.5", "has <tool_call> and <arg_key>", _has(GENERIC_OPEN, "<arg_key>"), GLM_SYNTAX, None,
                     GENERIC_OPEN)
QWEN3_CODER = ToolFormat("qwen3-coder", "has <tool_call>, <function= and <parameter=",
                         _has(GENERIC_OPEN, "<function=", "<parameter="), QWEN3_CODER_SYNTAX, None, GENERIC_OPEN)
PHI4_MINI = ToolFormat("phi-4-mini", "has <|/tool_call|>, <|/tool|> or ' functools['",
                       _any(PHI_CLOSE, "<|/tool|>", " functools["), PHI4_SYNTAX, (GRANITE_OPEN, PHI_CLOSE),
                       GRANITE_OPEN)
GRANITE = ToolFormat("granite", "has <|tool_call|>", _has(GRANITE_OPEN), GRANITE_SYNTAX, (GRANITE_OPEN + "[", "]"),
                     GRANITE_OPEN)
HERMES = ToolFormat("hermes", "has <tool_call> (Hermes 2/3 Pro, Qwen 2.5, Qwen 3)", _has(GENERIC_OPEN),
                    HERMES_SYNTAX, _HERMES_JSON, GENERIC_OPEN)
FUNCTIONARY_V3_2 = ToolFormat("functionary-v3.2", "has >>>all", _has(">>>all"), FUNCTIONARY_V32_SYNTAX, None, ">>>")
FUNCTIONARY_V3_1 = ToolFormat("functionary-v3.1", "has <|start_header_id|> and <function=",
                              _has("<|start_header_id|>", "<function="), FUNCTIONARY_V31_SYNTAX, None, "<function=")
LLAMA_3 = ToolFormat("llama-3", "has ipython<|end_header_id|> or <|python_tag|>",
                     _any("ipython<|end_header_id|>", PYTHON_TAG), LLAMA_SYNTAX, None, '{"name"')
MISTRAL = ToolFormat("mistral", "has [TOOL_CALLS] and [ARGS] (Magistral, Devstral, Mistral Small 3.2+)",
                     _has(TOOL_CALLS, _ARGS), MISTRAL_SYNTAX, None, TOOL_CALLS)
MISTRAL_NEMO = ToolFormat("mistral-nemo", "has [TOOL_CALLS]", _has(TOOL_CALLS), MISTRAL_SYNTAX,
                          (TOOL_CALLS + "[", "]"), TOOL_CALLS)
GENERIC = ToolFormat("generic", "any other template, or none", lambda src: True, HERMES_SYNTAX, _HERMES_JSON,
                     GENERIC_OPEN)

FORMATS = (GPT_OSS, DEEPSEEK_V3_1, DEEPSEEK_R1, COMMAND_R7B, KIMI_K2, GLM_4_5, QWEN3_CODER, PHI4_MINI, GRANITE,
           HERMES, FUNCTIONARY_V3_2, FUNCTIONARY_V3_1, LLAMA_3, MISTRAL, MISTRAL_NEMO, GENERIC)


def detect_tool_format(template_source: str | None) -> ToolFormat:
    """The format a model writes its calls in, from the markers in its chat template: the first in
    `FORMATS` whose rule holds, or the generic form without a template."""
    if not template_source:
        return GENERIC
    return next(f for f in FORMATS if f.detect(template_source))
