"""Scripted models (a real tokenizer, a template written here carrying one family's markers) that write
a tool call the way that family does: each is read as the same call, streamed through the chat engine and
read whole, with none of its markup in the answer."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from prefill.engine.events import Finished, Token, ToolCalled
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.prompt.tool_formats import detect_tool_format
from prefill.engine.request import ChatRequest, Tool
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.vocab_models import Vocab, vocab_dir, write_scripted

WEATHER = Tool("weather", "The weather in a city.",
               json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
SETTINGS = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
TURNS = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}"
         "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}")

# family: (markers its template carries, so the family is detected; what its model writes for weather(city="Oslo"),
# spaced so that no token repeats. Command R7B, Granite, GLM and Qwen3-Coder calls repeat too many pieces to be
# scripted this way; their parsing is tested on text in tests/engine/prompt/test_tool_calls.py)
FAMILIES = {
    "hermes": ("{# <tool_call> #}{{ tools | tojson if tools }}",
               '<tool_call>\n{"name":"weather","arguments": {"city":"Oslo"}}\n</tool_call>'),
    "mistral-nemo": ("{# [TOOL_CALLS] #}{{ tools | tojson if tools }}",
                     '[TOOL_CALLS][{"name":"weather","arguments": {"city":"Oslo"}}]'),
    "mistral": ("{# [TOOL_CALLS] [ARGS] #}{{ tools | tojson if tools }}", '[TOOL_CALLS]weather[ARGS]{"city": "Oslo"}'),
    "llama-3": ("{# <|python_tag|> #}{{ tools | tojson if tools }}",
                '{"name":"weather","parameters": {"city":"Oslo"}}'),
    "functionary-v3.1": ("{# <|start_header_id|> <function= #}{{ tools | tojson if tools }}",
                         '<function=weather>{"city": "Oslo"}</function>'),
}


def unique_chain(v: Vocab, text: str, taken: set[int]) -> list[int]:
    """`text` cut into vocabulary tokens that each appear once (a scripted model gives each token one
    successor), found by a depth-first search that tries the longest pieces first."""

    def single(piece: str) -> int | None:
        ids = v.tokenize(piece, special=False)
        return ids[0] if len(ids) == 1 else None

    budget = [20_000]  # pieces tried: a text with too many repeats has no cut, and the search says so

    def search(i: int, used: set[int]) -> list[int] | None:
        if i == len(text):
            return []
        for j in range(min(len(text), i + 12), i, -1):
            budget[0] -= 1
            if budget[0] < 0:
                return None
            tok = single(text[i:j])
            if tok is None or tok in used:
                continue
            rest = search(j, used | {tok})
            if rest is not None:
                return [tok, *rest]
        return None

    found = search(0, set(taken))
    assert found is not None, f"no cut of {text!r} into distinct tokens"
    return found


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    v = Vocab(vocab_dir() / "ggml-vocab-qwen2.gguf")
    yield v
    v.close()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_s_call_is_read_as_the_same_call(family: str, vocab: Vocab, tmp_path: Path) -> None:
    markers, written = FAMILIES[family]
    template = markers + TURNS
    assert detect_tool_format(template).name == family
    start, end = vocab.tokenize("<|im_start|>assistant\n")[-1], vocab.token("<|im_end|>")
    chain = [start, *unique_chain(vocab, written, {start, end}), end]
    model = write_scripted(tmp_path / f"{family}.gguf", vocab_dir() / "ggml-vocab-qwen2.gguf", chain, template)
    engine = ChatEngine.load(model, SETTINGS)
    try:
        request = replace(ChatRequest.of([Message("user", "Weather in Oslo?")], SamplingSettings(temperature=0.0)),
                          tools=(WEATHER,))
        events = list(engine.stream(request))
        calls = [e.call for e in events if isinstance(e, ToolCalled)]
        assert [(c.name, json.loads(c.arguments)) for c in calls] == [("weather", {"city": "Oslo"})], events[-1]
        assert "".join(e.text for e in events if isinstance(e, Token)).strip() == ""  # no markup leaks
        end_event = events[-1]
        assert isinstance(end_event, Finished) and end_event.reason == "tool_calls"
        whole = engine.chat.reader("", request=request)  # the text read whole, as the server's full reply is
        whole.finish(written)
        assert [(c.name, json.loads(c.arguments)) for c in whole.calls] == [("weather", {"city": "Oslo"})]
    finally:
        engine.close()
