"""Chat templates render as transformers would, in a sandbox whose work is bounded."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.errors import TemplateError
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.prompt.template import ChatTemplate, merge_turns
from prefill.engine.request import ChatRequest, TemplateOptions
from prefill.engine.settings import LoadSettings, SamplingSettings
from tests.engine.template_cases import CASES, CONVERSATION, reference_render

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
MESSAGES = [Message(m["role"], m["content"], m.get("reasoning_content", "")) for m in CONVERSATION]

HOSTILE = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('touch {marker}') }}",
    "{{ self._TemplateReference__context.cycler.__init__.__globals__.os.popen('touch {marker}').read() }}",
    "{% for m in messages %}{{ m.__class__.__init__.__globals__ }}{% endfor %}",
]


def reference(source: str, options: TemplateOptions = TemplateOptions()) -> str:
    t = ChatTemplate(source, SPECIAL)
    variables = t.variables(MESSAGES, True, options)  # the same inputs transformers would get
    kwargs = {k: v for k, v in variables.items() if k not in ("messages", "add_generation_prompt")}
    return reference_render(source, variables["messages"], **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(
    "options", [TemplateOptions(), TemplateOptions(think=False, reasoning_effort="high")], ids=["default", "set"]
)
def test_construct_renders_as_transformers_does(name: str, options: TemplateOptions) -> None:
    source = CASES[name]
    got = ChatTemplate(source, SPECIAL).render(MESSAGES, options=options)
    assert got == reference(source, options)
    assert got.strip()


def test_reasoning_goes_back_only_where_the_template_puts_it() -> None:
    source = CASES["reasoning_kept_for_last_turn_only"]
    earlier = ChatTemplate(source).render(MESSAGES)
    assert "Two pairs make four." not in earlier  # an earlier turn's thinking is dropped
    last_turn = ChatTemplate(source).render(MESSAGES[:3], add_generation_prompt=False)
    assert "<think>\nTwo pairs make four.\n</think>" in last_turn
    assert "4." in last_turn and "Two pairs" not in last_turn.split("</think>")[1]


@pytest.mark.parametrize("name", ["lenient_undefined", "break_at_last_user", "tojson_options", "generation_block"])
def test_a_model_streams_through_each_construct(tmp_path: Path, name: str) -> None:
    model = write_tiny_llama(tmp_path / f"{name}.gguf", chat_template=CASES[name])
    e = ChatEngine.load(model, LoadSettings(n_ctx=512, n_gpu_layers="none"))
    try:
        want = e.runtime.tokenize(e.render(MESSAGES), add_special=e.runtime.add_bos)
        events = list(e.stream(ChatRequest.of(MESSAGES, SamplingSettings(max_tokens=8, temperature=0))))
        prefill = next(ev for ev in events if isinstance(ev, PrefillDone))
        assert prefill.prompt_tokens == len(want)
        assert isinstance(events[-1], Finished) and events[-1].metrics.completion_tokens > 0
        assert e.format.from_model and e.format.name == "template"
    finally:
        e.close()


def test_refusal_is_worded_and_alternation_survives_a_failed_turn() -> None:
    t = ChatTemplate(CASES["raise_on_bad_roles"])
    broken = [Message("system", "s"), Message("user", "first, never answered"), Message("user", "second")]
    with pytest.raises(TemplateError, match="refused the conversation: Conversation roles must alternate"):
        t.render(broken)
    merged = merge_turns(broken)
    assert [m.role for m in merged] == ["system", "user"]
    assert "first, never answered\n\nsecond" in t.render(merged)


@pytest.mark.parametrize("source", HOSTILE)
def test_sandbox_escape_is_refused(tmp_path: Path, source: str) -> None:
    marker = tmp_path / "pwned"
    t = ChatTemplate(source.replace("{marker}", str(marker)))
    with pytest.raises(TemplateError):
        t.render([Message("user", "hi")])
    assert not marker.exists()


COSTLY = {
    "big_multiply": ("{{ 'x' * 10**9 }}", "over 4 MB|power"),
    "doubling": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                 "over 4 MB"),
    "huge_output": ("{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}", "more than 8 MB"),
    "nested_loops": ("{% for a in range(100000) %}{% for b in range(100000) %}{{ b }}{% endfor %}{% endfor %}",
                     "took too long|more than 8 MB"),
    "nested_silent_loops": (
        "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(10) %}"
        "{% endfor %}{% endfor %}{% endfor %}", "took too long"),
}


@pytest.mark.parametrize("name", sorted(COSTLY))
def test_costly_template_is_stopped(name: str) -> None:
    source, words = COSTLY[name]
    with pytest.raises(TemplateError, match=words):
        ChatTemplate(source, max_seconds=0.5).render([Message("user", "hi")])


def test_cancel_stops_a_render() -> None:
    cancel = threading.Event()
    cancel.set()
    source = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(TemplateError, match="took too long"):
        ChatTemplate(source).render([Message("user", "hi")], cancel=cancel)


def test_template_from_a_gguf_is_refused_at_chat_time(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    src = HOSTILE[1].replace("{marker}", str(marker))
    model = write_tiny_llama(tmp_path / "evil.gguf", chat_template=src)
    e = ChatEngine.load(model, LoadSettings(n_ctx=256, n_gpu_layers="none"))
    try:
        with pytest.raises(TemplateError, match="sandbox"):
            list(e.stream(ChatRequest.of([Message("user", "hi")], SamplingSettings(max_tokens=4))))
        assert not marker.exists()
        # The process and the engine live on; every request is refused the same clear way.
        with pytest.raises(TemplateError):
            e.count_tokens(ChatRequest.of([Message("user", "again")]))
    finally:
        e.close()


def test_broken_template_says_so() -> None:
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate("{% for %}")


def test_smollm2_template_renders_chatml(engine: ChatEngine) -> None:
    text = engine.render([Message("system", "Be brief."), Message("user", "Hi")])
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("function", "x")
