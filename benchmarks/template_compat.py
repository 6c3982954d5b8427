"""How published chat templates render in Prefill against transformers' `apply_chat_template`.

Reads every `*.jinja` in a folder (the project keeps no copies: point it at llama.cpp's
`models/templates/`, e.g. from llama-cpp-python's source distribution) and renders one
conversation (system, user, assistant with reasoning, user) with Prefill's `ChatTemplate`
and with transformers' renderer, given the same inputs, with the thinking switch unset, off
and on. Needs `transformers` importable (it runs without torch). Prints one JSON line per
template and a summary:

    python benchmarks/template_compat.py --templates DIR [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from prefill.engine.errors import TemplateError  # noqa: E402
from prefill.engine.message import Message
from prefill.engine.prompt.template import ChatTemplate, template_variables
from prefill.engine.request import TemplateOptions

MESSAGES = [
    Message("system", "You are a helpful assistant."),
    Message("user", "What is 2+2?"),
    Message("assistant", "2 + 2 = 4.", reasoning="Adding two and two gives four."),
    Message("user", "And 3+3?"),
]
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
VARIANTS = {"default": TemplateOptions(), "think_off": TemplateOptions(think=False),
            "think_on": TemplateOptions(think=True)}


def theirs(source: str, options: TemplateOptions) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    v = template_variables(MESSAGES, True, options, SPECIAL)
    messages = [{"role": m.role, "content": m.content, **({"reasoning_content": m.reasoning} if m.reasoning else {})}
                for m in MESSAGES]
    kwargs = {k: x for k, x in v.items() if k not in ("messages", "add_generation_prompt", "tools", "documents")}
    rendered, _ = render_jinja_template([messages], chat_template=source, add_generation_prompt=True, **kwargs)
    return rendered[0]


def compare(path: Path) -> dict[str, object]:
    source = path.read_text(encoding="utf-8")
    row: dict[str, object] = {"template": path.stem}
    for name, options in VARIANTS.items():
        try:
            ours: str | None = ChatTemplate(source, SPECIAL).render(MESSAGES, options=options)
        except TemplateError as e:
            ours, ours_error = None, str(e)[:160]
        try:
            ref: str | None = theirs(source, options)
        except Exception as e:  # transformers raises whatever the template raises
            ref, ref_error = None, f"{type(e).__name__}: {e}"[:160]
        if ours is not None and ref is not None:
            row[name] = "identical" if ours == ref else f"differs at {_first_diff(ours, ref)}"
        elif ours is None and ref is None:
            row[name] = "both refuse"
            row[f"{name}_why"] = ref_error
        elif ours is None:
            row[name] = "prefill fails"
            row[f"{name}_why"] = ours_error
        else:
            row[name] = "transformers fails"
            row[f"{name}_why"] = ref_error
    return row


def _first_diff(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--templates", type=Path, required=True)
    ap.add_argument("--json", action="store_true", help="print only the summary object")
    args = ap.parse_args()
    rows = [compare(p) for p in sorted(args.templates.glob("*.jinja"))]
    summary: dict[str, dict[str, int]] = {}
    for row in rows:
        for name in VARIANTS:
            verdict = str(row[name]).split(" at ")[0]
            summary.setdefault(name, {}).setdefault(verdict, 0)
            summary[name][verdict] += 1
        if not args.json:
            print(json.dumps(row, ensure_ascii=False))
    print(json.dumps({"templates": len(rows), "summary": summary}))


if __name__ == "__main__":
    main()
