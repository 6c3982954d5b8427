"""A download in a process of its own, as the window and `prefill get` are to each other.

`spawn` starts `python -m tests.hub.download_child ENDPOINT REPO MODELS [MAX_FILE_SIZE]`, which runs
one `download_model` and prints what ended it (`done`, or the error's type and text).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def spawn(endpoint: str, repo_id: str, models: Path, max_file_size: int | None = None) -> subprocess.Popen[str]:
    """Start the child; read its one line of output with `communicate()`.

    `max_file_size` sets the child's RLIMIT_FSIZE: the kernel then refuses to grow a
    file past it with EFBIG, as FAT32 does at 4 GiB (Python ignores the SIGXFSZ).
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)]), "HF_HUB_DISABLE_XET": "1"}
    args = [endpoint, repo_id, str(models), *([str(max_file_size)] if max_file_size else [])]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.hub.download_child", *args],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )


def main() -> None:
    from prefill.hub.client import HubClient
    from prefill.hub.downloader import download_model
    from prefill.hub.errors import HubError

    endpoint, repo, models = sys.argv[1:4]
    if len(sys.argv) > 4:  # set here, not in a preexec_fn: the parent runs threads
        import resource

        limit = int(sys.argv[4])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    client = HubClient(endpoint=endpoint)
    (model,) = client.list_models(repo).models
    try:
        download_model(client, Path(models), repo, model)
    except HubError as e:
        print(f"{type(e).__name__}: {e}", flush=True)
        return
    print("done", flush=True)


if __name__ == "__main__":
    main()
