"""Typed, documented, checked settings fields: the machinery behind every settings section.

A section is a frozen dataclass deriving from ``Section``. Each field declares its default
and its rules in ``metadata=doc(...)``; the type hint gives the rest (a ``Literal`` lists
the choices, ``int``/``float`` take the range in ``doc``). Construction checks every field,
then the section's cross-field ``rules()``, and raises ``InvalidSetting`` naming the field
to reset. The store reads files with these rules, the dialog takes its editors, choices
and ranges from them, and the CLI its defaults and choices: the rules live here only.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from prefill.engine.errors import InvalidSetting


def doc(
    text: str,
    *,
    label: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    step: float | None = None,
    secret: bool = False,
    folder: bool = False,
    legacy: Mapping[Any, Any] | None = None,
) -> dict[str, Any]:
    """Build a setting's field metadata: ``field(default=..., metadata=doc("..."))``.

    Args:
        text: One line for a settings dialog's tooltip or ``--help``.
        label: A short name for a form ("Top-p"); defaults to the field name.
        minimum: The smallest number allowed (numbers only).
        maximum: The largest number allowed (numbers only).
        above: Numbers must be greater than this (an open lower bound).
        step: A spin box's step (numbers only).
        secret: Kept out of logs and messages; also pass ``repr=False`` to ``field``.
        folder: The text is a folder path (a dialog offers a folder chooser).
        legacy: Values older versions stored, each with the value it stands for today
            (``{True: "on"}``): read as that value, never reset with a notice.
    """
    return {
        "doc": text, "label": label, "min": minimum, "max": maximum, "above": above,
        "step": step, "secret": secret, "folder": folder, "legacy": dict(legacy or {}),
    }


def choices(hint: Any) -> tuple[str, ...]:
    """The words a field accepts: a Literal's values, also inside ``Literal[...] | int``."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    out: list[str] = []
    for option in typing.get_args(hint) if union else (hint,):
        if typing.get_origin(option) is Literal:
            out.extend(typing.get_args(option))
    return tuple(out)


def check_value(key: str, hint: Any, meta: Mapping[str, Any], value: Any) -> Any:
    """Return ``value`` as the field stores it (an int widened for a float field, a list
    made a tuple, an older version's value as it reads today) or raise InvalidSetting with a
    sentence that names ``key``."""
    if meta.get("own_check"):  # a field its section checks itself (in __post_init__): not a setting's shape
        return value
    for old, new in (meta.get("legacy") or {}).items():
        if type(value) is type(old) and value == old:  # type first: True == 1, and 1 is no True
            value = new
            break
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = typing.get_args(hint) if union else (hint,)
    for option in options:
        if typing.get_origin(option) is Literal:
            if isinstance(value, str) and value in typing.get_args(option):
                return value
        elif option in (int, float) and _is_number(value, integral=option is int):
            _check_range(key, meta, value)
            return option(value)
        elif (option is bool and isinstance(value, bool)) or (option is str and is_text(value)):
            return value
        elif typing.get_origin(option) is tuple and _is_text_list(value):
            return tuple(value)
    shown = "(hidden)" if meta.get("secret") else repr(value)
    raise InvalidSetting(key, f"{shown} is not {_describe(options)}")


def _check_range(key: str, meta: Mapping[str, Any], value: float) -> None:
    if isinstance(value, float) and not math.isfinite(value):  # json reads NaN and Infinity
        raise InvalidSetting(key, f"{value} is not a finite number")
    low, high, above = meta.get("min"), meta.get("max"), meta.get("above")
    if low is not None and value < low:
        raise InvalidSetting(key, f"{value} is below the minimum {low}")
    if above is not None and value <= above:
        raise InvalidSetting(key, f"{value} must be above {above}")
    if high is not None and value > high:
        raise InvalidSetting(key, f"{value} is above the maximum {high}")


def _is_number(value: Any, integral: bool) -> bool:
    # bool is an int subclass, but True is no context length.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (not integral and isinstance(value, float))


def is_text(value: Any) -> bool:
    """A string that can be saved as UTF-8."""
    # JSON can spell a lone surrogate ("\ud800"): read from a file, it could never be saved again.
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_text_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(is_text(v) for v in value)


_TYPE_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _describe(options: tuple[Any, ...]) -> str:
    names: list[str] = []
    for option in options:
        if typing.get_origin(option) is Literal:
            names.extend(repr(choice) for choice in typing.get_args(option))
        elif typing.get_origin(option) is tuple:
            names.append("a list of texts")
        else:
            names.append(_TYPE_NAMES.get(option, str(option)))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


_HINTS: dict[type, dict[str, Any]] = {}


def hints(section: type) -> dict[str, Any]:
    """A section's resolved field types (cached: a request builds sections often)."""
    found = _HINTS.get(section)
    if found is None:
        found = _HINTS[section] = typing.get_type_hints(section)
    return found


class Section:
    """Base of a settings section: checks every field, then ``rules()``, on construction.

    Attributes:
        NAME: The section's name in dotted keys and in the settings file ("model").
    """

    NAME: ClassVar[str] = ""

    def __post_init__(self) -> None:
        types_ = hints(type(self))
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            key = f"{self.NAME}.{item.name}"
            value = check_value(key, types_[item.name], item.metadata, getattr(self, item.name))
            object.__setattr__(self, item.name, value)
        self.rules()

    def rules(self) -> None:
        """Cross-field rules; raise InvalidSetting naming the field whose default repairs it."""

    @classmethod
    def check_field(cls, name: str, value: Any) -> Any:
        """Check one field alone (no cross-field rules); return the value as stored.

        Raises:
            KeyError: No such field.
            InvalidSetting: The value does not fit the field.
        """
        item = {f.name: f for f in dataclasses.fields(cls)}[name]  # type: ignore[arg-type]
        return check_value(f"{cls.NAME}.{name}", hints(cls)[name], item.metadata, value)
