"""Write docs/reference/cli.md from the command line's own parsers, so the page cannot drift.

    python scripts/cli_reference.py            # rewrite the page
    python scripts/cli_reference.py --check    # exit 1 when the page differs from the parsers

Every command, every option with its value, choices and help, in the order `prefill COMMAND --help`
gives them. tests/test_docs_reference.py fails when the page and the parsers disagree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "cli.md"
HEAD = """# Command-line reference

Every command and option of `prefill`, made from the program's own parsers by
`scripts/cli_reference.py` (a test fails when this page and `prefill COMMAND --help` disagree).
What the commands are for, in plain words: [the terminal chat](../terminal.md),
[models and downloads](../models.md), [the server](../server.md).
The fields that `--json` prints are in [json.md](json.md).
"""


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """`prefill` itself (the window's options), then each sub-command, in --help's order."""
    sys.path.insert(0, str(ROOT / "app"))
    from prefill.cli import build_parser

    top = build_parser()
    found = [("prefill", top)]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [(f"prefill {name}", p) for name, p in action.choices.items()]
    return found


def _helps(top: argparse.ArgumentParser) -> dict[str, str]:
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option(action: argparse.Action, formatter: argparse.HelpFormatter) -> tuple[str, str]:
    """The option as a person types it, and what it does (defaults and choices expanded)."""
    if action.option_strings:
        takes = action.nargs != 0
        value = formatter._format_args(action, action.dest.upper()) if takes else ""
        usage = ", ".join(f"{s} {value}".strip() for s in action.option_strings)
    else:
        usage = formatter._format_args(action, action.dest)
    text = formatter._expand_help(action) if action.help else ""
    if action.choices and action.option_strings and action.metavar is None and "{" not in usage:
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return f"`{_cell(usage)}`", _cell(text)


def render() -> str:
    """The page, from the parsers as they are now."""
    parsers = _parsers()
    helps = _helps(parsers[0][1])
    out = [HEAD]
    for name, parser in parsers:
        formatter = parser._get_formatter()
        short = helps.get(name.removeprefix("prefill "), "") if name != "prefill" else parser.description or ""
        short = short[:1].upper() + short[1:]
        out += [f"## `{name}`", "", short + ("" if short.endswith(".") else ".") if short else "", ""]
        rows = [_option(a, formatter) for a in parser._actions
                if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
        if rows:
            out += ["| option | what it does |", "|---|---|"]
            out += [f"| {usage} | {text} |" for usage, text in rows]
            out.append("")
    text = "\n".join(line for i, line in enumerate(out) if line or (i and out[i - 1]))
    return text.rstrip("\n") + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the page differs from the parsers")
    args = ap.parse_args()
    text = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} differs from the parsers: run python scripts/cli_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
