"""`prefill chat` takes --memory-budget, --max-models and --ttl with `prefill serve`'s words and parser
(commands/options.py), and its idle reaper unloads an idle model only between turns."""

from __future__ import annotations

import pytest

from prefill.cli import build_parser
from prefill.commands.errors import CliError
from prefill.commands.options import MemoryLimits, memory_limits

FLAGS = ["--memory-budget", "1.5G", "--max-models", "2", "--ttl", "10m"]


@pytest.mark.parametrize("command", ["chat", "serve"])
def test_chat_and_serve_read_the_same_options_the_same_way(command: str) -> None:
    parser = build_parser()
    assert memory_limits(parser.parse_args([command, *FLAGS])) == MemoryLimits(int(1.5 * (1 << 30)), 2, 600.0)
    assert memory_limits(parser.parse_args([command])) == MemoryLimits(None, 0, 3600.0)  # the defaults
    assert memory_limits(parser.parse_args([command, "--memory-budget", "none", "--ttl", "never"])) == \
        MemoryLimits(0, 0, None)
    for flags, said in ((["--ttl", "later"], "--ttl"), (["--memory-budget", "lots"], "--memory-budget"),
                        (["--max-models", "-1"], "--max-models")):
        with pytest.raises(CliError, match=said):
            memory_limits(parser.parse_args([command, *flags]))


def test_the_reaper_holds_its_lock_while_the_chat_handles_a_prompt() -> None:
    from prefill.commands.chat_models import IdleReaper
    from prefill.session.chat_session import ChatSession

    reaper = IdleReaper(ChatSession(budget=0))
    held = [reaper.lock.locked() for _prompt in reaper.between(["one", "two"])]
    assert held == [True, True] and not reaper.lock.locked()
    reaper.start()
    reaper.close()  # wakes and ends at once, nothing resident


@pytest.mark.model
def test_an_idle_model_is_unloaded_between_turns_once_its_time_runs_out(three_models: list[str]) -> None:
    import threading

    from prefill.commands.chat_models import IdleReaper
    from prefill.engine.settings import LoadSettings
    from prefill.session.backends import LocalModel
    from prefill.session.chat_session import ChatSession, SessionEvents

    changed = threading.Event()
    session = ChatSession(None, SessionEvents(residents=lambda _shown: changed.set()), budget=0, ttl_s=0.2)
    settings = LoadSettings(n_ctx=512, n_gpu_layers="none", n_threads=1)
    reaper = IdleReaper(session)
    try:
        session.load(LocalModel(three_models[0], settings))
        session.load(LocalModel(three_models[1], settings))  # the first is idle now
        changed.clear()
        reaper.start()
        assert changed.wait(30)  # the reaper reported: the first went
        assert session.residents.paths() == [three_models[1]]  # never the chat's own
    finally:
        reaper.close()
        session.close()


@pytest.fixture(scope="module")
def three_models(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    from prefill.bench.tiny_model import write_tiny_llama

    folder = tmp_path_factory.mktemp("models")
    return [str(write_tiny_llama(folder / f"m{i}.gguf", n_vocab=4000, seed=i)) for i in range(2)]
