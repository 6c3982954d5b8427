"""A reasoning model through `prefill serve`: its thinking arrives in `reasoning_content`
(streamed and not), apart from `content`, as llama.cpp's server sends it."""

from __future__ import annotations

import pytest

from tests.engine.vocab_models import write_thinker
from tests.server.conftest import start_server, stop_server


@pytest.fixture(scope="module")
def thinker_server(tmp_path_factory: pytest.TempPathFactory):
    model = write_thinker(tmp_path_factory.mktemp("thinker") / "thinker.gguf")
    s = start_server(model, "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)


def test_reasoning_content_apart_from_content(thinker_server) -> None:
    client = thinker_server.client()
    ask = [{"role": "user", "content": "What is 2+2?"}]
    reply = client.chat.completions.create(model=thinker_server.model_id, messages=ask)
    message = reply.choices[0].message
    assert message.content == "The answer: 4!"
    assert message.model_extra["reasoning_content"] == "Two and two make four."
    thinking, answer = [], []
    for chunk in client.chat.completions.create(model=thinker_server.model_id, messages=ask, stream=True):
        if chunk.choices:
            delta = chunk.choices[0].delta
            thinking.append((delta.model_extra or {}).get("reasoning_content") or "")
            answer.append(delta.content or "")
    assert "".join(thinking) == "Two and two make four."
    assert "".join(answer) == "The answer: 4!"


def test_raw_completions_stay_raw(thinker_server) -> None:
    text = thinker_server.client().completions.create(model=thinker_server.model_id, prompt="hello", max_tokens=4)
    assert text.choices[0].text is not None  # no template, no parsing: whatever the model wrote
