"""The documentation cannot drift: the command-line page is the parsers', the JSON page lists what the
commands print, and every link and picture in README.md and docs/ leads somewhere."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from prefill.cli import build_parser
from prefill.commands.chat_tools import tool_calls_json
from prefill.engine.events import Finished, MetricsSnapshot
from prefill.engine.message import Message, ToolCall
from prefill.server.openai.shapes import timings
from prefill.session.tool_loop import LoopFinished, ToolCallDone
from tests.commands.test_chat_terminal import prefill

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
JSON_PAGE = DOCS / "reference" / "json.md"
SMALL = ["--model", "bundled", "--gpu-layers", "none", "--threads", "1"]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sections(page: str) -> dict[str, str]:
    """A page's text by heading (any level; backticks dropped)."""
    found: dict[str, str] = {}
    name = ""
    for line in page.splitlines():
        if re.match(r"#{1,6} ", line):
            name = line.lstrip("#").strip().replace("`", "")
            found[name] = ""
        elif name:
            found[name] += line + "\n"
    return found


def _listed(section: str) -> set[str]:
    """Fields a section lists: a table row's first cell, and every name in a paragraph that opens
    with 'Plus' or 'Its figures:'."""
    names: set[str] = set()
    for para in section.split("\n\n"):
        text = para.strip()
        if text.startswith(("Plus", "Its figures:")):
            names |= set(re.findall(r"`([a-z_][a-z0-9_]*)`", text))
        for line in text.splitlines():
            row = re.match(r"\| `([^`]+)` \|", line)
            if row:
                names.add(row.group(1))
    return names


def _fields(obj: object, prefix: str = "") -> set[str]:
    """A printed object's fields: nested objects' as `a.b` (not `a` itself), a list's items' as `a[].b`."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            name = f"{prefix}{k}"
            if not isinstance(v, dict):
                out.add(name)
            out |= _fields(v, name + ".")
    elif isinstance(obj, list):
        for item in obj:
            out |= {f"{prefix[:-1]}[].{k}" for k in (item if isinstance(item, dict) else ())}
    return out


def _json_page() -> dict[str, set[str]]:
    return {name: _listed(text) for name, text in _sections(JSON_PAGE.read_text()).items()}


def _one_json(out: str) -> dict[str, object]:
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    return obj


# --- the command-line page ---------------------------------------------------------------------

def test_the_cli_page_is_what_the_parsers_make() -> None:
    page = DOCS / "reference" / "cli.md"
    assert page.read_text(encoding="utf-8") == _script().render(), (
        "docs/reference/cli.md differs from the parsers: run python scripts/cli_reference.py")


def test_every_option_of_every_help_is_on_its_command_s_page_section() -> None:
    sections = {k: v for k, v in _sections((DOCS / "reference" / "cli.md").read_text()).items()
                if k.startswith("prefill")}
    parser = build_parser()
    commands = {"prefill": parser}
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            commands |= {f"prefill {name}": p for name, p in action.choices.items()}
    assert set(sections) == set(commands)
    for name, p in commands.items():
        helped = set(re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", p.format_help())) - {"-h", "--help"}
        missing = {o for o in helped if o not in sections[name]}
        assert not missing, f"{name} --help has {sorted(missing)}, its page section does not"


def test_a_new_flag_without_its_line_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    before = script.render()
    real = build_parser

    def more() -> object:
        parser = real()
        parser.add_argument("--brand-new-flag", help="something new")
        return parser

    monkeypatch.setattr("prefill.cli.build_parser", more)
    after = script.render()
    assert "--brand-new-flag" in after and after != before


# --- the JSON page -----------------------------------------------------------------------------

def test_the_figures_are_listed_once_with_their_meaning() -> None:
    page = _json_page()
    assert page["The figures"] == set(MetricsSnapshot().as_dict())
    tables = re.findall(r"^\| `([^`]+)` \|", JSON_PAGE.read_text(), re.M)
    figures = page["The figures"]
    assert len([t for t in tables if t in figures]) == len(figures)  # a figure's meaning is given once


def test_chat_json_prints_the_fields_the_page_lists(tmp_path: Path) -> None:
    out = prefill(tmp_path, "chat", *SMALL, "--prompt", "Hi", "--max-tokens", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert _fields(_one_json(out.stdout)) == _json_page()["prefill chat --json"]


def test_tool_fields_are_the_page_s() -> None:
    call = ToolCall("c1", "weather", '{"city": "Oslo"}')
    done = ToolCallDone(call, "Sunny", False, 0.01, round=1)
    end = LoopFinished("done", Finished("stop", "It is sunny."), (Message("user", "Weather?"),), (done,))
    assert _fields(tool_calls_json(end)) == _json_page()["With --mcp"]


def test_a_failed_remote_answer_prints_the_fields_the_page_lists(capsys: pytest.CaptureFixture[str]) -> None:
    from prefill.commands.errors import CliError
    from prefill.commands.remote_chat import keep_partial
    from prefill.remote.errors import RemoteError

    def cut() -> object:
        raise RemoteError("http://127.0.0.1:9", "the stream was cut", partial="Half an ans")
        yield  # a generator

    with pytest.raises(CliError):
        list(keep_partial(cut(), as_json=True))  # type: ignore[arg-type]
    assert _fields(_one_json(capsys.readouterr().out)) == _json_page()["When a --remote answer fails"]


@pytest.mark.model  # --self-test loads the bundled model
def test_self_test_prints_the_fields_the_page_lists(tmp_path: Path) -> None:
    out = prefill(tmp_path, "--self-test")
    assert out.returncode == 0, out.stderr
    assert _fields(_one_json(out.stdout)) == _json_page()["prefill --self-test"]


def test_bench_json_prints_the_fields_the_page_lists(tmp_path: Path) -> None:
    out = prefill(tmp_path, "bench", *SMALL, "--prompt-tokens", "16", "--gen-tokens", "8", "--reps", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert _fields(_one_json(out.stdout)) == _json_page()["prefill bench --json"]


def test_speculative_bench_json_prints_the_fields_the_page_lists(tmp_path: Path) -> None:
    out = prefill(tmp_path, "bench", *SMALL, "--gen-tokens", "16", "--reps", "1", "--speculative", "ngram",
                  "--json")
    assert out.returncode == 0, out.stderr
    printed = _one_json(out.stdout)
    tasks = printed["tasks"]
    assert isinstance(tasks, dict) and set(tasks) == {"copy", "no_copy"}  # the tasks the page names
    fields = {re.sub(r"^tasks\.(copy|no_copy)", "tasks.<task>", f) for f in _fields(printed)}
    assert fields == _json_page()["prefill bench --speculative MODE --json"]


def test_the_server_timings_are_the_page_s() -> None:
    printed = timings(MetricsSnapshot(draft_n=3, draft_n_accepted=2), load_ms=120.0)
    assert set(printed) == _json_page()["The server's timings"]


# --- links and pictures ------------------------------------------------------------------------

def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted(DOCS.rglob("*.md"))]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in page.read_text().splitlines() if re.match(r"#{1,6} ", line)}


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_picture_leads_somewhere(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address: not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(ROOT)} links to {target}, which is not there"
        if anchor:
            assert anchor in _anchors(dest), f"{page.relative_to(ROOT)}: no heading #{anchor} in {path or 'itself'}"
        if target.endswith(".png"):
            assert dest.parent == ROOT / "packaging" / "screenshots", target  # what the screenshot scripts take


def test_every_docs_page_is_reachable_from_the_readme_or_the_index() -> None:
    linked = set()
    for page in (ROOT / "README.md", DOCS / "README.md"):
        linked |= {(page.parent / t.partition("#")[0]).resolve()
                   for t in re.findall(r"\]\(([^)\s#]+)[^)]*\)", page.read_text())}
    orphans = [p.relative_to(ROOT) for p in DOCS.rglob("*.md") if p.resolve() not in linked and p.name != "README.md"]
    assert not orphans, orphans


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 90, len(lines)
    assert any("](docs/" in line for line in lines[:40])  # it sends the reader on early
    assert "make run" in "\n".join(lines) and "make test" in "\n".join(lines)  # the two set-up commands
