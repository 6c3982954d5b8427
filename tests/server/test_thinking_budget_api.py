"""A thinking budget through `prefill serve`, as OpenAI clients ask for one: `reasoning_budget`
(an extension), `reasoning_effort` (a budget for models whose template does not read the effort;
"none": no thinking), whole and streamed, with the official `openai` client."""

from __future__ import annotations

import openai
import pytest

from prefill.engine.prompt.thinking_budget import NOTE
from tests.engine.budget_thinkers import FAMILIES, write_budget_thinker
from tests.server.conftest import start_server, stop_server

ASK = [{"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(scope="module")
def budget_server(tmp_path_factory: pytest.TempPathFactory):
    thinker = write_budget_thinker(tmp_path_factory.mktemp("budget") / "qwen.gguf", "qwen")
    s = start_server(thinker.path, "--parallel", "2", "--ctx", "1024")
    yield s
    stop_server(s)


FULL = FAMILIES["qwen"].thinking


def test_a_reasoning_budget_closes_the_thinking_whole_and_streamed(budget_server) -> None:
    client, full = budget_server.client(), FULL
    reply = client.chat.completions.create(model=budget_server.model_id, messages=ASK,
                                           extra_body={"reasoning_budget": 3})
    message = reply.choices[0].message
    thought = message.model_extra["reasoning_content"].strip()  # as written: the close's line break kept
    assert thought.endswith(NOTE) and full not in thought
    assert (message.content, reply.choices[0].finish_reason) == ("It is 4!", "stop")
    thinking, answer = [], []
    for chunk in client.chat.completions.create(model=budget_server.model_id, messages=ASK, stream=True,
                                                extra_body={"reasoning_budget": 3}):
        if chunk.choices:
            delta = chunk.choices[0].delta
            thinking.append((delta.model_extra or {}).get("reasoning_content") or "")
            answer.append(delta.content or "")
    assert "".join(thinking).strip() == thought and "".join(answer) == "It is 4!"


def test_without_a_budget_the_model_thinks_it_all(budget_server) -> None:
    reply = budget_server.client().chat.completions.create(model=budget_server.model_id, messages=ASK)
    assert FULL in reply.choices[0].message.model_extra["reasoning_content"]


def test_reasoning_effort_none_turns_thinking_off_and_low_leaves_a_short_thinking_whole(budget_server) -> None:
    client = budget_server.client()
    off = client.chat.completions.create(model=budget_server.model_id, messages=ASK, reasoning_effort="none")
    assert off.choices[0].message.content == "It is 4!"
    assert not off.choices[0].message.model_extra.get("reasoning_content")
    low = client.chat.completions.create(model=budget_server.model_id, messages=ASK, reasoning_effort="low")
    assert FULL in low.choices[0].message.model_extra["reasoning_content"]  # 512 tokens: more than it thinks


@pytest.mark.parametrize("body, field", [
    ({"reasoning_budget": -2}, "reasoning_budget"), ({"reasoning_budget": "lots"}, "reasoning_budget"),
    ({"reasoning_effort": "max"}, "reasoning_effort"),
    ({"chat_template_kwargs": {"enable_thinking": "yes"}}, "chat_template_kwargs"),
])
def test_a_bad_budget_is_refused_in_words(budget_server, body: dict, field: str) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        budget_server.client().chat.completions.create(model=budget_server.model_id, messages=ASK, extra_body=body)
    assert e.value.body["param"] == field and field.split("_")[0] in e.value.body["message"]
