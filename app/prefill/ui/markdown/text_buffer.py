"""Text that arrives in pieces (a streamed answer): adding a piece is O(1), and the pieces are joined
only when the whole is read, once per read after new pieces, so a long answer is not copied per token."""

from __future__ import annotations


class MarkdownBuffer:
    """A message's source text as the renderer reads it, piece by piece (not the engine worker's
    locked TextBuffer of streamed tokens, ui/workers/engine_worker.py)."""

    def __init__(self) -> None:
        self._chunks: list[str] = []

    def append(self, text: str) -> None:
        self._chunks.append(text)

    @property
    def text(self) -> str:
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""
