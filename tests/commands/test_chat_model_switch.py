"""`/model NAME` and `/models` in `prefill chat`: the chat goes on with another model (a library id as
`prefill ls` names it, a path, or bundled), in that model's format; the one left stays in memory, so
going back to it loads nothing. Real models: the bundled SmolLM2 and a tiny one from the project's
writer (prefill.bench.tiny_model) with no chat template of its own."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from prefill.commands.chat_repl import ListModels, SwitchModel, TerminalInput
from tests.commands.test_chat_terminal import SMALL, prefill


def test_the_slash_commands_are_read() -> None:
    out = io.StringIO()
    lines = iter(["/model  tiny.gguf ", "/model", "/models", "/help"])

    def read(_prompt: str) -> str:
        line = next(lines, None)
        if line is None:
            raise EOFError
        return line

    said = TerminalInput(out=out, interactive=False)
    said._read = read  # type: ignore[method-assign]
    assert list(said) == [SwitchModel("tiny.gguf"), SwitchModel(""), ListModels()]
    assert "/model NAME" in out.getvalue() and "/models" in out.getvalue()


@pytest.mark.model
def test_model_switches_mid_chat_and_back_without_a_load(tmp_path: Path) -> None:
    from prefill.bench.tiny_model import write_tiny_llama

    library = tmp_path / "data" / "prefill" / "models"  # the models folder under XDG_DATA_HOME
    library.mkdir(parents=True)
    write_tiny_llama(library / "tiny.gguf", chat_template=None, n_vocab=4000)
    outside = tmp_path / "elsewhere.gguf"
    shutil.copyfile(library / "tiny.gguf", outside)
    script = ("Hi!\n/model tiny.gguf\nWhat next?\n/models\n/model bundled\nAnd now?\n"
              f"/model {outside}\nOne more.\n/model no-such-model\nStill here?\n/bye\n")
    out = prefill(tmp_path, "chat", "--model", "bundled", "--json", "--max-tokens", "6", *SMALL, stdin=script)
    assert out.returncode == 0, out.stderr
    turns = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(turns) == 5
    formats = [t["chat_format"] for t in turns]
    assert formats[0] == formats[2] == "template"  # SmolLM2's own template
    assert formats[1] != "template" and formats[3] == formats[4] == formats[1]  # the tiny model's, no template
    # The conversation went on: each turn read the earlier ones, in whichever format.
    assert turns[2]["prompt_tokens"] > turns[0]["prompt_tokens"]
    err = out.stderr
    assert err.count("already in memory") == 1  # back to SmolLM2: no load
    assert err.count(", loaded in ") == 2  # tiny.gguf by its library id, then the copy by its path
    assert "2 models ·" in err  # /models: SmolLM2 and the tiny one
    assert "no switch: no model called 'no-such-model'" in err
