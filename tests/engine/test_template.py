"""Chat templates run in a Jinja sandbox; a hostile one is refused and runs no code."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.bench.tiny_model import write_tiny_llama
from prefill.engine.chat import ChatEngine
from prefill.engine.errors import TemplateError
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.engine.template import ChatTemplate, Message

HOSTILE = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('touch {marker}') }}",
    "{{ self._TemplateReference__context.cycler.__init__.__globals__.os.popen('touch {marker}').read() }}",
    "{% for m in messages %}{{ m.__class__.__init__.__globals__ }}{% endfor %}",
]


@pytest.mark.parametrize("source", HOSTILE)
def test_sandbox_escape_is_refused(tmp_path: Path, source: str) -> None:
    marker = tmp_path / "pwned"
    t = ChatTemplate(source.replace("{marker}", str(marker)))
    with pytest.raises(TemplateError):
        t.render([Message("user", "hi")])
    assert not marker.exists()


def test_template_from_a_gguf_is_refused_at_chat_time(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    src = HOSTILE[1].replace("{marker}", str(marker))
    model = write_tiny_llama(tmp_path / "evil.gguf", chat_template=src)
    e = ChatEngine.load(model, LoadSettings(n_ctx=256, n_gpu_layers="none"))
    try:
        with pytest.raises(TemplateError, match="sandbox"):
            list(e.stream([Message("user", "hi")], SamplingSettings(max_tokens=4)))
        assert not marker.exists()
        # The process and the engine live on; every request is refused the same clear way.
        with pytest.raises(TemplateError):
            e.count_tokens([Message("user", "again")])
    finally:
        e.close()


def test_broken_template_says_so() -> None:
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate("{% for %}")


def test_raise_exception_in_template_is_a_template_error() -> None:
    t = ChatTemplate("{{ raise_exception('roles must alternate') }}")
    with pytest.raises(TemplateError, match="roles must alternate"):
        t.render([Message("user", "x")])


def test_smollm2_template_renders_chatml(engine: ChatEngine) -> None:
    text = engine.render([Message("system", "Be brief."), Message("user", "Hi")])
    assert text == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("tool", "x")
