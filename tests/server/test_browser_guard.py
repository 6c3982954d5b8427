"""Loopback is not private from the browser: a rebinding page's Host, a cross-site simple POST and a
foreign Origin are refused before any work, on a real `prefill serve`; the server keeps serving."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2 as httpx
import pytest

from prefill.server.browser_guard import LOOPBACK_NAMES, allowed_hosts, host_name
from tests.server.conftest import Served, start_server, stop_server

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}


def chat(server: Served, **headers: str) -> httpx.Response:
    return httpx.post(server.base + "/chat/completions", json={"model": server.model_id, **CHAT},
                      headers=headers, timeout=60)


def test_host_names_and_what_each_bind_allows() -> None:
    assert host_name("127.0.0.1:8080") == "127.0.0.1" and host_name("[::1]:80") == "::1"
    assert host_name("LOCALHOST") == "localhost" and host_name("::1") == "::1"
    assert allowed_hosts("127.0.0.1") == LOOPBACK_NAMES
    assert allowed_hosts("0.0.0.0") is None  # every address, no list: the key guards the door
    hosts = allowed_hosts("192.168.1.4", ("box.lan",))
    assert hosts is not None and {"192.168.1.4", "box.lan", "localhost"} <= hosts and "evil.example" not in hosts


def test_a_rebinding_page_is_misdirected(server: Served) -> None:
    before = server.slots()["served"]
    for path, method in (("/chat/completions", "POST"), ("/models", "GET")):
        r = httpx.request(method, server.base + path, json={"model": server.model_id, **CHAT},
                          headers={"Host": "attacker.example:8080"}, timeout=30)
        assert r.status_code == 421 and r.json()["error"]["code"] == "misdirected_request"
    r = httpx.get(server.url + "/slots", headers={"Host": "attacker.example"}, timeout=30)
    assert r.status_code == 421  # the window's slots are not readable either
    assert server.slots()["served"] == before  # nothing ran
    assert chat(server, Host="localhost").status_code == 200


def test_a_cross_site_simple_post_runs_nothing(server: Served) -> None:
    before = server.slots()["served"]
    body = json.dumps({"model": server.model_id, **CHAT}).encode()
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        headers = {"Content-Type": ctype} if ctype else {}
        r = httpx.post(server.base + "/chat/completions", content=body, headers=headers, timeout=30)
        assert r.status_code == 415, (ctype, r.text)
    assert server.slots()["served"] == before
    assert chat(server, **{"Content-Type": "application/json; charset=utf-8"}).status_code == 200


def test_a_foreign_origin_is_refused(server: Served) -> None:
    r = chat(server, Origin="http://evil.example")
    assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in r.headers
    assert httpx.get(server.base + "/models", headers={"Origin": "null"}).status_code == 403
    own = server.url  # the server's own origin is not foreign
    assert chat(server, Origin=own).status_code == 200


@pytest.fixture(scope="module")
def named(tiny_model: Path):
    s = start_server(tiny_model, "--parallel", "1", "--ctx", "256", "--cors-origin", "http://app.example",
                     "--allowed-host", "prefill.test")
    yield s
    stop_server(s)


def test_allowed_names_and_origins_are_served(named: Served) -> None:
    assert chat(named, Host="prefill.test", Origin="http://app.example").status_code == 200
    assert chat(named, Host="other.test").status_code == 421
    pre = httpx.options(named.base + "/chat/completions", headers={
        "Origin": "http://app.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "http://app.example"

