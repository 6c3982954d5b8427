"""Prints the size of every artefact in a dist folder as JSON (MiB), for release notes.

    python packaging/tools/sizes.py dist/cpu-portable [--top N]

--top N adds the N biggest files of the frozen folder, to see what to trim.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ARTEFACTS = ("*.deb", "*.tar.gz", "*.AppImage", "*.dmg", "*setup*.exe", "*.zip")
FOLDERS = ("prefill", "Prefill.app")
MIB = 1024 * 1024


def tree_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def sizes(dist: Path, top: int = 0) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in FOLDERS:
        if (dist / name).is_dir():
            out[f"{name}/"] = round(tree_size(dist / name) / MIB, 1)
    for pattern in ARTEFACTS:
        for f in sorted(dist.glob(pattern)):
            out[f.name] = round(f.stat().st_size / MIB, 1)
    if top and (dist / "prefill").is_dir():
        files = sorted(
            (p for p in (dist / "prefill").rglob("*") if p.is_file() and not p.is_symlink()),
            key=lambda p: p.stat().st_size,
            reverse=True,
        )[:top]
        out["biggest"] = {
            str(p.relative_to(dist / "prefill")): round(p.stat().st_size / MIB, 1) for p in files
        }
    return out


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_dir():
        print(__doc__, file=sys.stderr)
        return 2
    top = int(argv[2]) if len(argv) == 3 and argv[1] == "--top" else 0
    print(json.dumps(sizes(Path(argv[0]), top), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
