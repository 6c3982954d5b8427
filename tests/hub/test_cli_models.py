"""`prefill search|files|get|ls|rm` end to end against the fake hub: one-line errors, exit codes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from prefill.cli import main
from prefill.hub.partial import Expected, PartialFile
from tests.hub.conftest import add_repo, payload
from tests.hub.fake_hub import FakeHub
from tests.hub.gguf_factory import write_tiny_gguf


@pytest.fixture
def env_hub(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)  # HubClient() reads it, as the CLI's is built
    return hub


def test_search_files_get_ls_rm(env_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = write_tiny_gguf(tmp_path / "src.gguf").read_bytes()
    add_repo(env_hub, "org/Tiny-GGUF", {"tiny-Q4_K_M.gguf": model, "tiny-Q8_0.gguf": payload(1000)}, downloads=7)
    models = ["--models-dir", str(tmp_path / "models")]
    assert main(["search", "tiny"]) == 0
    assert "org/Tiny-GGUF" in capsys.readouterr().out
    assert main(["files", "org/Tiny-GGUF"]) == 0
    out = capsys.readouterr().out
    assert "Q4_K_M" in out and "Q8_0" in out
    assert main(["get", "org/Tiny-GGUF", "--quant", "q4_k_m", *models]) == 0
    assert capsys.readouterr().out.strip().endswith("org/Tiny-GGUF/tiny-Q4_K_M.gguf")
    assert main(["ls", *models]) == 0
    assert "llama" in capsys.readouterr().out
    assert main(["rm", "tiny-Q4_K_M.gguf", "--yes", *models]) == 0
    assert not list((tmp_path / "models").rglob("tiny-Q4_K_M.gguf"))


def test_failures_are_one_line_and_exit_1(
    env_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_repo(env_hub, "org/Tiny-GGUF", {"a-Q4_0.gguf": payload(1000), "b-Q8_0.gguf": payload(1000)})
    models = ["--models-dir", str(tmp_path)]
    assert main(["get", "org/Missing", *models]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("prefill: repository 'org/Missing' was not found") and "\n" not in err
    assert main(["get", "org/Tiny-GGUF", *models]) == 1  # two models: which one?
    assert "choose one with --quant or --file" in capsys.readouterr().err
    env_hub.corrupt["a-Q4_0.gguf"] = 0
    assert main(["get", "org/Tiny-GGUF", "--file", "a-Q4_0.gguf", *models]) == 1
    assert "is corrupt" in capsys.readouterr().err
    assert main(["rm", "nothing.gguf", "--yes", *models]) == 1


def test_ls_and_rm_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    models = ["--models-dir", str(tmp_path)]
    assert main(["ls", "--partial", *models]) == 0
    assert "no unfinished download untouched for a week" in capsys.readouterr().err
    part = PartialFile(tmp_path, Expected("org/Big-GGUF", "Q8_0/big-Q8_0-00001-of-00002.gguf", 4 << 20, None))
    part.prepare()
    part.path.write_bytes(b"x" * (3 << 20))
    week_ago = time.time() - 8 * 24 * 3600
    for p in (part.path, part.sidecar):
        os.utime(p, (week_ago, week_ago))
    assert main(["ls", "--partial", *models]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("org/Big-GGUF/Q8_0/big-Q8_0-00001-of-00002.gguf") and "3.0 MiB of    4.0 MiB" in out
    assert "1 unfinished, 3.0 MiB in all" in err
    assert main(["rm", "--partial", "org/nothing", "--yes", *models]) == 1
    assert "no unfinished download called 'org/nothing'" in capsys.readouterr().err
    assert main(["rm", "--partial", "--yes", *models]) == 0
    assert "deleted org/Big-GGUF/Q8_0/big-Q8_0-00001-of-00002.gguf (3.0 MiB)" in capsys.readouterr().out
    assert not part.path.exists() and not part.sidecar.exists()
    assert main(["rm", *models]) == 1  # no name, no --partial


def test_get_while_another_download_holds_the_file(
    env_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_repo(env_hub, "org/Tiny-GGUF", {"a-Q4_0.gguf": payload(1000)})
    part = PartialFile(tmp_path, Expected("org/Tiny-GGUF", "a-Q4_0.gguf", None, None))
    with part.claimed():  # as the window's download holds it
        assert main(["get", "org/Tiny-GGUF", "--models-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"prefill: a-Q4_0.gguf is already being downloaded by process {os.getpid()}; "
                   "let that download finish (or stop it) and try again")
    assert main(["get", "org/Tiny-GGUF", "--models-dir", str(tmp_path)]) == 0
