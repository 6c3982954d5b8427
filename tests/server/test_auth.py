"""127.0.0.1 by default; another address only with an API key; CORS only when enabled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import openai
import pytest

from prefill.server.lifecycle import ExposureError, check_exposure, is_loopback
from tests.server.conftest import Served, start_server, stop_server

KEY = "s3cret-key-for-tests"


def test_only_loopback_needs_no_key() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.com")
    check_exposure("127.0.0.1", "")
    check_exposure("0.0.0.0", KEY)
    with pytest.raises(ExposureError):
        check_exposure("0.0.0.0", "")


def test_default_binds_loopback(server: Served) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    foreign = httpx.get(server.base + "/models", headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "Access-Control-Allow-Origin" not in foreign.headers  # CORS off


def test_another_address_without_a_key_refuses_to_start(tiny_model: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", str(tiny_model),
                          "--host", "0.0.0.0", "--port", "0"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 1
    assert "api-key" in out.stderr and "Traceback" not in out.stderr


@pytest.fixture(scope="module")
def exposed(tiny_model: Path):
    s = start_server(tiny_model, "--host", "0.0.0.0", "--api-key", KEY, "--parallel", "1", "--ctx", "256",
                     "--cors-origin", "http://app.example")
    s.url = s.url.replace("0.0.0.0", "127.0.0.1")
    yield s
    stop_server(s)


def test_bound_elsewhere_the_key_is_required(exposed: Served) -> None:
    for wrong in ("", "wrong", KEY + "x", KEY[:-1]):
        with pytest.raises(openai.AuthenticationError):
            exposed.client(key=wrong or "-").models.list()
    r = httpx.post(exposed.base + "/chat/completions", json={})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert [m.id for m in exposed.client(key=KEY).models.list().data] == [exposed.model_id]
    r = exposed.client(key=KEY).chat.completions.create(
        model=exposed.model_id, messages=[{"role": "user", "content": "hi"}], max_tokens=3)
    assert r.usage.completion_tokens >= 1
    assert httpx.get(exposed.url + "/health").status_code == 200  # probes need no key


def test_cors_when_enabled(exposed: Served) -> None:
    pre = httpx.options(exposed.base + "/chat/completions", headers={
        "Origin": "http://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert pre.status_code == 200
    assert pre.headers["access-control-allow-origin"] == "http://app.example"
    other = httpx.options(exposed.base + "/chat/completions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in other.headers


def test_a_key_on_the_command_line_is_warned_about(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.gguf")
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", missing, "--api-key", KEY],
                         capture_output=True, text=True, timeout=60, check=False)
    assert "process list" in out.stderr and "PREFILL_API_KEY" in out.stderr and KEY not in out.stderr
    env = {**os.environ, "PREFILL_API_KEY": KEY}
    out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", missing],
                         capture_output=True, text=True, timeout=60, check=False, env=env)
    assert "process list" not in out.stderr


def test_a_key_file_gives_the_key_out_of_the_process_list(tiny_model: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    s = start_server(tiny_model, "--host", "0.0.0.0", "--api-key-file", str(key_file), "--parallel", "1",
                     "--ctx", "256")
    try:
        url = s.url.replace("0.0.0.0", "127.0.0.1") + "/v1/models"
        assert httpx.get(url, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert KEY not in " ".join(s.proc.args)  # type: ignore[arg-type]
    finally:
        err = stop_server(s)
    assert "process list" not in err and "chmod" not in err
    key_file.chmod(0o644)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path, said in ((key_file, "chmod 600"), (empty, "holds no key"), (tmp_path / "none", "cannot read")):
        out = subprocess.run([sys.executable, "-m", "prefill", "serve", "--model", str(tmp_path / "none.gguf"),
                              "--api-key-file", str(path)], capture_output=True, text=True, timeout=60, check=False)
        assert said in out.stderr and "Traceback" not in out.stderr and KEY not in out.stderr
