"""Malformed requests get OpenAI-shaped errors with the right status, and the server keeps serving."""

from __future__ import annotations

import httpx2 as httpx
import openai
import pytest

from tests.server.conftest import Served

HELLO = [{"role": "user", "content": "hi"}]


def post(server: Served, path: str, body: bytes | dict, **headers: str) -> httpx.Response:
    h = {"Authorization": f"Bearer {server.key}", "Content-Type": "application/json", **headers}
    if isinstance(body, dict):
        return httpx.post(server.base + path, json=body, headers=h, timeout=60)
    return httpx.post(server.base + path, content=body, headers=h, timeout=60)


def assert_openai_error(r: httpx.Response, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    if code is not None:
        assert err["code"] == code
    return err


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe", b"", b"[" * 20_000 + b"]" * 20_000,
                                  b'{"model": "m", "n": ' + b"9" * 5000 + b"}"])
def test_malformed_json_is_400(server: Served, body: bytes) -> None:
    assert_openai_error(post(server, "/chat/completions", body), 400)


def test_unknown_model_is_404(server: Served) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        server.client().chat.completions.create(model="gpt-4o", messages=HELLO)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        server.client().completions.create(model="nope", prompt="x")


def test_missing_or_bad_messages_are_400(server: Served) -> None:
    err = assert_openai_error(post(server, "/chat/completions", {"model": server.model_id}), 400)
    assert err["param"] == "messages"
    with pytest.raises(openai.BadRequestError):
        server.client().chat.completions.create(model=server.model_id, messages=[])
    for bad in ([{"role": "wizard", "content": "x"}], [{"role": "user", "content": 5}], ["hi"],
                [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]):
        assert_openai_error(post(server, "/chat/completions", {"model": server.model_id, "messages": bad}), 400)


@pytest.mark.parametrize("extra", [
    {"temperature": "hot"}, {"temperature": 9}, {"top_p": 1.5}, {"max_tokens": 0}, {"max_tokens": True},
    {"n": 2}, {"stop": [1, 2]}, {"stream": "yes"}, {"seed": 1.5}, {"frequency_penalty": 3},
    {"tools": [{"type": "function"}]}, {"logprobs": True},
])
def test_bad_parameters_are_400(server: Served, extra: dict) -> None:
    body = {"model": server.model_id, "messages": HELLO, **extra}
    assert_openai_error(post(server, "/chat/completions", body), 400)


def test_a_prompt_over_the_context_is_400(server: Served) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        server.client().chat.completions.create(model=server.model_id,
                                                messages=[{"role": "user", "content": "word " * 2000}])
    assert e.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):
        server.client().completions.create(model=server.model_id, prompt="word " * 2000, stream=True)


def test_a_body_over_the_limit_is_413(server: Served) -> None:
    big = b'{"model": "x", "messages": [], "pad": "' + b"a" * (9 * 2**20) + b'"}'
    assert_openai_error(post(server, "/chat/completions", big), 413)

    def chunked():  # no Content-Length: counted as it arrives
        yield b'{"pad": "'
        for _ in range(9):
            yield b"a" * 2**20
        yield b'"}'
    assert_openai_error(post(server, "/completions", chunked()), 413)


def test_unknown_paths_and_methods_are_openai_shaped(server: Served) -> None:
    assert_openai_error(post(server, "/images/generations", {"model": server.model_id}), 404)
    r = httpx.get(server.base + "/chat/completions", headers={"Authorization": "Bearer x"})
    assert_openai_error(r, 405)


def test_the_server_keeps_serving_after_errors(server: Served) -> None:
    for body in (b"{", b'{"model": "x"}', b"[]"):
        post(server, "/chat/completions", body)
    r = server.client().chat.completions.create(model=server.model_id, messages=HELLO, max_tokens=4)
    assert r.choices[0].finish_reason in ("stop", "length")
    assert server.proc.poll() is None
