"""Suggested models: the rough fit from the table's figures, and the list filtered by memory."""

from __future__ import annotations

from prefill.engine.llama.hardware import GpuMemory, MachineMemory
from prefill.engine.llama.memory_fit import Fit
from prefill.hub.paths import check_repo_id, safe_relpath
from prefill.hub.suggested import SUGGESTIONS, rough_fit, suggest

GIB = 1 << 30


def test_the_table_is_well_formed() -> None:
    for s in SUGGESTIONS:
        check_repo_id(s.repo_id)
        safe_relpath(s.filename)
        assert s.filename.endswith(".gguf") and s.what and s.size > 0 and s.n_layer > 0
    assert len({(s.repo_id, s.filename) for s in SUGGESTIONS}) == len(SUGGESTIONS)


def test_verdicts_follow_memory() -> None:
    llama3b = next(s for s in SUGGESTIONS if "Llama-3.2-3B" in s.filename)
    big_gpu = MachineMemory(64 * GIB, 32 * GIB, (GpuMemory(0, "GPU", 24 * GIB, 24 * GIB),))
    small_gpu = MachineMemory(64 * GIB, 32 * GIB, (GpuMemory(0, "GPU", 2 * GIB, 2 * GIB),))
    cpu = MachineMemory(16 * GIB, 8 * GIB)
    tiny = MachineMemory(2 * GIB, GIB // 2)
    full = rough_fit(llama3b, 4096, big_gpu)
    assert full.fit == Fit.FULL_GPU and full.gpu_layers == llama3b.n_layer + 1
    assert full.kv_cache == llama3b.kv_per_token * 4096 and full.weights == llama3b.size
    part = rough_fit(llama3b, 4096, small_gpu)
    assert part.fit == Fit.PARTIAL and 0 < part.gpu_layers < llama3b.n_layer and part.vram_needed < 2 * GIB
    assert rough_fit(llama3b, 4096, cpu).fit == Fit.CPU_ONLY
    assert rough_fit(llama3b, 4096, tiny).fit == Fit.WONT_FIT


def test_suggest_filters_and_orders() -> None:
    cpu = MachineMemory(8 * GIB, 3 * GIB)
    found = suggest(cpu, 4096)
    assert found and all(e.fit == Fit.CPU_ONLY for _s, e in found) and len(found) <= 5
    sizes = [s.size for s, _e in found]
    assert sizes == sorted(sizes, reverse=True) and max(sizes) < 3 * GIB
    gpu = MachineMemory(32 * GIB, 16 * GIB, (GpuMemory(0, "GPU", 6 * GIB, 6 * GIB),))
    verdicts = [e.fit for _s, e in suggest(gpu, 4096, limit=20)]
    assert verdicts[0] == Fit.FULL_GPU and verdicts == sorted(verdicts, key=lambda f: f != Fit.FULL_GPU)
    assert suggest(MachineMemory(GIB, 100 << 20), 4096) == []
