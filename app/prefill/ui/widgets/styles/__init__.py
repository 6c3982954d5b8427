"""The application style sheet, one piece per room, from the colours' roles and the tokens.

A room that styles its widgets adds a module here with ``sheet(c: ThemeColours) -> str`` and a line
in :data:`_PIECES`; each rule names widgets by the object names set where they are built.
"""

from __future__ import annotations

from collections.abc import Callable

from prefill.ui.widgets.colours import ThemeColours, colours_for
from prefill.ui.widgets.styles import (
    base,
    chat,
    composer,
    dialogs,
    documents,
    focus,
    models,
    notices,
    server,
    sidebar,
    window,
)

# base first (every control), focus last (the ring overrides a border); rooms' pieces between them.
_PIECES: tuple[Callable[[ThemeColours], str], ...] = (base.sheet, chat.sheet, sidebar.sheet, models.sheet,
                                                     notices.sheet, composer.sheet, documents.sheet, window.sheet,
                                                     server.sheet, dialogs.sheet, focus.sheet)


def style_sheet(effective: str) -> str:
    """The whole style sheet for "light" or "dark".

    Raises:
        ValueError: ``effective`` is neither.
    """
    c = colours_for(effective)
    return "\n".join(piece(c) for piece in _PIECES)
