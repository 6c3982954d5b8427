"""Stop strings, checked on the tail of the answer only: constant work per token.

Text that could be the start of a stop string is held back until it is known
not to be, so a stop string never reaches the screen.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopMatcher:
    def __init__(self, stops: Sequence[str]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Add decoded text; returns (text safe to show, whether a stop string was hit)."""
        if not self.stops:
            return text, False
        buf = self.held + text
        for s in self.stops:
            i = buf.find(s)
            if i >= 0:
                self.held = ""
                return buf[:i], True
        keep = 0
        for s in self.stops:  # longest suffix of buf that starts some stop string
            for k in range(min(len(s) - 1, len(buf)), keep, -1):
                if s.startswith(buf[-k:]):
                    keep = k
                    break
        self.held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], False

    def flush(self, text: str = "") -> str:
        """The end of the answer: whatever was held back is plain text after all."""
        out = self.held + text
        self.held = ""
        return out
