"""Where a server process spends its time while a load runs (vs_llama_server.py --profile).

The CPU each of its threads spent per token (Linux's /proc), and, where py-spy is installed (a Python
server: Prefill's), its stacks sampled meanwhile: each thread's share of samples by the function on
top. Threads are named from py-spy's samples where it ran ("loop": the main thread, where Prefill's event
loop runs), else by their kernel name and id ("main": the process's first thread).
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from prefill.bench.serve_load import stat_cpu_s

TOP = 8  # functions listed per thread


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Thread id -> (its kernel name, user + system CPU seconds so far)."""
    out: dict[int, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        task = Path(f"/proc/{pid}/task/{tid}")
        try:
            comm = (task / "comm").read_text().strip()
        except OSError:  # the thread has ended
            continue
        out[int(tid)] = (comm, stat_cpu_s(task / "stat"))
    return out


def summarize_stacks(raw: str) -> tuple[dict[int, str], dict[str, dict[str, float]]]:
    """py-spy's raw output (`--threads`): thread id -> Python thread name, and per thread name the share
    (%) of its samples by the function on top of the stack (line numbers dropped)."""
    names: dict[int, str] = {}
    tops: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        m = re.match(r"thread \((\d+)\): ([^;]*);", stack)
        if not m or not count.isdigit():
            continue
        names[int(m.group(1))] = m.group(2)
        top = re.sub(r":\d+\)$", ")", stack.rsplit(";", 1)[-1])
        tops[m.group(2)][top] += int(count)
    shares = {name: {f: round(100 * n / sum(c.values()), 1) for f, n in c.most_common(TOP)}
              for name, c in tops.items()}
    return names, shares


class Profile:
    """Started before a run, `stop(tokens)` after it: the figures of what happened between."""

    def __init__(self, pid: int, stacks: bool = True, rate: int = 250):
        self.pid = pid
        self.before = thread_cpu(pid)
        self._spy: subprocess.Popen[bytes] | None = None
        self._out = Path(tempfile.mkdtemp()) / "stacks.txt"
        spy = shutil.which("py-spy") if stacks else None
        if spy is not None:
            self._spy = subprocess.Popen([spy, "record", "-p", str(pid), "-r", str(rate), "--threads", "-f", "raw",
                                          "--nonblocking", "-o", str(self._out)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # attached before the load starts

    def stop(self, tokens: int) -> dict[str, object]:
        after = thread_cpu(self.pid)
        names: dict[int, str] = {}
        shares: dict[str, dict[str, float]] = {}
        if self._spy is not None:
            self._spy.send_signal(signal.SIGINT)
            try:
                self._spy.wait(30)
            except subprocess.TimeoutExpired:
                self._spy.kill()
            if self._out.exists():
                names, shares = summarize_stacks(self._out.read_text())
        shutil.rmtree(self._out.parent, ignore_errors=True)
        per_token: dict[str, float] = {}
        for tid, (comm, cpu) in after.items():
            spent = cpu - self.before.get(tid, (comm, 0.0))[1]
            if spent < 0.005:
                continue
            if tid == self.pid:  # a Python server's main thread runs its event loop
                name = "loop" if names else "main"
            else:
                name = names.get(tid, f"{comm}-{tid}")
            per_token[name] = round(per_token.get(name, 0.0) + spent * 1000 / max(1, tokens), 3)
        out: dict[str, object] = {"cpu_ms_per_token": dict(sorted(per_token.items(), key=lambda kv: -kv[1]))}
        if shares:
            out["top_functions_pct"] = shares
        return out
