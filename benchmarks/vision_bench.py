"""Images through the chat engine: the encoder's cost, and what turn 2 of a chat with an image costs.

Turn 1 shows the model an image and a question; turn 2 asks a follow-up in the same chat. With the
KV cache reused, turn 2 evaluates only what is new (goals: `turn1_evaluated_again` is 0, so
`turn2_evaluated_tokens` <= `turn2_new_tokens`, the answer and the follow-up; `turn2_image_encode_ms`
is 0; the part of the answer evaluated again is its text read back where it tokenizes otherwise) and
its time to first token is a fraction of turn 1's (`ttft_ratio` = turn 2 / turn 1).
`turn2_cold_ttft_ms` is turn 2's prompt with an empty cache (the image encoded again): what a
handler that clears the cache every call pays.

By default the tiny random-weight vision model (python -m prefill.bench.tiny_vision: 56 px, 16 image
tokens) is written to a temporary folder; `--size clip` gives its projector a CLIP-like load instead
(224 px, 256 image tokens, 4 layers 192 wide), so the encoder's time is worth measuring; --model and
--mmproj measure a real pair.

    PYTHONPATH=app .venv/bin/python benchmarks/vision_bench.py [--reps 5] [--size tiny|clip]
        [--model M --mmproj P] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))


def photo(width: int = 640, height: int = 480) -> bytes:
    """A PNG with a photo's kind of content (gradients and noise), not a flat colour."""
    from PIL import Image

    gradient = Image.linear_gradient("L").resize((width, height))
    noise = Image.effect_noise((width, height), 40)
    img = Image.merge("RGB", (gradient, noise, gradient.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def measure(model: Path, mmproj: Path, reps: int, threads: int, n_ctx: int) -> dict[str, object]:
    from prefill.engine.events import Finished, PrefillDone
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.message import Message
    from prefill.engine.request import ChatRequest
    from prefill.engine.settings import LoadSettings, SamplingSettings
    from prefill.engine.vision.image_door import check_image

    settings = LoadSettings(n_ctx=n_ctx, n_gpu_layers="none", **({"threads": threads} if threads else {}))
    engine = ChatEngine.load(model, settings, mmproj=mmproj)
    sampling = SamplingSettings(temperature=0.0, max_tokens=16, repeat_penalty=1.0)
    image = check_image(photo())

    def turn(msgs: list[Message]) -> tuple[PrefillDone, Finished]:
        events = list(engine.stream(ChatRequest.of(msgs, sampling)))
        done = next(e for e in events if isinstance(e, PrefillDone))
        end = events[-1]
        assert isinstance(end, Finished), end
        return done, end

    rows: list[dict[str, float]] = []
    follow_up = "What colour is it, mostly?"
    try:
        turn([Message("user", "warm-up", images=(image,))])  # first-use allocations out of the figures
        for _ in range(reps):
            engine.reset_cache()
            assert engine.projector is not None
            engine.projector.forget_embeddings()
            msgs = [Message("system", "You describe pictures briefly."),
                    Message("user", "What is in this picture?", images=(image,))]
            p1, f1 = turn(msgs)
            msgs += [Message("assistant", f1.text), Message("user", follow_up)]
            p2, f2 = turn(msgs)
            engine.reset_cache()
            assert engine.projector is not None
            engine.projector.forget_embeddings()  # as a handler that starts afresh every call
            _, cold = turn(msgs)
            rows.append({
                "image_tokens": p1.image_tokens, "image_encode_ms": p1.image_encode_ms,
                "turn1_prompt_tokens": p1.prompt_tokens, "turn1_ttft_ms": f1.metrics.ttft_ms,
                "turn2_prompt_tokens": p2.prompt_tokens, "turn2_cached_tokens": p2.cached_tokens,
                "turn2_evaluated_tokens": p2.evaluated_tokens, "turn2_image_encode_ms": p2.image_encode_ms,
                "turn2_new_tokens": p2.prompt_tokens - p1.prompt_tokens,  # the answer and the follow-up
                "turn1_evaluated_again": max(0, p1.prompt_tokens - p2.cached_tokens),  # goal: 0
                "turn2_ttft_ms": f2.metrics.ttft_ms,
                "turn2_cold_ttft_ms": cold.metrics.ttft_ms,
            })
    finally:
        engine.close()
    out: dict[str, object] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out["ttft_ratio"] = round(float(out["turn2_ttft_ms"]) / float(out["turn1_ttft_ms"]), 3)  # type: ignore[arg-type]
    out["cold_ttft_ratio"] = round(float(out["turn2_cold_ttft_ms"]) / float(out["turn1_ttft_ms"]), 3)  # type: ignore[arg-type]
    out.update(model=str(model.name), mmproj=str(mmproj.name), reps=reps, image_px="640x480")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="a vision model's GGUF (default: the tiny one)")
    parser.add_argument("--mmproj", type=Path, help="its projector (with --model)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="decode threads (0: the default)")
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--size", choices=("tiny", "clip"), default="tiny",
                        help="the written projector's size (without --model)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    if (args.model is None) != (args.mmproj is None):
        parser.error("--model and --mmproj go together")
    with tempfile.TemporaryDirectory() as tmp:
        if args.model is None:
            from prefill.bench.tiny_vision import VisionShape, write_tiny_vision

            shape = VisionShape() if args.size == "tiny" else VisionShape(
                image_size=224, n_embd=192, n_head=4, n_ff=768, n_layer=4, n_hidden=256)
            args.model, args.mmproj = write_tiny_vision(tmp, shape)
        result = measure(args.model, args.mmproj, args.reps, args.threads, args.ctx)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:36} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
