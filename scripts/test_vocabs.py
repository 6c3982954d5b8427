"""Fetch llama.cpp's tokenizers for the tests, so that a test run downloads nothing.

    python scripts/test_vocabs.py     # what `make test` and `make test-fast` run first (`make vocab`)

llama-cpp-python's source distribution carries llama.cpp's `models/ggml-vocab-*.gguf` (the real
tokenizers of Qwen2, Gemma, Llama 3, Phi-3, Command R…), which tests/engine/vocab_models.py gives
scripted weights. This fetches the sdist of the llama-cpp-python installed beside this Python once
(`pip download`) and unpacks only those files into `folder()`; a later run finds them and does nothing.

Where no package registry answers: in CI (`$CI` set) it fails; elsewhere it says so, leaves a note
beside the folder, exits 0, and the tests that need the tokenizers skip, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def cache() -> Path:
    return Path(os.environ.get("PREFILL_TEST_CACHE", Path.home() / ".cache" / "prefill-tests"))


def folder(llama_version: str) -> Path:
    """Where the tokenizers of llama-cpp-python `llama_version` are kept."""
    return cache() / f"llama-vocab-{llama_version}"


def unreachable_note(llama_version: str) -> Path:
    """Written instead of the folder when no registry answered (outside CI): why, for the tests' skip."""
    return cache() / f"llama-vocab-{llama_version}.unreachable"


def fetch(llama_version: str) -> Path:
    """The folder of `llama_version`'s tokenizers, fetched and unpacked if it is not there yet.

    Raises:
        OSError: the sdist could not be downloaded (the message says pip's last words).
    """
    out = folder(llama_version)
    if any(out.glob("ggml-vocab-*.gguf")):
        return out
    dl = cache() / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           f"llama-cpp-python=={llama_version}", "-d", str(dl), "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    archives = sorted(dl.glob(f"llama_cpp_python-{llama_version}.tar.gz"))
    if done.returncode != 0 or not archives:
        raise OSError(f"cannot fetch llama-cpp-python {llama_version}'s sdist for its tokenizers: "
                      f"{done.stderr[-300:].strip()}")
    # A folder of this run's own, moved into place whole: a run that lost the race to another keeps the other's.
    tmp = Path(tempfile.mkdtemp(prefix=f"{out.name}.", suffix=".part", dir=cache()))
    with tarfile.open(archives[0]) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if "/vendor/llama.cpp/models/" in member.name and name.startswith("ggml-vocab-") and name.endswith(".gguf"):
                src = tar.extractfile(member)
                if src is not None:
                    (tmp / name).write_bytes(src.read())
    try:
        tmp.rename(out)
    except OSError:  # another run put it there first
        shutil.rmtree(tmp, ignore_errors=True)
        if not any(out.glob("ggml-vocab-*.gguf")):
            raise
    return out


def main() -> int:
    try:
        llama_version = version("llama_cpp_python")
    except PackageNotFoundError:
        print("test_vocabs: llama-cpp-python is not installed beside this Python", file=sys.stderr)
        return 1
    note = unreachable_note(llama_version)
    try:
        out = fetch(llama_version)
    except OSError as e:
        if os.environ.get("CI"):
            print(f"test_vocabs: {e}", file=sys.stderr)
            return 1
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(str(e), encoding="utf-8")
        print(f"test_vocabs: {e}; the tests that need them will skip", file=sys.stderr)
        return 0
    note.unlink(missing_ok=True)
    print(f"test_vocabs: llama.cpp's tokenizers are in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
