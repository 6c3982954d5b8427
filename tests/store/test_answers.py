"""A streamed answer: begin, update, finish, and what survives a kill."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import prefill
from prefill.store import HistoryStore

APP_DIR = Path(prefill.__file__).resolve().parent.parent


def test_answer_streams_then_finishes(store: HistoryStore) -> None:
    conv = store.create_conversation()
    store.add_message(conv.id, "user", "count")
    answer_id = store.begin_answer(conv.id)
    streaming = store.message(answer_id)
    assert (streaming.role, streaming.content, streaming.complete) == ("assistant", "", False)
    store.update_answer(answer_id, "one two")
    assert store.message(answer_id).content == "one two"
    assert not store.message(answer_id).complete
    figures = {"prompt_tokens": 5, "completion_tokens": 3, "ttft_ms": 81.0, "kv_used": 8}
    done = store.finish_answer(answer_id, "one two three", "stop", figures)
    assert (done.content, done.finish_reason, done.complete) == ("one two three", "stop", True)
    assert done.figures == figures
    assert store.messages(conv.id)[-1] == done


def test_finish_moves_the_chat_to_the_top(store: HistoryStore) -> None:
    older = store.create_conversation()
    newer = store.create_conversation()
    answer_id = store.begin_answer(older.id)
    store.finish_answer(answer_id, "done", "stop")
    assert store.list_conversations()[0].id == older.id
    assert newer.id != older.id


def test_finished_answer_survives_reopening(db_path: Path) -> None:
    with HistoryStore(db_path) as first:
        conv = first.create_conversation()
        answer_id = first.begin_answer(conv.id)
        first.finish_answer(answer_id, "kept", "stop", {"decode_tps": 30.0})
    with HistoryStore(db_path) as second:
        (message,) = second.messages(conv.id)
    assert (message.content, message.complete, message.figures) == (
        "kept",
        True,
        {"decode_tps": 30.0},
    )


CHILD = """
import sys
from prefill.store import HistoryStore

store = HistoryStore(sys.argv[1])
conv = store.create_conversation(title="streaming")
answer_id = store.begin_answer(conv.id)
text = ""
i = 0
while True:
    text += f"t{i} "
    store.update_answer(answer_id, text)
    print(i, flush=True)
    i += 1
"""


def test_kill_during_an_answer_keeps_the_last_flush(tmp_path: Path) -> None:
    db_path = tmp_path / "history.sqlite3"
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    env = {**os.environ, "PYTHONPATH": str(APP_DIR)}
    child = subprocess.Popen(
        [sys.executable, str(script), str(db_path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    last_seen = -1
    try:
        while last_seen < 300:
            line = child.stdout.readline()
            assert line, "the writer died on its own"
            last_seen = int(line)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    with sqlite3.connect(db_path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with HistoryStore(db_path) as store:
        (conv,) = store.list_conversations()
        (answer,) = store.messages(conv.id)
    assert not answer.complete
    assert answer.finish_reason is None
    words = answer.content.split()
    # Every update the child reported was committed; a few more may have been.
    assert len(words) >= last_seen + 1
    assert words == [f"t{i}" for i in range(len(words))]


def test_reasoning_streams_and_is_kept_apart_from_the_answer(db_path: Path) -> None:
    with HistoryStore(db_path) as first:
        conv = first.create_conversation()
        first.add_message(conv.id, "user", "2+2?")
        answer_id = first.begin_answer(conv.id)
        assert first.message(answer_id).reasoning == ""
        first.update_answer(answer_id, "", "Two and two")
        assert (first.message(answer_id).content, first.message(answer_id).reasoning) == (
            "",
            "Two and two",
        )
        first.update_answer(answer_id, "Fo", "Two and two make four.")
        figures = {"reasoning_tokens": 6, "chat_format": "qwen3"}
        first.finish_answer(answer_id, "Four.", "stop", figures, "Two and two make four.")
        imported = first.add_message(conv.id, "assistant", "Yes.", reasoning="Agree.")
    with HistoryStore(db_path) as second:
        user, answer, added = second.messages(conv.id)
    assert (user.reasoning, answer.content, answer.reasoning) == (
        "",
        "Four.",
        "Two and two make four.",
    )
    assert answer.figures == figures
    assert (
        (added.content, added.reasoning)
        == ("Yes.", "Agree.")
        == (imported.content, imported.reasoning)
    )
