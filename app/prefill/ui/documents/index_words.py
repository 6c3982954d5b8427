"""What the indexing panel says: where a job stands, what it did, and each file's state, in words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefill.documents.indexer import IndexProgress
from prefill.ui.documents.collection_words import plural
from prefill.ui.workers.documents_worker import IndexDone, shown_name


def time_left(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f" · about {max(1, round(seconds))} s left"
    return f" · about {round(seconds / 60)} min left"


def progress_line(p: IndexProgress) -> str:
    """Where a job stands, in words (the file in hand is on its own row)."""
    left = time_left(p.eta_s) if p.files_done < p.files_total else ""
    unread = f" · {p.failed} not readable" if p.failed else ""
    pages = f" · {plural(p.pages, 'page')}" if p.pages else ""  # only PDFs have pages
    return f"Indexing {p.files_done} of {p.files_total} files{pages} · {plural(p.chunks, 'passage')}{unread}{left}"


def done_line(d: IndexDone) -> str:
    """What a job did, in words (a watched collection's changes, a re-index with another embedding model
    headed by what it was)."""
    pages = f"{d.pages} pages, " if d.pages else ""
    head = f"{d.title[:1].upper()}{d.title[1:]}: " if d.title else ""
    if d.reindexed:
        head = f"{head}{', '.join(dict.fromkeys(shown_name(c) for c in d.reindexed))}: "
    if d.cancelled:
        again = ("The rest is indexed at the next start." if d.title else
                 "Attach the same files or folder again to go on where it stopped.")
        return f"{head}Stopped: {d.indexed} files indexed ({pages}{d.chunks} passages) are kept. {again}"
    parts = [f"{head}Indexed {d.indexed} files ({pages}{d.chunks} passages)"]
    if d.unchanged:
        parts.append(f"{d.unchanged} unchanged")
    if d.problems:
        parts.append(f"{len(d.problems)} not readable")
    if d.removed:
        parts.append(f"{d.removed} gone from their folder")
    return " · ".join(parts) + f" · {d.elapsed_s:.1f} s"


@dataclass(frozen=True)
class FileState:
    """One file's row while a job runs: its path, its name, its state in words and the mark before it."""

    path: str
    name: str
    words: str
    mark: str


class FileStates:
    """Each file's state, told from the job's progress: a file is "reading" while it is the one in hand,
    then indexed (with its passages), unchanged or not read, by which of the job's counts moved when it
    ended. Keeps the last `keep` files."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.rows: list[FileState] = []
        self._last: IndexProgress | None = None
        self._chunks_at = 0  # passages stored when the file in hand began

    def clear(self) -> None:
        self.rows, self._last, self._chunks_at = [], None, 0

    def follow(self, p: IndexProgress) -> None:
        last = self._last
        if last is None or p.files_done < last.files_done:  # a new job, or the next collection of a re-index
            last, self._chunks_at = IndexProgress(0, p.files_total, 0, 0, 0, 0, 0.0, None, ""), 0
        self._last = p
        if not p.current:
            return
        name = Path(p.current).name
        if p.files_done > last.files_done:  # `current` ended
            if p.failed > last.failed:
                state = FileState(p.current, name, "not read", "warning")
            elif p.skipped > last.skipped:
                state = FileState(p.current, name, "unchanged", "check")
            else:
                state = FileState(p.current, name, plural(p.chunks - self._chunks_at, "passage"), "check")
            self._chunks_at = p.chunks
        else:
            got = p.chunks - self._chunks_at
            state = FileState(p.current, name, f"{plural(got, 'passage')} so far…" if got else "reading…", "document")
        if self.rows and self.rows[-1].path == p.current:
            self.rows[-1] = state
        else:
            self.rows = [*self.rows, state][-self.keep:]
