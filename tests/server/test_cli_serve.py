"""`prefill serve`'s arguments: one-line errors before any model loads; Ctrl+C stops it cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.conftest import start_server, stop_server


@pytest.mark.parametrize(("args", "words"), [
    (["--parallel", "0"], "--parallel"), (["--parallel", "65"], "--parallel"), (["--port", "70000"], "--port"),
    (["--host", "10.1.2.3"], "api-key"), (["--ollama-port", "70000"], "--ollama-port"),
    (["--port", "8123", "--ollama-port", "8123"], "--ollama-port"),
    (["--host", "10.1.2.3", "--ollama-port", "11434"], "api-key"),  # the second port keeps the first's rule
])
def test_bad_arguments_are_one_line_errors(tiny_model: Path, args: list[str], words: str) -> None:
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", str(tiny_model), *args],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 1
    assert out.stderr.startswith("prefill: ") and words in out.stderr and len(out.stderr.splitlines()) == 1


def test_interrupt_stops_the_server_cleanly(tiny_model: Path) -> None:
    s = start_server(tiny_model, "--ctx", "256", "--parallel", "1")
    assert s.client().models.list().data
    err = stop_server(s)
    assert s.proc.returncode in (0, 130) and "Traceback" not in err
