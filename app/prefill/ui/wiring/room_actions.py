"""What the window's rooms offer its shortcuts: each room names the actions it can do and registers
them here (`actions.offer("stop", controller.stop)`); the shortcuts table (ui/shortcuts.py) binds its
keys to those names. A shortcut then knows an action by its name, never the widget that does it, and
a room added later offers its own without an edit anywhere else.
"""

from __future__ import annotations

from collections.abc import Callable


class RoomActions:
    """Named actions, each offered once by the room that does it."""

    def __init__(self) -> None:
        self._runs: dict[str, Callable[[], None]] = {}

    def offer(self, name: str, run: Callable[[], None]) -> None:
        """Register what `name` does.

        Raises:
            ValueError: Another room offers `name` already.
        """
        if name in self._runs:
            raise ValueError(f"the action {name!r} is offered twice")
        self._runs[name] = run

    def names(self) -> frozenset[str]:
        return frozenset(self._runs)

    def run(self, name: str) -> None:
        """Do the action `name` (KeyError: no room offers it)."""
        self._runs[name]()
