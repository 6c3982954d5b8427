"""A real full disk: `prefill get` onto a small tmpfs that fills up mid-download.

Run as `unshare -rm python -m tests.hub.disk_full` (a user and mount namespace of
its own, so the tmpfs is private and needs no privileges): it mounts an 80 MiB
tmpfs, serves a fake hub, starts `prefill get` into the tmpfs, and when 1 MB is on
disk (the hub holds the rest) fills the tmpfs to the last byte with another file,
as another program would. The kernel's ENOSPC then meets the download. It prints
one JSON object: what the user saw, what was kept, and whether a second `prefill
get` after freeing space finished with the right bytes.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = "org/Full-GGUF"
NAME = "full-Q4_0.gguf"
SIZE = 3_000_000
AT = 1_000_000


def _cli(argv: list[str]) -> tuple[int, str]:
    from prefill.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue().strip()


def _fill(path: Path) -> int:
    """Write zeros to `path` until the disk refuses (ENOSPC); return bytes written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    block, n = b"\0" * (1 << 16), 0
    try:
        while True:
            n += os.write(fd, block)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return n


def run() -> dict[str, object]:
    from prefill.hub.partial import Expected, PartialFile
    from tests.hub.conftest import add_repo, payload
    from tests.hub.fake_hub import FakeHub

    mnt = Path(tempfile.mkdtemp(prefix="prefill-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=80m", "tmpfs", str(mnt)], check=True)
    models = mnt / "models"
    data = payload(SIZE, seed=7)
    with FakeHub() as hub:
        add_repo(hub, REPO, {NAME: data})
        hub.stall_after[NAME] = AT
        os.environ["HF_ENDPOINT"] = hub.url
        part = PartialFile(models, Expected(REPO, NAME, None, None)).path
        filler = mnt / "another-program.bin"
        filled: list[int] = []

        def fill_when_started() -> None:
            end = time.monotonic() + 30
            while not (part.exists() and part.stat().st_size >= AT) and time.monotonic() < end:
                time.sleep(0.01)
            filled.append(_fill(filler))
            hub.release()

        threading.Thread(target=fill_when_started, daemon=True).start()
        rc1, said = _cli(["get", REPO, "--models-dir", str(models)])
        kept = part.stat().st_size if part.exists() else 0
        filler.unlink(missing_ok=True)
        hub.stall_after.clear()
        rc2, said2 = _cli(["get", REPO, "--models-dir", str(models)])
        final = models / REPO / NAME
        ok = final.is_file() and final.read_bytes() == data
    return {"exit": rc1, "said": said, "kept_bytes": kept, "filler_bytes": sum(filled),
            "resume_exit": rc2, "resume_said": said2, "resumed_intact": ok,
            "resume_fetched": hub.gets(NAME)[-1].body_bytes if hub.gets(NAME) else 0}


def run_in_namespace(timeout: float = 120) -> dict[str, object] | None:
    """Run this module under `unshare -rm`; None when this machine allows no namespace."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "app"), str(root)]),
           "HF_HUB_DISABLE_XET": "1", "NO_PROXY": "127.0.0.1,localhost"}
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return None
    out = subprocess.run(["unshare", "-rm", sys.executable, "-m", "tests.hub.disk_full"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the disk-full run failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


if __name__ == "__main__":
    print(json.dumps(run()))
