"""Download throughput: Prefill's downloader against a plain HTTP read of the same file.

Both read the same generated file from the same loopback fake hub (in a process of its own)\nin the same run.
The baseline is the least a download can do: one urllib GET, 1 MiB reads, written
to a file. Prefill's run does everything a real download does: the HEAD for
metadata, the ranged GET into `.partial/`, SHA-256, the move into the library.

    PYTHONPATH=app:. python benchmarks/download_bench.py [--mb 200] [--repeat 3]

Prints one JSON object; `ratio` is Prefill's throughput over the baseline's (best
of `--repeat` runs each after a warm-up, interleaved so both see the same machine state).
`pause_during_stall_s`: how long a pause takes while the server has gone silent mid-file
(goal: under a second; the stall itself would hold for 30 s, the read timeout for 30 s).
On loopback the plain read can outrun SHA-256 itself; `ratio_to_verified_floor`
compares Prefill with the slower of the plain read and a bare SHA-256 of the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from prefill.hub.client import HubClient  # noqa: E402
from prefill.hub.downloader import download_model  # noqa: E402
from tests.hub.fake_hub import FakeFile, FakeHub, FakeRepo  # noqa: E402

REPO = "bench/Big-GGUF"
NAME = "big-Q8_0.gguf"


def make_file(path: Path, mb: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(mb):
            f.write(block[i % 251 :] + block[: i % 251])  # distinct blocks, cheap to make


def plain_read(url: str, out: Path) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url) as r, open(out, "wb", buffering=0) as f:
        while chunk := r.read(1 << 20):
            f.write(chunk)
    return time.perf_counter() - t


def prefill_download(client: HubClient, models: Path) -> float:
    listing = client.list_models(REPO)
    t = time.perf_counter()
    download_model(client, models, REPO, listing.models[0])
    return time.perf_counter() - t


def pause_during_stall() -> float:
    """Seconds from a pause to the download's return while the server sends nothing (a stall mid-file)."""
    import threading

    from prefill.hub.errors import DownloadStopped

    name, at = "stall-Q8_0.gguf", 4 << 20
    models = Path(tempfile.mkdtemp(prefix="prefill-stall-"))
    with FakeHub() as hub:
        hub.add(FakeRepo("bench/Stall-GGUF", {name: FakeFile(os.urandom(8 << 20))}))
        hub.stall(name, at)
        client = HubClient(endpoint=hub.url)
        (model,) = client.list_models("bench/Stall-GGUF").models
        stop, seen = threading.Event(), []

        def run() -> None:
            try:
                download_model(client, models, "bench/Stall-GGUF", model, stop, seen.append)
            except DownloadStopped:
                pass

        worker = threading.Thread(target=run)
        worker.start()
        while not (seen and seen[-1].done >= at and seen[-1].idle > 0.5):
            time.sleep(0.05)
        t = time.perf_counter()
        stop.set()
        worker.join()
        took = time.perf_counter() - t
        hub.release()
    shutil.rmtree(models, ignore_errors=True)
    return took


def sha256_seconds(path: Path) -> float:
    """The CPU's own SHA-256 time for the file (from the page cache): a floor for any verified download."""
    data = path.read_bytes()
    t = time.perf_counter()
    hashlib.sha256(data).hexdigest()
    return time.perf_counter() - t


def serve(src: Path, conn) -> None:  # noqa: ANN001 - a Pipe end
    """The fake hub in a process of its own, as the real hub is: its send loop must not
    compete with the client for the client's GIL."""
    with FakeHub() as hub:
        f = hub.add(FakeRepo(REPO, {NAME: FakeFile(path=src)})).files[NAME]
        conn.send((hub.url, f"{hub.cdn_url}/cdn/{f.sha256}"))
        conn.recv()  # until the client is done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the served file in MiB")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each, best kept")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="prefill-bench-"))
    try:
        src = work / "served.gguf"
        make_file(src, args.mb)
        size = src.stat().st_size
        here, there = multiprocessing.Pipe()
        server = multiprocessing.get_context("fork").Process(target=serve, args=(src, there), daemon=True)
        server.start()
        try:
            hub_url, plain_url = here.recv()
            client = HubClient(endpoint=hub_url)
            plain, ours = [], []
            plain_read(plain_url, work / "plain.bin")  # warm-up: page cache, connections
            prefill_download(client, work / "warm")
            shutil.rmtree(work / "warm")
            for i in range(args.repeat):
                plain.append(plain_read(plain_url, work / "plain.bin"))
                (work / "plain.bin").unlink()
                models = work / f"models{i}"
                ours.append(prefill_download(client, models))
                shutil.rmtree(models)
        finally:
            here.send("done")
            server.join(10)
        best_plain, best_ours = min(plain), min(ours)
        best_hash = min(sha256_seconds(src) for _ in range(3))
        floor = max(best_plain, best_hash)  # a verified download cannot beat either
        figures = {
            "bytes": size,
            "plain_mb_s": round(size / best_plain / 1e6, 1),
            "prefill_mb_s": round(size / best_ours / 1e6, 1),
            "ratio": round(best_plain / best_ours, 3),
            "sha256_mb_s": round(size / best_hash / 1e6, 1),
            "ratio_to_verified_floor": round(floor / best_ours, 3),
            "plain_s": [round(x, 3) for x in plain],
            "prefill_s": [round(x, 3) for x in ours],
            "prefill_includes": "HEAD, ranged GET, sha256 check, move into library",
            "pause_during_stall_s": round(pause_during_stall(), 3),
            "cpus": os.cpu_count(),
        }
        print(json.dumps(figures, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
