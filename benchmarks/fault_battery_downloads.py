"""Fault battery, downloads: every hostile download case against the fake hub, in one go.

    PYTHONPATH=app:. python benchmarks/fault_battery_downloads.py [--only NAME ...]

Prints one JSON object per case (JSON lines): `case`, `cli` (the line `prefill get`
prints), `window` (the sentence the Models page shows), `error` (the typed error),
`kept_bytes` (partial bytes kept for a resume), `lost_nothing` (a model downloaded
before the case is still intact and nothing else in the library changed), and
what the case checks beside (`resumed`, `max_fraction`, …). `run_battery()`
returns the same records, for the lead's battery to call.

The full disk is real: a tmpfs in a user and mount namespace of its own (`unshare
-rm`) that another writer fills mid-download; where the machine allows no
namespace, that case says `skipped`. The file-size limit (FAT32's 4 GiB) is the
kernel's own EFBIG too, from a child process's RLIMIT_FSIZE.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ.setdefault("HF_HOME", os.path.join(tempfile.gettempdir(), "prefill-faults-hf-home"))  # no saved login
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import HubError
from prefill.hub.partial import Expected, PartialFile
from prefill.hub.progress import DownloadProgress
from prefill.hub.transfer import RetryPolicy
from tests.hub import disk_full, download_child
from tests.hub.conftest import add_repo, paused_download, payload, wait_until
from tests.hub.fake_hub import FakeHub

FAST = RetryPolicy(attempts=3, backoff=0.01, timeout=10)
GOOD = "good-Q4_0.gguf"
SIZE = 3_000_000
HOSTILE_NAMES = {
    "name_climbs_out": "../../escape.gguf",
    "name_climbs_from_sub_folder": "Q8_0/../../../escape.gguf",
    "name_absolute": "/etc/escape.gguf",
    "name_backslash": "..\\escape.gguf",
    "name_drive_letter": "C:escape.gguf",
    "name_nul_byte": "esc\x00ape.gguf",
    "name_windows_con": "CON.gguf",
    "name_windows_nul_in_sub_folder": "Q4_0/nul.gguf",
    "name_windows_com1": "com1.Q4_0.gguf",
    "name_windows_lpt1": "LPT1.gguf",
    "name_trailing_dot_folder": "Q8_0./m.gguf",
    "name_trailing_space_folder": "Q8_0 /m.gguf",
    "name_bidi_override": "model\u202eFTG.gguf",
    "name_markup": "<img src=x.png>Q4_0.gguf",
}


class Battery:
    """One fake hub and one scratch folder shared by the cases; each case has its own models folder.

    The fake hub serves bytes by their hash, so every case's file has bytes of its own (its seed).
    """

    def __init__(self, hub: FakeHub, work: Path):
        self.hub, self.work = hub, work
        self.client = HubClient(endpoint=hub.url)
        os.environ["HF_ENDPOINT"] = hub.url

    def models(self, case: str) -> Path:
        return self.work / case

    def get(self, models: Path, repo_id: str, filename: str | None = None,
            on_progress: Callable[[DownloadProgress], None] | None = None) -> dict[str, object]:
        """Download one model as the window does (the CLI's line and the window's sentence)."""
        listing = self.client.list_models(repo_id).models
        model = next(m for m in listing if filename is None or m.first.filename == filename)
        try:
            paths = download_model(self.client, models, repo_id, model, on_progress=on_progress, policy=FAST)
        except HubError as e:
            return {"error": type(e).__name__, "cli": f"prefill: {e}",
                    "window": f"Downloading {model.name} failed: {e}."}
        return {"error": None, "cli": str(paths[0]), "window": ""}


def _tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in sorted(root.rglob("*")) if p.is_file()}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from prefill.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue().strip(), err.getvalue().strip()


# --- the cases -----------------------------------------------------------------------------
def hostile_name(b: Battery, case: str, name: str) -> dict[str, object]:
    repo = f"hostile/{case.replace('_', '-')}"
    add_repo(b.hub, repo, {name: case.encode(), GOOD: b"good bytes " + case.encode()})
    models = b.models(case)
    b.get(models, repo, GOOD)
    before, served = _tree(models), len(b.hub.served)
    said = b.get(models, repo, name)
    asked = [s.path for s in b.hub.served[served:] if "/resolve/" in s.path or "/cdn/" in s.path]
    return {**said, "lost_nothing": _tree(models) == before, "file_requests": len(asked)}


def sub_folder_set(b: Battery) -> dict[str, object]:
    parts = {f"Q8_0/big-Q8_0-{i:05d}-of-00002.gguf": payload(200_000, seed=20 + i) for i in (1, 2)}
    add_repo(b.hub, "sets/Big-GGUF", parts)
    models = b.models("sub_folder_set")
    said = b.get(models, "sets/Big-GGUF")
    placed = all((models / "sets/Big-GGUF" / n).read_bytes() == d for n, d in parts.items())
    return {**said, "placed": placed}


def cut_once(b: Battery) -> dict[str, object]:
    name = "cut-Q4_0.gguf"
    add_repo(b.hub, "faults/Cut-GGUF", {name: payload(SIZE, seed=11)})
    b.hub.cut_after[name] = 1_234_567
    said = b.get(b.models("cut_once"), "faults/Cut-GGUF")
    return {**said, "bytes_served": b.hub.bytes_served(name), "size": SIZE}


def outage(b: Battery) -> dict[str, object]:
    name = "down-Q4_0.gguf"
    add_repo(b.hub, "faults/Down-GGUF", {name: payload(SIZE, seed=12)})
    models = b.models("outage")
    b.hub.outage_after[name] = 1_200_000
    said = b.get(models, "faults/Down-GGUF")
    kept = PartialFile(models, Expected("faults/Down-GGUF", name, None, None)).size_on_disk()
    b.hub.end_outage(name)
    again = b.get(models, "faults/Down-GGUF")
    return {**said, "kept_bytes": kept, "resumed": again["error"] is None,
            "resume_range": b.hub.gets(name)[-1].range}


def corrupt(b: Battery) -> dict[str, object]:
    name = "bad-Q4_0.gguf"
    add_repo(b.hub, "faults/Bad-GGUF", {name: payload(SIZE, seed=13)})
    b.hub.corrupt[name] = 2_000_000
    models = b.models("corrupt")
    said = b.get(models, "faults/Bad-GGUF")
    return {**said, "library_files": sorted(k for k in _tree(models) if not k.startswith("."))}


def disk_full_real(_b: Battery) -> dict[str, object]:
    result = disk_full.run_in_namespace()
    if result is None:
        return {"skipped": "no user namespace here (unshare -rm), so no private tmpfs to fill"}
    return {"error": "NotEnoughSpace" if result["exit"] else None, "cli": result["said"], **result}


def file_size_limit(b: Battery) -> dict[str, object]:
    """The kernel's EFBIG (what FAT32 says at 4 GiB), from a 1 MB RLIMIT_FSIZE on a child process."""
    name = "fat-Q4_0.gguf"
    add_repo(b.hub, "faults/Fat-GGUF", {name: payload(SIZE, seed=18)})
    models = b.models("file_size_limit")
    child = download_child.spawn(b.hub.url, "faults/Fat-GGUF", models, max_file_size=1_000_000)
    said, _ = child.communicate(timeout=60)
    error, _, text = said.strip().partition(": ")
    kept = PartialFile(models, Expected("faults/Fat-GGUF", name, None, None)).size_on_disk()
    again = b.get(models, "faults/Fat-GGUF")
    return {"error": error, "cli": f"prefill: {text}", "kept_bytes": kept, "resumed": again["error"] is None,
            "resume_range": b.hub.gets(name)[-1].range}


def second_process(b: Battery) -> dict[str, object]:
    name = "busy-Q4_0.gguf"
    add_repo(b.hub, "faults/Busy-GGUF", {name: payload(SIZE, seed=14)})
    models = b.models("second_process")
    b.hub.stall(name, 1_000_000)
    part = PartialFile(models, Expected("faults/Busy-GGUF", name, None, None))
    child = download_child.spawn(b.hub.url, "faults/Busy-GGUF", models)
    try:
        wait_until(lambda: part.size_on_disk() >= 1_000_000 or child.poll() is not None, timeout=30)
        rc, _out, err = _cli(["get", "faults/Busy-GGUF", "--models-dir", str(models)])
        kept = part.size_on_disk()
        b.hub.release()
        first, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    return {"error": "DownloadBusy" if rc else None, "cli": err, "exit": rc, "kept_bytes": kept,
            "first_download": first.strip(), "bytes_served": b.hub.bytes_served(name), "size": SIZE}


def look_alike_repos(b: Battery) -> dict[str, object]:
    name = "same-Q4_0.gguf"
    add_repo(b.hub, "a__b/c", {name: payload(SIZE, seed=15)})
    add_repo(b.hub, "a/b__c", {name: payload(SIZE, seed=16)})
    models = b.models("look_alike_repos")
    kept = paused_download(b.hub, b.client, models, "a__b/c", name, 1_000_000)
    said = b.get(models, "a/b__c")
    after = PartialFile(models, Expected("a__b/c", name, None, None)).size_on_disk()
    return {**said, "kept_bytes": kept, "lost_nothing": after == kept}


def resume_progress(b: Battery) -> dict[str, object]:
    name = "resume-Q4_0.gguf"
    add_repo(b.hub, "faults/Resume-GGUF", {name: payload(SIZE, seed=17)})
    models = b.models("resume_progress")
    kept = paused_download(b.hub, b.client, models, "faults/Resume-GGUF", name, 1_000_000)
    seen: list[DownloadProgress] = []
    said = b.get(models, "faults/Resume-GGUF", on_progress=seen.append)
    return {**said, "kept_bytes": kept, "max_fraction": max((p.fraction or 0.0) for p in seen),
            "last_done": seen[-1].done, "total": seen[-1].total}


def abandoned_listing(b: Battery) -> dict[str, object]:
    models = b.models("abandoned_listing")
    part = PartialFile(models, Expected("old/Old-GGUF", "Q8_0/old-Q8_0.gguf", 8 << 20, None))
    part.prepare()
    part.path.write_bytes(b"x" * (2 << 20))
    week_ago = os.path.getmtime(part.path) - 8 * 24 * 3600
    for f in (part.path, part.sidecar):
        os.utime(f, (week_ago, week_ago))
    _rc, out, err = _cli(["ls", "--partial", "--models-dir", str(models)])
    _rc, out2, _ = _cli(["rm", "--partial", "--yes", "--models-dir", str(models)])
    return {"error": None, "cli": out, "cli_note": err, "removed": out2, "gone": not part.path.exists()}


def run_battery(only: set[str] | None = None) -> list[dict[str, object]]:
    """Run every case (or those named in `only`); one record per case."""
    cases: dict[str, Callable[[Battery], dict[str, object]]] = {
        **{case: (lambda b, c=case, n=name: hostile_name(b, c, n)) for case, name in HOSTILE_NAMES.items()},
        "sub_folder_set": sub_folder_set, "cut_once": cut_once, "outage": outage, "corrupt": corrupt,
        "disk_full": disk_full_real, "file_size_limit": file_size_limit, "second_process": second_process,
        "look_alike_repos": look_alike_repos,
        "resume_progress": resume_progress, "abandoned_listing": abandoned_listing,
    }
    work = Path(tempfile.mkdtemp(prefix="prefill-faults-"))
    records = []
    try:
        with FakeHub() as hub:
            battery = Battery(hub, work)
            for case, fn in cases.items():
                if only and case not in only:
                    continue
                try:
                    record = fn(battery)
                except Exception as e:  # noqa: BLE001 - a case that breaks is itself a finding
                    record = {"crashed": f"{type(e).__name__}: {e}"}
                records.append({"case": case, **record})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="run only these cases")
    args = ap.parse_args()
    for record in run_battery(set(args.only) if args.only else None):
        print(json.dumps(record, ensure_ascii=False))


if __name__ == "__main__":
    main()
