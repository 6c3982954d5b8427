"""Grammars that keep an answer to JSON or to tool calls, and which one a request needs.

The JSON-schema to GBNF conversion is llama-cpp-python's (`llama_cpp.llama_grammar`), with what
it lacks here added: strings that JSON accepts (no raw control characters), integer bounds
(`minimum`, `maximum` and their exclusive forms), lengths and item counts as GBNF repetitions
(its nested groups grow the grammar and llama.cpp's parse recursion with the count), literals
with their backslashes escaped, `true` and `false` as schemas, and `$ref`s kept apart per tool.
Every fault of a schema becomes a `GrammarError` that says what is wrong, and what llama.cpp
would choke on (counts over its 2000, a grammar of megabytes) is refused here first.

`constraint_for` reads a `ChatRequest`: a response format gives the JSON grammar; a required or
named tool choice gives the call grammar; "auto" gives the call grammar made lazy on the model's
call marker, so the model may still answer in words.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from prefill.engine.errors import GrammarError
from prefill.engine.llama.grammar_sampler import Constraint
from prefill.engine.prompt.grammar_cost import price_pattern
from prefill.engine.request import ChatRequest, Tool

__all__ = ["GENERIC_WRAP", "Constraint", "constraint_for", "json_object_grammar", "schema_grammar",
           "tool_call_grammar"]

GENERIC_WRAP = ("<tool_call>\n", "\n</tool_call>")  # the call as Hermes-style templates write it
MAX_GRAMMAR_CHARS = 256 * 1024  # a grammar's size grows with the schema's (enums, properties, tools)
_MAX_DIGITS = 16  # the converter's own integers have at most 16 digits
# JSON forbids raw control characters in strings; the converter's rule lets them through
_JSON_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
_CALL_RULE = "tool-call"
_ANSWER_RULE = "answer"


def json_object_grammar() -> str:
    """GBNF for any JSON object."""
    return schema_grammar('{"type": "object"}')


def schema_grammar(schema_json: str) -> str:
    """GBNF for the JSON values `schema_json` (a JSON schema, as text) admits."""
    return _schema_grammar(_parse(schema_json, "the schema"))


def _schema_grammar(schema: Any) -> str:
    builder = _Builder()
    root = builder.add(_tag_refs(schema, "schema"), "", "stdin")  # the converter names it root
    if root != "root":
        builder.rule("root", root)
    return builder.text()


def tool_call_grammar(tools: Sequence[Tool], wrap: tuple[str, str], several: bool) -> str:
    """GBNF for one call of one of `tools` (one or more when `several`), each written as
    `wrap[0] + {"name": <a tool's name>, "arguments": <that tool's arguments>} + wrap[1]`."""
    builder = _Builder()
    builder.rule("root", _calls(builder, tools, wrap, several))
    return builder.text()


def constraint_for(request: ChatRequest, wrap: tuple[str, str] | None, trigger: str) -> Constraint | None:
    """What the sampler must keep the answer inside for `request`, or None for free text.

    Args:
        request: its tools, tool choice and response format decide.
        wrap: the model's text around one call (None: the generic `<tool_call>` form).
        trigger: where a call begins in the model's text, for tool choice "auto": the text
            before it is free. Empty: `wrap[0]` without its surrounding whitespace.

    "required" or a named tool: one or more calls of those tools (one where `parallel_tool_calls` is
    off), after which the model may only end. "auto" with tools: the same,
    lazy on `trigger`; with a response format as well, the answer is either calls or the JSON
    (a grammar from the start, since the answer's first token decides). Without tools (or with
    "none"): the response format's JSON, or None.
    """
    wrap = wrap or GENERIC_WRAP
    tools = request.offered_tools
    fmt = request.response_format
    several = request.parallel_tool_calls  # else one call, and then only the end
    if tools and request.tool_choice == "required":
        return Constraint(tool_call_grammar(tools, wrap, several))
    if tools and request.tool_choice != "auto":  # one named tool: one call of it
        return Constraint(tool_call_grammar([t for t in tools if t.name == request.tool_choice], wrap, several=False))
    if tools:
        if fmt is not None:
            builder = _Builder()
            calls = builder.add_rule("calls", _calls(builder, tools, wrap, several))
            answer = builder.add(_tag_refs(_format_schema(fmt.kind, fmt.schema), "answer"), _ANSWER_RULE, "stdin")
            builder.rule("root", f"{calls} | {answer}")
            return Constraint(builder.text())
        trigger = trigger or wrap[0].strip()
        if not trigger:
            raise ValueError("a lazy tool-call grammar needs a trigger: the calls have no opening marker")
        return Constraint(tool_call_grammar(tools, wrap, several), lazy_trigger=trigger)
    if fmt is not None:
        return Constraint(_schema_grammar(_format_schema(fmt.kind, fmt.schema)))
    return None


def _format_schema(kind: str, schema: str) -> Any:
    return {"type": "object"} if kind == "json_object" else _parse(schema, "the response format's schema")


def _calls(builder: _Builder, tools: Sequence[Tool], wrap: tuple[str, str], several: bool) -> str:
    """The rule body for the wrapped call (or calls) of `tools`."""
    if not tools:
        raise GrammarError("a tool-call grammar needs at least one tool")
    choices = []
    for i, tool in enumerate(tools):
        params = _tag_refs(_parse(tool.parameters, f"the parameters of tool {tool.name!r}"), f"tool{i}")
        builder.add_refs(params, f"tool{i}")  # its #/... references are to its own schema
        choices.append({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": params},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    call = builder.add({"oneOf": choices} if len(choices) > 1 else choices[0], _CALL_RULE, "")
    # the markers as the family writes them, with the blank space around the JSON left to the model
    # (Hermes-style calls come with and without the newlines)
    open_, close = (_literal(w.strip()) if w.strip() else "" for w in wrap)
    one = f'{open_} [ \t\n]{{0,2}} {call} [ \t\n]{{0,2}} {close}'.strip()
    block = builder.add_rule("call-block", one)
    return f'{block} ("\\n"? {block})*' if several else block


def _parse(text: str, what: str) -> Any:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError) as e:
        raise GrammarError(f"{what} is not valid JSON: {e}") from e
    except RecursionError as e:
        raise GrammarError(f"{what} nests too deeply") from e
    if not isinstance(value, (dict, bool)):
        raise GrammarError(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


def _literal(text: str) -> str:
    """A GBNF string literal for `text` ("" for none): quote, backslash and control characters
    escaped (the converter's own leaves a backslash as it is, which GBNF reads as an escape)."""
    if not text:
        return ""
    return '"' + "".join(_ESCAPES.get(c) or (f"\\x{ord(c):02X}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
                         for c in text) + '"'


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class _Builder:
    """One converter, so several schemas share rule names without clashing, and its faults worded."""

    def __init__(self) -> None:
        self.conv = _converter_class()(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)

    def add(self, schema: Any, name: str, url: str) -> str:
        """Convert `schema`; the name of its rule."""
        try:
            if url:
                schema = self.conv.resolve_refs(schema, url)
            return str(self.conv.visit(schema, name))
        except GrammarError:
            raise
        except RecursionError as e:
            raise GrammarError("the schema nests too deeply (or refers to itself) to make a grammar") from e
        except KeyError as e:
            raise GrammarError(f"the schema cannot be made into a grammar: it lacks {e}") from e
        except (AssertionError, ValueError, TypeError, AttributeError, IndexError) as e:
            raise GrammarError(f"the schema cannot be made into a grammar: {e or type(e).__name__}") from e

    def add_refs(self, schema: Any, url: str) -> None:
        try:
            self.conv.resolve_refs(schema, url)
        except (AssertionError, ValueError, KeyError, TypeError) as e:
            raise GrammarError(f"the schema's references cannot be followed: {e}") from e

    def add_rule(self, name: str, body: str) -> str:
        return str(self.conv._add_rule(name, body))

    def rule(self, name: str, body: str) -> None:
        self.conv._rules[name] = body

    def text(self) -> str:
        rules: dict[str, str] = self.conv._rules
        if rules.get("char") == _CONVERTER_CHAR:
            rules["char"] = _JSON_CHAR
        grammar = str(self.conv.format_grammar())
        if len(grammar) > MAX_GRAMMAR_CHARS:
            raise GrammarError(f"the schema makes a grammar of {len(grammar)} characters, more than the "
                               f"{MAX_GRAMMAR_CHARS} allowed (large minItems, maxItems or maxLength?)")
        return grammar


_CONVERTER_CHAR = r'[^"\\] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


def _tag_refs(schema: Any, tag: str) -> Any:
    """A copy of `schema` whose local `$ref`s (#/...) point into its `$defs` under names that begin
    with `tag`: the converter names a referenced rule by the last part of its path, so two tools'
    `#/$defs/Unit` would otherwise become one rule."""
    if not isinstance(schema, dict):
        return schema
    original = schema
    out = copy.deepcopy(schema)
    defs: dict[str, Any] = {}
    renamed: dict[str, str] = {}
    queue: list[str] = []

    def target(ref: str) -> Any:
        node: Any = original
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise GrammarError(f"the reference {ref!r} points at nothing")
        return copy.deepcopy(node)

    def rename(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                rename(item)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (ref.startswith("#/") or ref == "#"):
                if ref not in renamed:
                    renamed[ref] = key = f"{tag}-{len(renamed)}-{ref.rsplit('/', 1)[-1] if ref != '#' else 'root'}"
                    defs[key] = target(ref)
                    queue.append(key)
                node["$ref"] = f"#/$defs/{renamed[ref]}"
            for value in node.values():
                rename(value)

    try:
        rename(out)
        while queue:
            rename(defs[queue.pop()])
    except RecursionError as e:
        raise GrammarError("the schema nests too deeply to make a grammar") from e
    for key in defs:
        _check_cycle(defs, key, [key], {v: k for k, v in renamed.items()})
    if defs:
        existing = out.get("$defs")
        out["$defs"] = {**(existing if isinstance(existing, dict) else {}), **defs}
    return out


# Where a schema's value begins with its own text: a reference reached without passing one of these
# keys would be a rule that begins with itself (llama.cpp refuses left recursion)
_INSIDE_A_VALUE = frozenset({"properties", "additionalProperties", "items", "prefixItems", "$defs", "definitions"})


def _check_cycle(defs: dict[str, Any], key: str, path: list[str], original: dict[str, str]) -> None:
    """GrammarError when `defs[key]` reaches a reference back along `path` before any object or array
    opens: a value that would have to begin with itself. (A reference through a property or an item
    is a recursive schema a grammar follows: a tree, a linked list.)"""
    def direct(node: Any) -> list[str]:
        if isinstance(node, list):
            return [r for item in node for r in direct(item)]
        if not isinstance(node, dict):
            return []
        ref = node.get("$ref")
        found = [ref.rsplit("/", 1)[-1]] if isinstance(ref, str) and ref.startswith("#/$defs/") else []
        return found + [r for k, v in node.items() if k not in _INSIDE_A_VALUE for r in direct(v)]

    for nxt in direct(defs[key]):
        if nxt not in defs:
            continue
        if nxt in path:
            loop = " -> ".join(original.get(k, k) for k in [*path[path.index(nxt):], nxt])
            raise GrammarError(f"the schema refers to itself ({loop}) before any object or array opens: "
                               "a value that must begin with itself can never be written")
        if len(path) < 64:
            _check_cycle(defs, nxt, [*path, nxt], original)


@functools.cache
def _converter_class() -> type[Any]:
    """llama-cpp-python's SchemaConverter with what Prefill needs added (imported on first use)."""
    from llama_cpp.llama_grammar import PRIMITIVE_RULES, RESERVED_NAMES, SchemaConverter

    class Converter(SchemaConverter):
        def visit(self, schema: Any, name: str) -> Any:
            if schema is True:
                schema = {}
            elif schema is False:
                raise GrammarError("a schema of false admits no value")
            if not isinstance(schema, dict):
                raise GrammarError(f"a schema must be an object, not {json.dumps(schema)[:60]}")
            rule_name = name + "-" if name in RESERVED_NAMES else name or "root"
            schema = _without_forbidden(schema)
            plain = not any(k in schema for k in ("$ref", "oneOf", "anyOf", "allOf", "const", "enum"))
            kind = schema.get("type")
            bounds = _integer_bounds(schema) if plain else None
            if bounds is not None:
                return self._add_rule(rule_name, _integer_rule(*bounds) + " space")  # type: ignore[no-untyped-call]
            if isinstance(schema.get("pattern"), str):
                _check_pattern(schema["pattern"])
            # Lengths and counts as GBNF repetitions ({m,n}): the converter nests one group per
            # repetition, and llama.cpp parses each group by recursion, so a maxLength of some
            # thousands would run the thread out of stack (and its grammar is 20 times longer).
            lengths = _counts(schema, "minLength", "maxLength")
            if plain and kind == "string" and lengths and "pattern" not in schema and "format" not in schema:
                char = self._add_primitive("char", PRIMITIVE_RULES["char"])
                return self._add_rule(  # type: ignore[no-untyped-call]
                    rule_name, f'"\\"" {_repeat(char, *lengths)} "\\"" space')
            counts = _counts(schema, "minItems", "maxItems")
            if plain and kind in (None, "array") and schema.get("items") is False and "prefixItems" not in schema:
                counts = (0, 0)  # no item may be there: []
            if plain and kind in (None, "array") and counts and isinstance(schema.get("items"), (dict, bool)):
                low, high = counts
                item = self.visit(schema["items"], f"{name}{'-' if name else ''}item") if high != 0 else ""
                if high == 0:
                    body = ""
                elif low == 0:
                    rest = _repeat(f'("," space {item})', 0, None if high is None else high - 1)
                    body = f"({item} {rest})?"
                else:
                    rest = _repeat(f'("," space {item})', low - 1, None if high is None else high - 1)
                    body = f"{item} {rest}"
                return self._add_rule(rule_name, f'"[" space {body} "]" space')  # type: ignore[no-untyped-call]
            return super().visit(schema, name)  # type: ignore[no-untyped-call]

        def _format_literal(self, literal: str) -> str:
            return _literal(literal) or '""'

        def resolve_refs(self, schema: Any, url: str) -> Any:
            """Every local reference made absolute and registered. (llama-cpp-python's own walk stops
            at a node with a new reference, so the references inside a root `$ref`'s own `$defs`,
            a recursive schema's, were left behind and reported as missing.)"""
            refs: dict[str, Any] = self._refs

            def walk(node: Any) -> None:
                if isinstance(node, list):
                    for item in node:
                        walk(item)
                    return
                if not isinstance(node, dict):
                    return
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/"):
                    full = node["$ref"] = f"{url}{ref}"
                    if full not in refs:
                        target: Any = schema
                        for part in ref[2:].split("/"):
                            if not isinstance(target, dict) or part not in target:
                                raise GrammarError(f"the reference {ref!r} points at nothing")
                            target = target[part]
                        refs[full] = target
                elif ref is not None and not (isinstance(ref, str) and ref.startswith(f"{url}#/")):
                    raise GrammarError(f"the schema cannot be made into a grammar: its reference {str(ref)[:80]!r} "
                                       "points outside it (only references inside the schema, #/..., are followed)")
                for key, value in node.items():
                    if key != "$ref":
                        walk(value)

            walk(schema)
            return schema

    return Converter


def _without_forbidden(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without the properties whose schema is false (they may not appear)."""
    props = schema.get("properties")
    if not isinstance(props, dict) or all(v is not False for v in props.values()):
        return schema
    forbidden = {k for k, v in props.items() if v is False}
    required = schema.get("required")
    if isinstance(required, list) and forbidden & set(required):
        raise GrammarError(f"the required property {sorted(forbidden & set(required))[0]!r} has a schema of false")
    return {**schema, "properties": {k: v for k, v in props.items() if k not in forbidden}}


MAX_REPEAT = 2000  # llama.cpp holds no more: a {0,2001} here took any number (its MAX_REPETITION_THRESHOLD)


def _counts(schema: dict[str, Any], low_key: str, high_key: str) -> tuple[int, int | None] | None:
    """(minimum, maximum or None) of a length or a count the schema sets, checked; None if neither."""
    if low_key not in schema and high_key not in schema:
        return None
    values = []
    for key in (low_key, high_key):
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise GrammarError(f"{key} must be a whole number of zero or more, not {json.dumps(value)[:40]}")
        if value is not None and value > MAX_REPEAT:
            raise GrammarError(f"{key} of {value} is more than the {MAX_REPEAT} a grammar can hold")
        values.append(value)
    low, high = values[0] or 0, values[1]
    if high is not None and low > high:
        raise GrammarError(f"{low_key} {low} is more than {high_key} {high}")
    return low, high


def _repeat(item: str, low: int, high: int | None) -> str:
    """`item` repeated from `low` to `high` (None: no limit) times, in GBNF."""
    if high == 0:
        return ""
    if high is None:
        return f"{item}{{{low},}}" if low else f"{item}*"
    return f"{item}{{{low},{high}}}"


def _check_pattern(pattern: str) -> None:
    """The converter spells a regex's {m,n} out as nested groups: refuse counts that would not fit,
    then what llama.cpp would take too long to follow (grammar_cost.py prices it)."""
    for m in re.finditer(r"\{(\d+)(?:,(\d*))?\}", pattern):
        if max(len(m.group(1)), len(m.group(2) or "")) > 6 or \
                max(int(m.group(1)), int(m.group(2) or 0)) > _MAX_PATTERN_REPEAT:
            raise GrammarError(f"the pattern's repetition {m.group(0)} is more than the "
                               f"{_MAX_PATTERN_REPEAT} a grammar can hold")
    price_pattern(pattern)


_MAX_PATTERN_REPEAT = 100


def _integer_bounds(schema: dict[str, Any]) -> tuple[int | None, int | None] | None:
    """(lowest, highest) an integer schema allows, or None when it is not a bounded integer."""
    if schema.get("type") != "integer":
        return None
    lo = hi = None
    if _number(schema.get("minimum")) is not None:
        lo = math.ceil(schema["minimum"])
        if schema.get("exclusiveMinimum") is True:  # draft 4
            lo = math.floor(schema["minimum"]) + 1
    if _number(schema.get("exclusiveMinimum")) is not None:
        lo = max(lo if lo is not None else -math.inf, math.floor(schema["exclusiveMinimum"]) + 1)
    if _number(schema.get("maximum")) is not None:
        hi = math.floor(schema["maximum"])
        if schema.get("exclusiveMaximum") is True:
            hi = math.ceil(schema["maximum"]) - 1
    if _number(schema.get("exclusiveMaximum")) is not None:
        hi = min(hi if hi is not None else math.inf, math.ceil(schema["exclusiveMaximum"]) - 1)
    if lo is None and hi is None:
        return None
    lo_i = None if lo is None else int(lo)
    hi_i = None if hi is None else int(hi)
    if lo_i is not None and hi_i is not None and lo_i > hi_i:
        raise GrammarError(f"no integer lies between the minimum {lo_i} and the maximum {hi_i}")
    return lo_i, hi_i


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _integer_rule(lo: int | None, hi: int | None) -> str:
    """GBNF for the decimal integers from `lo` to `hi` (None: unbounded), without leading zeros."""
    alts = []
    if lo is None or lo < 0:  # the negative part: "-" and a natural from -min(hi, -1) to -lo
        first = 1 if hi is None or hi >= 0 else -hi
        alts.append(f'"-" ({_naturals(first, None if lo is None else -lo)})')
    if hi is None or hi >= 0:
        alts.append(_naturals(0 if lo is None else max(lo, 0), hi))
    return "(" + " | ".join(f"({a})" for a in alts) + ")"


def _naturals(a: int, b: int | None) -> str:
    """GBNF alternatives for the naturals from `a` to `b` (None: any number of digits up to 16)."""
    limit = 10**_MAX_DIGITS - 1
    if b is not None and b >= limit:
        b = None
    top = limit if b is None else b
    a = min(a, limit)
    alts = []
    digits = len(str(a))
    last = len(str(top)) if b is not None else digits
    for d in range(digits, last + 1):
        x = max(a, 10 ** (d - 1) if d > 1 else 0)
        y = min(top, 10**d - 1)
        if x <= y:
            alts.append(_same_length(str(x), str(y)))
    if b is None and digits < _MAX_DIGITS:
        alts.append(f"[1-9] [0-9]{{{digits},{_MAX_DIGITS - 1}}}")
    return " | ".join(f"({a})" for a in alts)


def _same_length(x: str, y: str) -> str:
    """GBNF for the digit strings of one length from `x` to `y` (leading zeros as written)."""
    if len(x) == 1:
        return _digits(x, y)
    if x[0] == y[0]:
        return f'"{x[0]}" ({_same_length(x[1:], y[1:])})'
    rest = len(x) - 1
    low_full, high_full = x[1:] == "0" * rest, y[1:] == "9" * rest
    alts = []
    if not low_full:
        alts.append(f'"{x[0]}" ({_same_length(x[1:], "9" * rest)})')
    first = x[0] if low_full else chr(ord(x[0]) + 1)
    last = y[0] if high_full else chr(ord(y[0]) - 1)
    if first <= last:
        alts.append(f"{_digits(first, last)} [0-9]{{{rest}}}")
    if not high_full:
        alts.append(f'"{y[0]}" ({_same_length("0" * rest, y[1:])})')
    return " | ".join(f"({a})" for a in alts)


def _digits(first: str, last: str) -> str:
    return f'"{first}"' if first == last else f"[{first}-{last}]"
