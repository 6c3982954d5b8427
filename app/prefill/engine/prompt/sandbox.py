"""The Jinja environment chat templates run in: transformers' semantics, in a bounded sandbox.

Model authors write chat templates for Hugging Face transformers' `apply_chat_template`, so
Prefill renders them the way it does: an immutable sandbox with `trim_blocks` and
`lstrip_blocks`, lenient undefined values (a template may test `tools` or
`message.tool_calls` without anyone defining them), loop controls (`{% break %}`,
`{% continue %}`), the `{% generation %}` block tag (its body renders as it is), and
transformers' own `tojson` (no HTML escaping, `ensure_ascii=False`, `indent`, `separators`,
`sort_keys`), `raise_exception`, `strftime_now`, and its guarded `dict` and `namespace`.

A template is code written by a stranger, so its work is bounded: a deadline checked on
every Python call the render makes (a tracer on the rendering thread, so nested loops stop
too), a cap on what one `*`, `**` or `+` may build, and a cap on the rendered text.
"""

from __future__ import annotations

import datetime
import json
import operator
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_RENDER_SECONDS = 5.0
MAX_OUTPUT_CHARS = 8 * 1024 * 1024  # far above any context: 128k tokens are ~600k characters
MAX_VALUE_CHARS = 4 * 1024 * 1024  # one string or list a template builds with * or +
MAX_EXPONENT = 4096


class TemplateRefused(Exception):
    """Raised by a template's own `raise_exception(message)`."""


class TemplateTooCostly(Exception):
    """A template ran past its time or size bound (or was cancelled)."""


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


def _raise_exception(message: str) -> None:
    raise TemplateRefused(str(message))


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


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


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """An immutable sandbox whose `*`, `**` and `+` cannot build values past MAX_VALUE_CHARS."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def call_binop(self, context: jinja2.runtime.Context, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "**":
            if isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
                raise TemplateTooCostly(f"the chat template raised a number to the power {right}")
            return operator.pow(left, right)
        if operator_ == "*":
            count = right if isinstance(left, (str, list, tuple)) else left
            item = left if isinstance(left, (str, list, tuple)) else right
            if isinstance(count, int) and _size(item) * max(count, 0) > MAX_VALUE_CHARS:
                raise TemplateTooCostly("the chat template tried to build a value of over 4 MB")
            return operator.mul(left, right)
        if _size(left) + _size(right) > MAX_VALUE_CHARS:
            raise TemplateTooCostly("the chat template tried to build a value of over 4 MB")
        return operator.add(left, right)


def make_environment() -> jinja2.Environment:
    env = _BoundedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
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
    """Render with bounded time and output. Raises TemplateTooCostly past either bound."""
    previous = sys.gettrace()
    sys.settrace(_Deadline(seconds, cancel))
    try:
        return _join_bounded(template.generate(**variables))
    finally:
        sys.settrace(previous)


def _join_bounded(pieces: Iterable[str]) -> str:
    out: list[str] = []
    total = 0
    for piece in pieces:
        total += len(piece)
        if total > MAX_OUTPUT_CHARS:
            raise TemplateTooCostly("the chat template wrote more than 8 MB of prompt")
        out.append(piece)
    return "".join(out)
