"""The import door: llama.cpp web UI exports come in; bad files are refused and change nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from prefill.store import HistoryStore, ImportRejected
from prefill.store.history_export import render
from prefill.store.history_import import MAX_TEXT_CHARS, read_import_file

WEBUI_EXPORT = Path(__file__).parent / "data" / "llamacpp_webui_export.json"


def _import(store: HistoryStore, path: Path) -> tuple[Any, Any]:
    checked = read_import_file(path)
    return checked, store.import_conversations(list(checked.conversations))


def test_a_llamacpp_webui_export_imports(store: HistoryStore) -> None:
    checked, result = _import(store, WEBUI_EXPORT)
    assert (checked.source, result.imported, result.messages) == ("llama.cpp web UI", 2, 4)
    assert checked.left_out == 1  # the first answer, on a branch the web UI no longer showed
    moon, hello = sorted(store.list_conversations(), key=lambda c: c.created_at)
    assert (moon.uid, moon.title, moon.system_prompt, moon.model) == (
        "5d0c6f1e-2b7a-4c39-9a51-0e6f7d2c8b14",
        "How far is the Moon?",
        "Answer in one sentence.",
        "Qwen3-0.6B-Q8_0.gguf",
    )
    assert (moon.created_at, moon.updated_at) == (1735725601.0, 1735725900.0)
    question, answer = store.messages(moon.id)
    assert (question.role, question.content, question.created_at) == (
        "user",
        "How far is the Moon?",
        1735725660.0,
    )
    assert (answer.role, answer.content, answer.reasoning) == (
        "assistant",
        "About 384,400 km on average.",
        "The mean Earth-Moon distance is close to 384 thousand kilometres.",
    )
    assert answer.figures == {
        "prompt_tokens": 40,
        "cached_tokens": 10,
        "evaluated_tokens": 30,
        "completion_tokens": 12,
        "prefill_ms": 150,
        "prefill_tps": 200.0,
        "decode_tps": 30.0,
    }
    # No name, no current node: titled from the question, the newest leaf is the branch.
    assert (hello.title, hello.system_prompt) == ("Hello there", "")
    assert [(m.role, m.content, m.reasoning) for m in store.messages(hello.id)] == [
        ("user", "Hello\nthere", ""),
        ("assistant", "Hi!", "A greeting; greet back."),
    ]


def test_a_webui_import_is_not_duplicated_and_survives_a_prefill_round_trip(
    store: HistoryStore, tmp_path: Path
) -> None:
    _import(store, WEBUI_EXPORT)
    _, again = _import(store, WEBUI_EXPORT)
    assert (again.imported, again.skipped) == (0, 2)
    ours = tmp_path / "ours.json"
    ours.write_text(render(store.export_conversations(), "json", 0.0), encoding="utf-8")
    _, back = _import(store, ours)
    assert (back.imported, back.skipped, len(store.list_conversations())) == (0, 2, 2)


def test_a_single_webui_conversation_imports(store: HistoryStore, tmp_path: Path) -> None:
    single = tmp_path / "one.json"
    single.write_text(json.dumps(json.loads(WEBUI_EXPORT.read_text())[1]), encoding="utf-8")
    _, result = _import(store, single)
    assert result.imported == 1


def _webui() -> list[dict[str, Any]]:
    return copy.deepcopy(json.loads(WEBUI_EXPORT.read_text(encoding="utf-8")))


def _prefill_doc(**message: Any) -> dict[str, Any]:
    turn = {"role": "user", "content": "hi", "created_at": 1.0, **message}
    chat = {"id": "c1", "title": "t", "created_at": 1.0, "updated_at": 2.0, "messages": [turn]}
    return {"format": "prefill-history", "version": 1, "conversations": [chat]}


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _two_prefill_chats_same_id() -> dict[str, Any]:
    doc = _prefill_doc()
    doc["conversations"].append(copy.deepcopy(doc["conversations"][0]))
    return doc


def _webui_loop() -> list[dict[str, Any]]:
    doc = _webui()
    return _set(doc, (1, "messages", 0, "parent"), "n-reply")


BAD_FILES: dict[str, tuple[bytes, str]] = {
    "not json": (b"# My chats\n\nhello", "it is not JSON (Expecting value at line 1, column 1)"),
    "not utf-8": (b'{"format": "\xff"}', "it is not UTF-8 text"),
    "nan": (b'{"format": NaN}', "it holds NaN, which is not a JSON number"),
    "deep": (b"[" * 200_000 + b"]" * 200_000, "it is nested too deeply"),
    "some other json": (b'{"chats": []}', "neither a Prefill history export nor a llama.cpp"),
    "newer prefill": (
        json.dumps({**_prefill_doc(), "version": 2}).encode(),
        "version: 2 was written by a newer Prefill",
    ),
    "conversations not a list": (
        json.dumps({**_prefill_doc(), "conversations": {"c1": {}}}).encode(),
        "conversations: expected a list, found an object",
    ),
    "bad role": (
        json.dumps(_prefill_doc(role="wizard")).encode(),
        "conversations[0].messages[0].role: expected one of system, user, assistant, found 'wizard'",
    ),
    "content not text": (
        json.dumps(_prefill_doc(content=5)).encode(),
        "conversations[0].messages[0].content: expected text, found a number",
    ),
    "missing content": (
        json.dumps(
            _set(_prefill_doc(), ("conversations", 0, "messages", 0), {"role": "user"})
        ).encode(),
        'conversations[0].messages[0]: "content" is missing',
    ),
    "time is true": (
        json.dumps(_prefill_doc(created_at=True)).encode(),
        "created_at: expected a time (a number), found true/false",
    ),
    "time before 1970": (json.dumps(_prefill_doc(created_at=-5)).encode(), "-5 is not a time"),
    "lone surrogate": (
        json.dumps(_set(_prefill_doc(), ("conversations", 0, "title"), "\ud800")).encode(),
        "conversations[0].title: holds text that is not valid Unicode",
    ),
    "huge message": (
        json.dumps(_prefill_doc(content="x" * (MAX_TEXT_CHARS + 1))).encode(),
        f"content: longer than {MAX_TEXT_CHARS} characters",
    ),
    "duplicate chat ids": (
        json.dumps(_two_prefill_chats_same_id()).encode(),
        "conversations: conversation id 'c1' appears twice",
    ),
    "webui duplicate message ids": (
        json.dumps(_set(_webui(), (1, "messages", 2, "id"), "n-hello")).encode(),
        "[1].messages: message id 'n-hello' appears twice",
    ),
    "webui chat twice": (
        json.dumps(_webui() + _webui()[:1]).encode(),
        "the file: conversation id '5d0c6f1e-2b7a-4c39-9a51-0e6f7d2c8b14' appears twice",
    ),
    "webui message ids repeated across chats": (
        json.dumps(_set(_webui(), (1, "messages", 2, "id"), "m-question")).encode(),
        "the file: message id 'm-question' appears twice",
    ),
    "webui message in another chat": (
        json.dumps(_set(_webui(), (1, "messages", 1, "convId"), "elsewhere")).encode(),
        "[1].messages[1].convId: does not match its conversation",
    ),
    "webui missing parent": (
        json.dumps(_set(_webui(), (1, "messages", 2, "parent"), "gone")).encode(),
        "[1].messages: parent message 'gone' is missing",
    ),
    "webui loop": (json.dumps(_webui_loop()).encode(), "is its own ancestor"),
    "webui tool-less role": (
        json.dumps(_set(_webui(), (0, "messages", 2, "role"), "narrator")).encode(),
        "[0].messages[2].role: expected one of user, assistant, system, tool, found 'narrator'",
    ),
    "a number of thousands of digits": (b'[{"conv": 1, "n": ' + b"7" * 5000 + b"}]", "a number too long to read"),
    "webui time too large for a float": (
        json.dumps(_set(_webui(), (1, "conv", "lastModified"), 10**400)).encode(), "is not a time",
    ),
    "webui bad timings": (
        json.dumps(_set(_webui(), (0, "messages", 4, "timings", "predicted_n"), "12")).encode(),
        "[0].messages[4].timings.predicted_n: expected a number, found text",
    ),
}


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_a_bad_file_is_refused_with_a_reason_and_changes_nothing(
    name: str, store: HistoryStore, tmp_path: Path
) -> None:
    data, reason = BAD_FILES[name]
    _import(store, WEBUI_EXPORT)
    before = store.export_conversations()
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    with pytest.raises(ImportRejected) as info:
        read_import_file(bad)
    assert reason in info.value.reason
    assert str(info.value).startswith(f"cannot import {bad}: ")
    assert str(info.value).endswith("; nothing was imported")
    assert store.export_conversations() == before


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(WEBUI_EXPORT.read_bytes())
    with pytest.raises(ImportRejected, match="larger than 1000 B, the most an import takes"):
        read_import_file(big, max_bytes=1000)
    assert read_import_file(big, max_bytes=big.stat().st_size).conversations


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportRejected, match="No such file"):
        read_import_file(tmp_path / "nope.json")


def test_an_answer_s_tool_calls_survive_export_and_import(store: HistoryStore, tmp_path: Path) -> None:
    calls = [{"id": f"call_{i}", "name": "forecast__weather", "arguments": '{"city": "Oslo"}',
              "result": "Sunny, 21 °C. " * 280, "is_error": False, "denied": False, "elapsed_ms": 37.5, "round": i}
             for i in range(1, 41)]  # forty calls (5 rounds of 8) with results near the 4,000 characters kept of each
    chat = store.create_conversation(title="weather")
    store.add_message(chat.id, "user", "Weather in Oslo?")
    store.add_message(chat.id, "assistant", "Sunny.", finish_reason="tool_calls",
                      figures={"completion_tokens": 24, "tool_calls": calls})
    path = tmp_path / "ours.json"
    path.write_text(render(store.export_conversations(), "json", 0.0), encoding="utf-8")
    other = HistoryStore(tmp_path / "other.sqlite3")
    checked = read_import_file(path)
    other.import_conversations(list(checked.conversations))
    (back,) = other.list_conversations()
    answer = other.messages(back.id)[-1]
    assert answer.figures["tool_calls"] == calls and answer.finish_reason == "tool_calls"
