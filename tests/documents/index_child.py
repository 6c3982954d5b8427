"""A child process for the kill -9 test: indexes FOLDER into INDEX, printing each file stored, and hangs
for good in the middle of the file after the first N (its embedder blocks), for the parent to kill."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from prefill.documents.index import open_index
from prefill.documents.indexer import IndexProgress, index_files
from tests.documents.embedders import HashEmbedder, count_words


class BlockingEmbedder(HashEmbedder):
    def __init__(self, after_files: int):
        super().__init__()
        self.after_files = after_files
        self.stored = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.stored >= self.after_files:
            print("blocked", flush=True)
            threading.Event().wait()
        return super().embed(texts)


def main() -> None:
    folder, index, after = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    embedder = BlockingEmbedder(after)
    conn = open_index(index)

    def progress(p: IndexProgress) -> None:
        if p.files_done > embedder.stored:
            embedder.stored = p.files_done
            print(f"stored {p.files_done}", flush=True)

    index_files(conn, "c", [folder], embedder, count_words, batch=4, progress=progress)


if __name__ == "__main__":
    main()
