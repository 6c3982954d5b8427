"""The server's opt-in compaction (`"compaction": "auto"`) with the official `openai` client on
SmolLM2 and a small context: a conversation past the threshold is answered from the model's summary
of its earlier turns, and the reply says so (whole and streamed); without the field nothing changes."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from prefill.session.compaction import threshold
from tests.server.conftest import start_server, stop_server

CTX = 512
FACT = "My name is Ada and my three goats are called Pip, Bo and Moss."
FILLER = ("Goats are hardy animals that browse on shrubs, leaves and grass; they need shelter from rain, "
          "fresh water every day, minerals, hoof trimming every few months and company of their own kind. ")


def long_chat(turns: int) -> list[dict[str, str]]:
    chat = [{"role": "system", "content": "You are a helpful farm assistant."},
            {"role": "user", "content": FACT}, {"role": "assistant", "content": "Nice to meet you, Ada!"}]
    for i in range(turns):
        chat += [{"role": "user", "content": f"Tell me fact number {i + 1} about goats."},
                 {"role": "assistant", "content": FILLER}]
    return chat + [{"role": "user", "content": "What are my goats called?"}]


@pytest.fixture(scope="module")
def small_server(smollm2: Path):
    s = start_server(smollm2, "--parallel", "1", "--ctx", str(CTX))
    yield s
    stop_server(s)


def test_a_long_conversation_is_answered_from_a_summary(small_server) -> None:
    client = small_server.client()
    reply = client.chat.completions.create(model=small_server.model_id, messages=long_chat(6), max_tokens=32,
                                           temperature=0, extra_body={"compaction": "auto"})
    done = reply.model_extra["compaction"]
    assert done["summary"].strip() and done["turns"] == 7 and done["folded"] == 14
    assert done["tokens_before"] + 32 >= threshold(CTX) > done["tokens_after"]
    assert reply.usage.prompt_tokens < done["tokens_before"]  # the answer read the summary, not the turns
    assert reply.choices[0].message.content


def test_compaction_streamed_comes_in_the_first_chunk(small_server) -> None:
    chunks = list(small_server.client().chat.completions.create(
        model=small_server.model_id, messages=long_chat(6), max_tokens=16, temperature=0, stream=True,
        extra_body={"compaction": "auto"}))
    assert chunks[0].model_extra["compaction"]["summary"].strip()
    assert not any((c.model_extra or {}).get("compaction") for c in chunks[1:])


def test_without_the_field_or_below_the_threshold_nothing_is_summarised(small_server) -> None:
    client = small_server.client()
    with pytest.raises(openai.BadRequestError):  # past the context, as before
        client.chat.completions.create(model=small_server.model_id, messages=long_chat(12), max_tokens=32)
    short = client.chat.completions.create(model=small_server.model_id, messages=long_chat(0), max_tokens=8,
                                           temperature=0, extra_body={"compaction": "auto"})
    assert "compaction" not in (short.model_extra or {})
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=small_server.model_id, messages=long_chat(0), extra_body={"compaction": 1})
    assert e.value.body["param"] == "compaction"
