"""Stop strings, checked on the tail of the answer only: constant work per token.

Text that could be the start of a stop string is held back until it is known
not to be, so a stop string never reaches the screen. The answer ends at the earliest
stop string in what has arrived; where one stop string contains another ("b" in "\nbb"),
the shorter can end it before the longer one, begun earlier, is complete.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopMatcher:
    def __init__(self, stops: Sequence[str]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""
        self.matched = ""  # the stop string that was hit ("" until one is)

    def feed(self, text: str) -> tuple[str, bool]:
        """Add decoded text; returns (text safe to show, whether a stop string was hit)."""
        if not self.stops:
            return text, False
        buf = self.held + text
        cut = -1
        for s in self.stops:  # the earliest stop string wins, whichever is listed first
            i = buf.find(s)
            if i >= 0 and (cut < 0 or i < cut):
                cut, self.matched = i, s
        if cut >= 0:
            self.held = ""
            return buf[:cut], True
        n, keep = len(buf), 0
        for s in self.stops:  # the longest suffix of buf that starts some stop string
            # Only where s's first character stands can such a suffix begin: most tokens have none,
            # and one `find` says so (this runs for every token of every slot on the decoding thread).
            i = buf.find(s[0], max(0, n - len(s) + 1))
            while 0 <= i < n - keep:
                if s.startswith(buf[i:]):
                    keep = n - i
                    break
                i = buf.find(s[0], i + 1)
        self.held = buf[n - keep :] if keep else ""
        return buf[: n - keep], False

    def flush(self, text: str = "") -> str:
        """The end of the answer: whatever was held back is plain text after all."""
        out = self.held + text
        self.held = ""
        return out
