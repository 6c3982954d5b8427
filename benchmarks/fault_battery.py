"""The whole fault battery in one go: hostile model files, chat templates, text, settings and
history files, and downloads. Prints one JSON line per case with its area and what the user
saw, then a summary line.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=app:. python benchmarks/fault_battery.py [--skip AREA ...]

Each area runs in a process of its own (a crash in one shows as that area's exit status, and
the others still run): `models` (benchmarks/fault_battery_models.py), `templates` (here),
`text` (prefill.ui.markdown.text_faults), `settings` (benchmarks/fault_battery_settings.py) and
`downloads` (benchmarks/fault_battery_downloads.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), str(ROOT)]), "QT_QPA_PLATFORM": "offscreen"}

# Templates a stranger's GGUF may carry: each must end in a worded refusal, never a hang or code run.
HOSTILE_TEMPLATES = {
    "sandbox_escape": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "globals_of_a_function": "{{ cycler.__init__.__globals__.os.system('true') }}",
    "namespace_dunder": "{% set ns = namespace(__class__=1) %}",
    "huge_multiply": "{{ 'x' * 10**9 }}",
    "doubling_string": "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                       "{% endfor %}",
    "huge_output": "{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}",
    "nested_loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "tilde_doubling": "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                      "{% endfor %}",
    "block_doubling": "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s %}{{ ns.s }}{{ ns.s }}"
                      "{% endset %}{% endfor %}",
    "macro_doubling": "{% macro d(n) %}{% if n %}{{ d(n - 1) }}{{ d(n - 1) }}{% else %}{{ 'x' * 4000000 }}"
                      "{% endif %}{% endmacro %}{{ d(20)|length }}",
    "format_width": "{{ '{:>999999999}'.format(1) }}",
    "printf_width": "{{ '%*s' % (10**9, 'x') }}",
    "center_filter": "{{ 'x'|center(10**9) }}",
    "tojson_indent": "{{ [[1]]|tojson(indent=10**9) }}",
    "join_shared": "{{ (['x' * 1000000] * 1000)|join }}",
    "str_of_shared": "{{ [['x' * 1000] * 100000] * 100 }}",
    "power_tower": "{% set ns = namespace(n=2) %}{% for i in range(9) %}{% set ns.n = ns.n ** 4096 %}{% endfor %}",
    "keeps_copies": "{% set s = 'x' * 4000000 %}{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
                    "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}",
    "refuses_the_chat": "{{ raise_exception('Conversation roles must alternate user/assistant') }}",
    "renders_nothing": "{# nothing #}",
    "does_not_compile": "{% for %}",
}

TEMPLATES_CHILD = """
import json, sys, time
from prefill.engine.errors import TemplateError
from prefill.engine.message import Message
from prefill.engine.prompt.template import ChatTemplate
cases = json.loads(sys.argv[1])
for name, source in cases.items():
    t0 = time.perf_counter()
    try:
        out = ChatTemplate(source, max_seconds=2.0).render([Message("user", "hi")])
        empty = "" if out.strip() else " (an empty prompt: the engine refuses to send it)"
        saw = "rendered " + repr(out[:60]) + empty
    except TemplateError as e:
        saw = str(e)
    print(json.dumps({"area": "templates", "case": name, "user_saw": saw,
                      "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
"""

AREAS: dict[str, list[str]] = {
    "models": [sys.executable, str(ROOT / "benchmarks" / "fault_battery_models.py")],
    "templates": [sys.executable, "-c", TEMPLATES_CHILD, json.dumps(HOSTILE_TEMPLATES)],
    "text": [sys.executable, "-c", "from prefill.ui.markdown.text_faults import fault_battery_lines\n"
                                   "for line in fault_battery_lines(): print(line, flush=True)"],
    "settings": [sys.executable, str(ROOT / "benchmarks" / "fault_battery_settings.py")],
    "downloads": [sys.executable, str(ROOT / "benchmarks" / "fault_battery_downloads.py")],
}


def run_area(area: str, timeout: int) -> tuple[int, int]:
    """Run one area's battery; print its lines tagged with the area. (exit status, cases)."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(AREAS[area], capture_output=True, text=True, env=ENV, timeout=timeout, cwd=ROOT)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, out, err = -999, partial, "timed out"
    cases = 0
    for line in out.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            record.setdefault("area", area)
            print(json.dumps(record, ensure_ascii=False), flush=True)
            cases += 1
    if rc != 0:
        print(json.dumps({"area": area, "case": "(the battery itself)", "exit": rc, "stderr": err[-500:]}), flush=True)
    print(json.dumps({"area": area, "cases": cases, "exit": rc, "seconds": round(time.perf_counter() - t0, 1)}),
          file=sys.stderr, flush=True)
    return rc, cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip", action="append", default=[], choices=sorted(AREAS))
    ap.add_argument("--timeout", type=int, default=900, help="seconds per area")
    args = ap.parse_args()
    summary = {}
    for area in AREAS:
        if area not in args.skip:
            rc, cases = run_area(area, args.timeout)
            summary[area] = {"cases": cases, "exit": rc}
    print(json.dumps({"summary": summary}))
    return 0 if all(s["exit"] == 0 for s in summary.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
