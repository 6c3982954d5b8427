"""`prefill chat --remote`: each failure is one clear line and a non-zero exit; a cut answer is kept."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.remote.fault_server import FaultServer


def _cli(url: str, *args: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(config))
    return subprocess.run([sys.executable, "-m", "prefill", "chat", "--remote", url, "--prompt", "Hi", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_a_full_answer_has_the_local_json_fields(fault_server: FaultServer, tmp_path: Path) -> None:
    out = _cli(fault_server.url, "--model", "fake-b", "--json", config=tmp_path)
    assert out.returncode == 0, out.stderr
    turn = json.loads(out.stdout)
    assert (turn["answer"], turn["reasoning"], turn["chat_format"]) == ("Hello, world", "Let me think.", "remote")
    assert (turn["prompt_tokens"], turn["cached_tokens"], turn["decode_tps"]) == (12, 8, 55.5)
    assert (turn["kv_used"], turn["kv_total"], turn["kv_bytes"]) == (None, None, None)
    assert fault_server.requests[-1][1]["model"] == "fake-b"


def test_without_model_the_first_listed_is_used(fault_server: FaultServer, tmp_path: Path) -> None:
    out = _cli(fault_server.url, config=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Hello, world") and "KV unknown" in out.stderr
    assert fault_server.requests[-1][1]["model"] == "fake-a"


def test_a_cut_stream_prints_the_partial_answer_marked(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.mode = "cut"
    out = _cli(fault_server.url, "--json", config=tmp_path)
    assert out.returncode == 1
    turn = json.loads(out.stdout)
    assert (turn["answer"], turn["finish_reason"], turn["partial"]) == ("Hello", "error", True)
    assert "broke off" in turn["error"] or "ended before" in turn["error"]
    plain = _cli(fault_server.url, config=tmp_path)
    assert plain.returncode == 1 and plain.stdout.startswith("Hello") and "incomplete" in plain.stderr


def test_a_model_the_server_does_not_list_is_named(fault_server: FaultServer, tmp_path: Path) -> None:
    out = _cli(fault_server.url, "--model", "nope", config=tmp_path)
    assert out.returncode == 1 and "'nope'" in out.stderr and "fake-a, fake-b" in out.stderr


def test_http_and_connection_failures_are_one_line_each(fault_server: FaultServer, tmp_path: Path) -> None:
    for mode, words in (("401", "refused the key"), ("429", "rate-limiting")):
        fault_server.mode = mode
        out = _cli(fault_server.url, "--api-key", "sk-secret", config=tmp_path)
        assert out.returncode == 1 and words in out.stderr and "Traceback" not in out.stderr
        assert "sk-secret" not in out.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = _cli(f"http://127.0.0.1:{port}", config=tmp_path)
    assert out.returncode == 1 and "cannot reach" in out.stderr
    out = _cli(fault_server.url.replace("http:", "https:"), config=tmp_path)
    assert out.returncode == 1 and "TLS" in out.stderr
