"""The GPU check's measurements (run by benchmarks/gpu_check.sh, which prepares llama_cpp first).

On a machine with an NVIDIA GPU and a CUDA build of llama.cpp, for SmolLM2 (or, where its package
is not installed, a random-weight model of its shapes) and a ~1 GB random-weight model written here:
every layer offloaded (the device report), `prefill bench`'s engine ÷ lean loop, decode tok/s ÷ the
memory-bandwidth bound (weights read once per token), the fit estimate against the GPU memory
llama.cpp allocated and against nvidia-smi, and the prefill of an 8k-token prompt; then
benchmarks/serve_bench.py at 1, 4 and 16 clients. Prints one JSON object. Without a GPU it says so,
with what it could see (the build, and the line a CUDA build says on the CPU), and exits 0.

    python benchmarks/gpu_check.py [--bandwidth-tbs 4.8] [--skip-serve] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))

from prefill.bench.side_by_side import bench
from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.cuda_libs import is_cuda_build, preload
from prefill.engine.gguf.header import read_header
from prefill.engine.llama.hardware import machine_memory
from prefill.engine.llama.memory_fit import estimate_fit
from prefill.engine.llama.offload import with_vram
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.settings import LoadSettings
from prefill.hub.bundled import bundled_model_path

# The ~1 GB model: llama-shaped, F16, 542 M parameters (8 layers of 2048 wide, 32000 tokens).
BIG = {"n_layer": 8, "n_embd": 2048, "n_head": 16, "n_ff": 5632, "n_vocab": 32000, "context_length": 16384}
# SmolLM2-135M's shapes, for a machine without its package (F16 here: 270 MB instead of 98).
SMOL_SHAPES = {"n_layer": 30, "n_embd": 576, "n_head": 9, "n_ff": 1536, "n_vocab": 49152, "context_length": 8192}


def nvidia_smi(query: str) -> list[list[str]]:
    """nvidia-smi --query-gpu=QUERY, a row per GPU; [] without nvidia-smi or a driver."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [[f.strip() for f in line.split(",")] for line in out.stdout.splitlines() if line.strip()]


def vram_used_mib() -> int:
    rows = nvidia_smi("memory.used")
    return int(rows[0][0]) if rows and rows[0][0].isdigit() else -1


def timed(out: dict[str, Any], key: str, fn: Callable[[], Any]) -> Any:
    """Run one step; its result (or its error, in one line) under `key`, with its seconds."""
    start = time.perf_counter()
    try:
        out[key] = fn()
    except Exception as e:  # one step's failure must not lose the others' figures
        out[key] = {"error": f"{type(e).__name__}: {e}"}
    out.setdefault("seconds", {})[key] = round(time.perf_counter() - start, 1)
    return out[key]


def build_info() -> dict[str, Any]:
    import llama_cpp

    return {"llama_cpp": llama_cpp.__version__, "path": str(Path(llama_cpp.__file__).parent),
            "cuda_build": is_cuda_build(), "preloaded": [p.name for p in preload()],
            "supports_gpu_offload": bool(llama_cpp.llama_supports_gpu_offload())}


def cpu_line(work: Path) -> dict[str, Any]:
    """What a build says when it runs on the CPU with every layer asked for (a tiny model)."""
    model = write_tiny_llama(work / "tiny.gguf")
    engine = ChatEngine.load(model, LoadSettings(n_ctx=256, n_gpu_layers="all"))
    try:
        return {"summary": engine.device.summary, "warning": engine.device.warning}
    finally:
        engine.close()


def offload(model: Path, n_ctx: int) -> dict[str, Any]:
    """Load with every layer on the GPU: what llama.cpp offloaded and allocated, against the estimate."""
    settings = LoadSettings(n_ctx=n_ctx, n_gpu_layers="all")
    memory = machine_memory()
    estimate = estimate_fit(read_header(model), n_ctx, memory, settings.kv_type, settings.n_batch,
                            settings.flash_attn == "on")  # "auto" as offload.py estimates it: off
    before = vram_used_mib()
    engine = ChatEngine.load(model, settings)
    try:
        after = vram_used_mib()
        device = with_vram(engine.device, engine.runtime.load_log)
        measured = device.vram_bytes
        return {
            "gpu_layers": device.gpu_layers, "total_layers": device.total_layers, "device": device.device,
            "warning": device.warning, "model_bytes": engine.runtime.model_bytes(),
            "vram_llama_bytes": measured,
            "vram_nvidia_smi_bytes": (after - before) << 20 if before >= 0 and after >= 0 else None,
            "fit_estimate": {"fit": estimate.fit.value, "gpu_layers": estimate.gpu_layers,
                             "vram_needed": estimate.vram_needed, "weights": estimate.weights,
                             "kv_cache": estimate.kv_cache, "compute": estimate.compute},
            "estimate_over_llama": round(estimate.vram_needed / measured, 3) if measured else None,
        }
    finally:
        engine.close()


def speed(model: Path, bandwidth: float) -> dict[str, Any]:
    """`prefill bench` (engine and lean loop, 512-token prompt, 256 tokens) and the bandwidth bound."""
    r = bench(model, 512, 256, 3, LoadSettings(n_ctx=1024, n_gpu_layers="all"))
    bytes_per_token = model.stat().st_size  # every weight is read once per generated token
    bound = bandwidth / bytes_per_token
    decode = float(r["engine"]["decode_tps"])
    return {
        "backend": r["backend"],
        "engine_decode_tps": round(decode, 1),
        "lean_decode_tps": round(float(r["lean"]["decode_tps"]), 1),
        "engine_over_lean": round(float(r["ratio"]["decode_tps"]), 3),
        "engine_over_lean_goal": 0.95,
        "engine_prefill_tps": round(float(r["engine"]["prefill_tps"]), 1),
        "bandwidth_bound_tps": round(bound, 1),
        "decode_over_bound": round(decode / bound, 3),
        "runs": r["runs"],
    }


def prefill_8k(model: Path) -> dict[str, Any]:
    r = bench(model, 8000, 16, 1, LoadSettings(n_ctx=8192 + 256, n_gpu_layers="all"))
    e = r["engine"]
    return {"prompt_tokens": 8000, "prefill_tps": round(float(e["prefill_tps"]), 1),
            "prefill_s": round(8000 / float(e["prefill_tps"]), 3) if e["prefill_tps"] else None}


def script(name: str, args: list[str], timeout: float) -> dict[str, Any]:
    """benchmarks/`name` run with `args`: its exit, the JSON lines it printed, its stderr's tail where
    it failed; or, past `timeout`, an error."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / name), *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return {"error": f"{name} ran past {timeout:.0f} s", "stderr_tail": str(e.stderr or "")[-1500:]}
    return {"exit": done.returncode, "lines": [json.loads(line) for line in done.stdout.splitlines()
                                              if line.startswith("{")],
            "stderr_tail": done.stderr[-1500:] if done.returncode else ""}


def serve(timeout: float) -> dict[str, Any]:
    """benchmarks/serve_bench.py at 1, 4 and 16 clients (16 slots), short runs."""
    models = "smollm2,tiny" if bundled_model_path() is not None else "tiny"
    r = script("serve_bench.py", ["--models", models, "--clients", "1,4,16", "--parallel", "16", "--requests", "2",
                                  "--reps", "2", "--pairs", "4", "--load-seconds", "10", "--load-on", ""], timeout)
    if "error" in r:
        return r
    return {"exit": r["exit"], "models": r["lines"], "stderr_tail": r["stderr_tail"]}


def vs_llama_server(exe: Path, model: Path, timeout: float) -> dict[str, Any]:
    """benchmarks/vs_llama_server.py with every layer on the GPU (issue 36): 1, 4 and 8 clients, raw and
    `openai` clients, five pairs each, and the window's chat engine at one client."""
    r = script("vs_llama_server.py", ["--llama-server", str(exe), "--model", str(model), "--gpu-layers", "all",
                                      "--clients", "1,4,8", "--kinds", "raw,openai", "--pairs", "5", "--chat",
                                      "--profile", "--json"], timeout)
    if "error" in r or r["exit"] or not r["lines"]:
        return {k: r[k] for k in ("error", "exit", "stderr_tail") if k in r}
    return dict(r["lines"][-1])


def measure(model: Path, bandwidth: float) -> dict[str, Any]:
    section: dict[str, Any] = {"file": model.name, "bytes": model.stat().st_size}
    timed(section, "offload", lambda: offload(model, 4096))
    timed(section, "bench", lambda: speed(model, bandwidth))
    return section


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bandwidth-tbs", type=float, default=4.8, help="the GPU's memory bandwidth (H200: 4.8 TB/s)")
    ap.add_argument("--skip-serve", action="store_true")
    ap.add_argument("--llama-server", type=Path, help="a CUDA llama-server: vs_llama_server.py runs against it")
    ap.add_argument("--vs-timeout", type=float, default=420)
    ap.add_argument("--only-vs", action="store_true", help="only the llama-server comparison (and the build)")
    ap.add_argument("--serve-timeout", type=float, default=240)
    ap.add_argument("--work", type=Path, help="folder for the written models (default: a temporary one)")
    args = ap.parse_args()
    out: dict[str, Any] = {}
    gpus = nvidia_smi("name,compute_cap,driver_version,memory.total")
    out["gpu"] = [dict(zip(("name", "compute_cap", "driver", "memory_mib"), g)) for g in gpus] or None
    timed(out, "build", build_info)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if not gpus or not out["build"].get("supports_gpu_offload"):
            out["verdict"] = ("no GPU: nvidia-smi found none" if not gpus else
                              "a GPU, but this llama.cpp build cannot use it")
            timed(out, "on_the_cpu", lambda: cpu_line(work))
            print(json.dumps(out))
            return 0
        smol = bundled_model_path()
        if smol is None:
            smol = timed(out, "write_smollm2_shapes", lambda: write_tiny_llama(
                work / "smollm2-shapes.gguf", name="smollm2-shapes-random", weight_scale=0.02, **SMOL_SHAPES))
        if args.llama_server is not None and isinstance(smol, Path):
            timed(out, "vs_llama_server", lambda: vs_llama_server(args.llama_server, smol, args.vs_timeout))
        if args.only_vs:
            print(json.dumps(out))
            return 0
        big = timed(out, "write_1gb", lambda: write_tiny_llama(work / "big.gguf", name="random-1gb",
                                                               weight_scale=0.02, **BIG))
        bandwidth = args.bandwidth_tbs * 1e12
        models = {"smollm2": smol, "big": big}
        for label, model in models.items():
            if not isinstance(model, Path):
                continue
            out[label] = measure(model, bandwidth)
        if isinstance(big, Path):
            timed(out, "prefill_8k", lambda: prefill_8k(big))
        if not args.skip_serve:
            timed(out, "serve", lambda: serve(args.serve_timeout))
    out["verdict"] = "measured on the GPU"
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
