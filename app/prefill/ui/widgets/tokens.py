"""The window's sizes as named values: a type scale, a spacing scale, radii and the chat column.

Every widget and style sheet takes its pixel sizes from here (STYLE.md 26); a widget never writes a
size of its own. Type sizes are in pixels, so that text is the same size on every platform's default
font; line heights are multiples of the size.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TypeScale:
    """Font sizes in pixels, from the smallest caption to the page title."""

    caption: int = 12
    small: int = 13
    body: int = 15
    title: int = 17
    headline: int = 22
    code: int = 14
    body_line_height: float = 1.5
    code_line_height: float = 1.4


@dataclass(frozen=True)
class Spacing:
    """Margins and gaps in pixels: each step about 1.5 to 2 times the last."""

    xxs: int = 2
    xs: int = 4
    sm: int = 8
    md: int = 12
    lg: int = 16
    xl: int = 24
    xxl: int = 32


@dataclass(frozen=True)
class Radii:
    """Corner radii in pixels."""

    sm: int = 6
    md: int = 10
    lg: int = 16
    pill: int = 999


@dataclass(frozen=True)
class Column:
    """The chat's centred column: its width grows with the window between these, in pixels."""

    min_width: int = 480
    width: int = 760
    max_width: int = 920
    gutter: int = 24  # at each side of the column, while the view has room for it
    side_min_width: int = 200  # a side panel narrower than this has no room for a label beside its value


@dataclass(frozen=True)
class IconSizes:
    """Icon sizes in pixels: in toolbars and buttons, and inside the composer and messages."""

    toolbar: int = 20
    inline: int = 16


TYPE = TypeScale()
SPACE = Spacing()
RADIUS = Radii()
COLUMN = Column()
ICON = IconSizes()


def column_width(room: int) -> int:
    """The chat column's width (the messages' and the composer's) in a pane with ``room`` pixels inside
    its padding: COLUMN.width once the pane has it and a gutter each side, then growing by half of what
    the pane gains, up to COLUMN.max_width; in a narrower pane the column gives up its gutters first, then
    shrinks with the pane, not below COLUMN.min_width unless the pane itself is narrower."""
    inside = room - 2 * COLUMN.gutter
    if inside >= COLUMN.width:
        return min(COLUMN.max_width, COLUMN.width + (inside - COLUMN.width) // 2)
    return max(1, min(room, max(COLUMN.min_width, inside)))
