"""The engine against the leanest llama.cpp loop, on SmolLM2 and on a tiny random-weight model.

Prints one JSON object per model. Rerun with: python benchmarks/engine_bench.py [--reps N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from prefill.bench.side_by_side import bench  # noqa: E402
from prefill.bench.tiny_model import write_tiny_llama  # noqa: E402
from prefill.engine.settings import LoadSettings  # noqa: E402
from prefill.hub.bundled import bundled_model_path  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    smol = bundled_model_path()
    with tempfile.TemporaryDirectory() as tmp:
        tiny = write_tiny_llama(Path(tmp) / "tiny.gguf")
        runs = []
        if smol is not None:
            runs.append(("smollm2", smol, 975, 256))
        runs.append(("tiny", tiny, 256, 4096))
        for label, model, prompt, gen in runs:
            settings = LoadSettings(n_ctx=prompt + gen + 128, n_gpu_layers="all", n_threads=args.threads)
            result = bench(model, prompt, gen, args.reps, settings)
            result["label"] = label
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
