"""The Jinja environment chat templates run in: transformers' semantics, in a bounded sandbox.

Model authors write chat templates for Hugging Face transformers' `apply_chat_template`, so
Prefill renders them the way it does: an immutable sandbox with `trim_blocks` and
`lstrip_blocks`, lenient undefined values (a template may test `tools` or
`message.tool_calls` without anyone defining them), loop controls (`{% break %}`,
`{% continue %}`), the `{% generation %}` block tag (its body renders as it is), and
transformers' own `tojson` (no HTML escaping, `ensure_ascii=False`, `indent`, `separators`,
`sort_keys`), `raise_exception`, `strftime_now`, and its guarded `dict` and `namespace`.

A template is code written by a stranger, so its work is bounded, and every bound refuses
before the memory is taken:

- time: a deadline checked on every Python call the render makes (a tracer on the rendering
  thread, so nested loops stop too); `range` is Jinja's own, capped at 100,000 items.
- one value (MAX_VALUE_CHARS): what `+`, `*`, `%` (printf widths and `*` too), `~` and slices
  would build; the text of a list written out or escaped; `str.format` and `format_map`, field
  by field with the widths in their specs; the string methods that can outgrow their string
  (`center`, `ljust`, `rjust`, `zfill`, `expandtabs`, `replace`, `join`, `translate`, `split`…)
  and `int.to_bytes`; the filters that can (`center`, `indent`, `join`, `replace`, `wordwrap`,
  `tojson`, `pprint`, `format`, `string`, `list`, `batch`, `slice`, `sum`, `sort`…); `lipsum`,
  `strftime_now` and `raise_exception`'s message. Any other call or filter can only build a
  small multiple of what it is given, and is counted once it returns.
- one number: MAX_INT_BITS, and exponents up to MAX_EXPONENT.
- one block (MAX_OUTPUT_CHARS): what a macro, `caller()`, a recursive loop, a `{% set %}` or a
  `{% filter %}` block renders; the rendered text has the same cap.
- the whole render: everything built, and every call's arguments, count against a budget of
  MAX_BUILT_CHARS plus BUILT_PER_INPUT_CHAR for each character of the chat, so a loop cannot
  keep thousands of values each just under the cap.

The estimates live in `sandbox_sizes`.
"""

from __future__ import annotations

import builtins
import datetime
import json
import re
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator
from string import Formatter
from types import FrameType
from typing import Any

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.runtime import BlockReference, Context, LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import _PassArg, generate_lorem_ipsum
from markupsafe import Markup, soft_str

from prefill.engine.prompt import sandbox_sizes as sizes
from prefill.engine.prompt.sandbox_sizes import (
    ENTRY,
    MAX_EXPONENT,
    MAX_INT_BITS,
    MAX_OUTPUT_CHARS,
    MAX_VALUE_CHARS,
    SLOT,
)

MAX_RENDER_SECONDS = 5.0
MAX_BUILT_CHARS = 32 * 1024 * 1024  # what one render may build in all, on top of BUILT_PER_INPUT_CHAR
BUILT_PER_INPUT_CHAR = 16  # for each character (or slot) of the chat it is given
_MB = 1024 * 1024
_SEQUENCES = (str, bytes, list, tuple)


class TemplateRefused(Exception):
    """Raised by a template's own `raise_exception(message)`."""


class TemplateTooCostly(Exception):
    """A template ran past its time or size bound (or was cancelled)."""


class _Budget:
    """What one render may build in all: every value it builds counts, kept or not."""

    def __init__(self, chars: int):
        self.chars = self.left = chars

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise TemplateTooCostly(f"the chat template built more than {self.chars // _MB} MB of values in all")


_render = threading.local()  # .budget: the _Budget of the render running on this thread, if any


def _check(size: int, cap: int = MAX_VALUE_CHARS, what: str = "a value") -> None:
    if size > cap:
        raise TemplateTooCostly(f"the chat template tried to build {what} of over {cap // _MB} MB")


def _spend(size: int) -> None:
    budget: _Budget | None = getattr(_render, "budget", None)
    if budget is not None:
        budget.spend(max(size, 0))


def _build(size: int, cap: int = MAX_VALUE_CHARS, what: str = "a value") -> None:
    """Refuse a value of `size` past `cap`, before it is built; count it against the render's budget."""
    _check(size, cap, what)
    _spend(size)


def _check_number(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise TemplateTooCostly(f"the chat template tried to build a number of over {MAX_INT_BITS * 3 // 10:,} digits")
    _spend(bits // 8)


def _spend_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """`f(*items)` copies the items some four times on its way into a macro (the call, the
    context, the macro, its `varargs`), and a callee may keep them down a recursion."""
    _spend(4 * (SLOT * len(args) + ENTRY * len(kwargs)))


def _units(value: Any) -> int:
    return len(value) * (1 if isinstance(value, (str, bytes)) else SLOT)


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}…{% endgeneration %}`: transformers marks assistant text with it; its body renders as it is."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    @staticmethod
    def _body(caller: Callable[[], str]) -> str:
        return caller()


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: int | None = None,
    separators: tuple[str, str] | None = None, sort_keys: bool = False,
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


_WORD = re.compile(r"\w+")


def _wordcount(s: Any) -> int:
    """Jinja's `wordcount`, counting without first making a list of every word."""
    return sum(1 for _ in _WORD.finditer(soft_str(s)))


def _raise_exception(message: Any) -> None:
    _build(sizes.text_size(message))
    raise TemplateRefused(str(message))


def _strftime_now(fmt: str) -> str:
    if isinstance(fmt, str):
        _build(len(fmt) + 64 * fmt.count("%"))
    return datetime.datetime.now().strftime(fmt)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # Jinja's names
    words = sizes.as_count(n) * builtins.max(sizes.as_count(min), sizes.as_count(max))
    _build(16 * words + 16 * sizes.as_count(n))  # a word and its comma, a paragraph's <p>
    return generate_lorem_ipsum(n, html, min, max)


class _DictMaker:
    """`dict(...)` and `dict.fromkeys(...)` for templates, without handing them the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    @staticmethod
    def fromkeys(*args: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args)


class _Namespace(jinja2.utils.Namespace):
    """Jinja's `namespace()`, refusing attribute names that start with an underscore."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's own signature trick
        self, rest = args[0], args[1:]
        for name in dict(*rest, **kwargs):
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, *rest, **kwargs)

    def __setitem__(self, name: str, value: Any) -> None:
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"a namespace cannot hold {name!r}")


class _SizedFields(Formatter):
    """`str.format` that sizes each field (its value, its spec's widths) before formatting it."""

    escapes = 1  # Markup's formatter escapes a value: up to six times as long
    built = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self.built = len(format_string)
        _build(self.built)
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion in ("r", "a"):
            _check(sizes.repr_size(value))
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        added = sizes.field_size(value) * self.escapes + sizes.spec_size(format_spec)
        self.built += added
        _check(self.built)
        _spend(added)
        return super().format_field(value, format_spec)


class _BoundedFormatter(_SizedFields, SandboxedFormatter):
    pass


class _BoundedEscapeFormatter(_SizedFields, SandboxedEscapeFormatter):
    escapes = 6


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, sending `~` and slices through the sandbox's size checks."""

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            func_name = "(markup_join if context.eval_ctx.volatile else str_join)"
        else:
            func_name = "markup_join" if frame.eval_ctx.autoescape else "str_join"
        self.write(f"{func_name}(environment.checked_pieces((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("), context.eval_ctx.autoescape))")

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if not isinstance(node.arg, nodes.Slice):
            return super().visit_Getitem(node, frame)
        self.write("environment.sliced(")
        self.visit(node.node, frame)
        self.write(", slice(")
        for part in (node.arg.start, node.arg.stop, node.arg.step):
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
            self.write(", ")
        self.write("))")
        return None


_COUNTED_INSIDE = (Macro, LoopContext, BlockReference)  # what they return was counted by `concat`


def _method_size(obj: Any) -> Callable[..., int] | None:
    receiver = getattr(obj, "__self__", None)
    if isinstance(receiver, (str, bytes, int)):
        return sizes.METHOD_SIZES.get(getattr(obj, "__name__", ""))
    return None


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
        raise TemplateTooCostly(f"the chat template raised a number to the power {exponent}")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        _check_number(base.bit_length() * exponent)


def _check_repeat(left: Any, right: Any) -> None:
    item, count = (left, right) if isinstance(left, _SEQUENCES) else (right, left)
    if isinstance(item, _SEQUENCES) and isinstance(count, int):
        _build(_units(item) * max(count, 0))
    elif isinstance(left, int) and isinstance(right, int):
        _check_number(left.bit_length() + right.bit_length())


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """An immutable sandbox that sizes what a template builds before building it (see the module)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BoundedCodeGenerator

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "**":
            _check_power(left, right)
        elif operator_ == "*":
            _check_repeat(left, right)
        elif operator_ == "+":
            if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
                _build(_units(left) + _units(right))
        elif isinstance(left, (str, bytes)):  # printf-style: widths, precisions, `*`
            _build(sizes.printf_size(left, right) * (6 if isinstance(left, Markup) else 1))
        return self.binop_table[operator_](left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not self.is_safe_callable(obj):
            raise jinja2.exceptions.SecurityError(f"{obj!r} is not safely callable")
        named = {k: v for k, v in kwargs.items() if k not in ("_loop_vars", "_block_vars")}  # Jinja's own
        _spend_arguments(args, named)
        estimate = _method_size(obj)
        if estimate is not None:
            args = tuple(list(a) if isinstance(a, Iterator) else a for a in args)  # read once, for both
            _build(estimate(obj.__self__, *args, **named) * (6 if isinstance(obj.__self__, Markup) else 1))
        result = context.call(obj, *args, **kwargs)
        if estimate is None and not isinstance(obj, _COUNTED_INSIDE):
            _build(sizes.cost(result))
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja's own, with formatters that size each field first."""
        if not isinstance(value, (types.MethodType, types.BuiltinMethodType)):
            return None
        receiver = value.__self__
        if value.__name__ not in ("format", "format_map") or not isinstance(receiver, str):
            return None
        formatter: SandboxedFormatter
        if isinstance(receiver, Markup):
            formatter = _BoundedEscapeFormatter(self, escape=receiver.escape)
        else:
            formatter = _BoundedFormatter(self)
        is_format_map = value.__name__ == "format_map"

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map and (kwargs or len(args) != 1):
                raise TypeError("format_map() takes exactly one argument")
            positional, named = ((), args[0]) if is_format_map else (args, kwargs)
            return type(receiver)(formatter.vformat(receiver, positional, named))

        return wrapper

    def checked_pieces(self, pieces: tuple[Any, ...], autoescape: bool) -> tuple[Any, ...]:
        """`a ~ b`: the pieces, once what joining their text builds is known to fit."""
        _build(sum(sizes.text_size(p) * (6 if autoescape and not hasattr(p, "__html__") else 1) for p in pieces))
        return pieces

    def sliced(self, obj: Any, index: slice) -> Any:
        if isinstance(obj, _SEQUENCES):
            _build(len(range(*index.indices(len(obj)))) * (1 if isinstance(obj, (str, bytes)) else SLOT))
        return obj[index]

    def concat(self, pieces: Iterable[str]) -> str:
        """What a macro, `caller()`, a `{% set %}` or `{% filter %}` block rendered, capped like the output."""
        parts = list(pieces)
        _build(sum(map(len, parts)), MAX_OUTPUT_CHARS, "a block")
        return "".join(parts)


@jinja2.pass_eval_context
def _finalize(eval_ctx: jinja2.nodes.EvalContext, value: Any) -> Any:
    """`{{ value }}`: the text of a list, or escaped text, is sized before it is written."""
    if isinstance(value, str) and not eval_ctx.autoescape:
        return value
    _build(sizes.text_size(value) * (6 if eval_ctx.autoescape and not hasattr(value, "__html__") else 1))
    return value


def _leading(pass_arg: _PassArg | None, context: Context) -> tuple[Any, ...]:
    """What Jinja hands a filter ahead of its value."""
    if pass_arg is _PassArg.context:
        return (context,)
    if pass_arg is _PassArg.eval_context:
        return (context.eval_ctx,)
    return (context.environment,) if pass_arg is _PassArg.environment else ()


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that sizes what it will build first (or, where it can only build a small multiple
    of its input, counts what it built)."""
    estimate = sizes.FILTER_SIZES.get(name)
    reads_items = name in sizes.READS_ITEMS
    pass_arg = _PassArg.from_obj(func)

    # pass_context also keeps Jinja from running the filter at compile time, outside every bound.
    @jinja2.pass_context
    def bounded(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        _spend_arguments(args, kwargs)
        if reads_items and isinstance(value, Iterator):
            value = list(value)
        if estimate is not None:
            _build(estimate(value, *args, **kwargs))
        result = func(*_leading(pass_arg, context), value, *args, **kwargs)
        if estimate is None:
            _build(sizes.cost(result))
        return result

    return bounded


def make_environment() -> jinja2.Environment:
    env = _BoundedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
        finalize=_finalize,
    )
    env.filters["tojson"] = _tojson
    env.filters["wordcount"] = _wordcount
    env.filters.update({name: _bounded_filter(name, f) for name, f in env.filters.items()})
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["lipsum"] = _lipsum
    env.globals["dict"] = _DictMaker()
    env.globals["namespace"] = _Namespace
    return env


class _Deadline:
    """Stops the rendering thread at its next Python call once time is up or `cancel` is set."""

    def __init__(self, seconds: float, cancel: threading.Event | None):
        self.end = time.monotonic() + seconds
        self.cancel = cancel

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and (time.monotonic() > self.end or (self.cancel is not None and self.cancel.is_set())):
            raise TemplateTooCostly("the chat template took too long")
        return None  # no line tracing: the call events are enough and cost far less


def render_bounded(
    template: jinja2.Template, variables: dict[str, Any],
    seconds: float = MAX_RENDER_SECONDS, cancel: threading.Event | None = None,
) -> str:
    """Render with bounded time, values and output. Raises TemplateTooCostly past any bound."""
    previous_trace, previous_budget = sys.gettrace(), getattr(_render, "budget", None)
    _render.budget = _Budget(MAX_BUILT_CHARS + BUILT_PER_INPUT_CHAR * sizes.held_size(variables))
    sys.settrace(_Deadline(seconds, cancel))
    try:
        return _join_bounded(template.generate(**variables))
    finally:
        sys.settrace(previous_trace)
        _render.budget = previous_budget


def _join_bounded(pieces: Iterable[str]) -> str:
    """The rendered text, capped; joined a few thousand pieces at a time, so a template writing
    one character per piece costs its text, not an object per character."""
    done: list[str] = []
    batch: list[str] = []
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > MAX_OUTPUT_CHARS:
            raise TemplateTooCostly("the chat template wrote more than 8 MB of prompt")
        batch.append(piece)
        if len(batch) == 4096:
            done.append("".join(batch))
            batch.clear()
    return "".join(done) + "".join(batch)
