"""One end-to-end run on the real SmolLM2: a conversation through `prefill serve`, two turns."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import start_server, stop_server


def test_a_conversation_through_the_server_reuses_its_slot(smollm2: Path) -> None:
    s = start_server(smollm2, "--parallel", "2", "--ctx", "1024")
    try:
        c = s.client()
        history = [{"role": "system", "content": "Answer in one short sentence."},
                   {"role": "user", "content": "What is the capital of France?"}]
        first = c.chat.completions.create(model=s.model_id, messages=history, temperature=0, max_tokens=32)
        answer = first.choices[0].message.content
        assert "Paris" in answer and first.choices[0].finish_reason == "stop"
        history += [{"role": "assistant", "content": answer},
                    {"role": "user", "content": "And of Italy?"}]
        second = c.chat.completions.create(model=s.model_id, messages=history, temperature=0, max_tokens=32)
        assert "Rome" in second.choices[0].message.content
        # the second turn continued the first one's slot: only the new turn was evaluated
        cached = second.usage.prompt_tokens_details.cached_tokens
        assert cached >= first.usage.prompt_tokens
        assert second.model_extra["timings"]["evaluated_tokens"] == second.usage.prompt_tokens - cached
    finally:
        stop_server(s)
