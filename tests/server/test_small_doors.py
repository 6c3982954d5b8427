"""The server's smaller doors, as clients meet them: `logit_bias` applied (or refused in words), a
model looked up by id, `HEAD /` and `GET /` answered (coding agents probe them), a 404 that names the
path, and one access-log line per request on stderr, without bodies or keys."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import openai
import pytest

from tests.engine.vocab_models import Vocab
from tests.server.conftest import Served, start_server, stop_server

KEY = "sk-test-secret-key"
ASK = [{"role": "user", "content": "Name a colour."}]


@pytest.fixture(scope="module")
def smol(smollm2: Path) -> Iterator[Served]:
    s = start_server(smollm2, "--parallel", "1", "--ctx", "1024", "--api-key", KEY)
    yield s
    stop_server(s)


def first_token(s: Served, **kw: object) -> tuple[str, int]:
    r = s.client().chat.completions.create(model=s.model_id, messages=ASK, temperature=0, max_tokens=1, **kw)
    return r.choices[0].message.content or "", r.usage.completion_tokens


def test_logit_bias_bans_and_forces_tokens(smol: Served, smollm2: Path) -> None:
    plain, _ = first_token(smol)
    vocab = Vocab(smollm2)  # the model's own tokenizer, to name tokens by id
    try:
        (token,) = vocab.tokenize(plain)[:1]
        forced = vocab.tokenize(" zebra")[0]
        shown = vocab.piece(forced)
    finally:
        vocab.close()
    banned, _ = first_token(smol, logit_bias={str(token): -100})
    assert banned != plain  # its likeliest first token banned: another comes
    assert first_token(smol, logit_bias={str(forced): 100})[0] == shown  # a bias of 100 makes it the pick


@pytest.mark.parametrize("bias, said", [
    ({"99999999": 5}, "does not have"), ({"12": 101}, "-100 to 100"), ({"x": 1}, "token ids"), ([1, 2], "object"),
])
def test_a_bad_logit_bias_is_refused_in_words(smol: Served, bias: object, said: str) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        smol.client().chat.completions.create(model=smol.model_id, messages=ASK, logit_bias=bias)  # type: ignore[arg-type]
    assert e.value.body["param"] == "logit_bias" and said in e.value.body["message"]


def test_a_model_by_id_the_root_and_a_named_404(smol: Served) -> None:
    client = smol.client()
    assert client.models.retrieve(smol.model_id).id == smol.model_id
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-4o")
    assert "gpt-4o" in e.value.body["message"] and smol.model_id in e.value.body["message"]
    auth = {"Authorization": f"Bearer {KEY}"}
    assert httpx.head(smol.url + "/", headers=auth, timeout=10).status_code == 200
    assert httpx.get(smol.url + "/", headers=auth, timeout=10).json()["models"] == [smol.model_id]
    missing = httpx.post(smol.url + "/v1/audio/speech", headers=auth, json={}, timeout=10)  # no dialect serves it
    assert missing.status_code == 404
    message = missing.json()["error"]["message"]
    assert "POST /v1/audio/speech" in message and "POST /v1/chat/completions" in message
    assert "POST /v1/messages" in message and "POST /v1/responses" in message  # each dialect's routes among them
    assert "POST /api/chat" in message


def _settled(smol: Served) -> int:
    """Where the next test's access lines start: after the line of a request of its own, so a line an
    earlier test's request wrote late (after its client had the response) is not counted as this one's."""
    mark = "/v1/settle-" + uuid.uuid4().hex
    httpx.get(smol.url + mark, headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        at = next((i for i, ln in enumerate(smol.stderr) if mark in ln), None)
        if at is not None:
            return at + 1
        time.sleep(0.02)
    raise AssertionError("the settling request's access line never came")


def test_each_request_has_one_access_line_without_body_or_key(smol: Served) -> None:
    before = _settled(smol)
    secret = "the body says pineapple"
    smol.client().chat.completions.create(model=smol.model_id, messages=[{"role": "user", "content": secret}],
                                          max_tokens=3, temperature=0)
    httpx.get(smol.url + "/v1/nothing/%1B[31mred", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    httpx.get(smol.url + "/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10)
    def said() -> list[str]:
        return [ln for ln in smol.stderr[before:] if ln.startswith("prefill: ")]

    end = time.monotonic() + 10  # each line is written once its response is sent: wait for the third
    while len(said()) < 3 and time.monotonic() < end:
        time.sleep(0.02)
    lines = said()
    assert len(lines) == 3, lines
    chat, missing, refused = lines
    assert chat.startswith("prefill: POST /v1/chat/completions 200 ") and "+3 tokens" in chat and chat.endswith(" ms\n")
    assert " 404 " in missing and "\x1b" not in missing and "\\x1b" in missing
    assert refused.startswith("prefill: GET /v1/models 401 ")
    joined = "".join(lines)
    assert secret not in joined and KEY not in joined and "wrong" not in joined
