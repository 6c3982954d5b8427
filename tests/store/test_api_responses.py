"""The Responses API's kept responses (`store/api_responses.py`): in the history's database by its own
migration, found only by id and owner, bounded by count and age with the oldest going first, and
never seen by the history (no chat, no search hit, no export)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from prefill.store import HistoryStore
from prefill.store.api_responses import ResponseLog
from prefill.store.schema import SCHEMA_VERSION, user_version
from tests.store.conftest import ticking_clock

BODY = {"id": "resp_1", "object": "response", "output": [{"type": "message", "content": [
    {"type": "output_text", "text": "Quokkas are small marsupials."}]}]}
INPUT = [{"type": "message", "role": "user", "content": "What is a quokka? \ud800"}]  # a lone surrogate, as sent


def test_a_kept_response_is_found_by_its_id_and_owner_only(db_path: Path) -> None:
    log = ResponseLog(db_path, clock=ticking_clock())
    log.save("resp_1", "client:a", INPUT, BODY)
    got = log.get("resp_1", "client:a")
    assert got is not None and got.body == BODY and got.input == INPUT
    assert log.get("resp_1", "client:b") is None and log.get("resp_2", "client:a") is None
    assert not log.delete("resp_1", "client:b") and log.get("resp_1", "client:a") is not None
    assert log.delete("resp_1", "client:a") and log.get("resp_1", "client:a") is None
    assert not log.delete("resp_1", "client:a")
    log.close()
    with sqlite3.connect(db_path) as raw:
        assert user_version(raw) == SCHEMA_VERSION
    raw.close()


def test_at_most_limit_are_kept_and_none_past_its_age(db_path: Path) -> None:
    now = [1000.0]
    log = ResponseLog(db_path, limit=3, max_age_s=100, clock=lambda: now[0])
    for n in range(5):
        now[0] += 1
        log.save(f"resp_{n}", "o", [], {"n": n})
    assert log.count() == 3
    assert [log.get(f"resp_{n}", "o") is not None for n in range(5)] == [False, False, True, True, True]
    now[0] += 99.5  # resp_2 was saved at 1003, resp_3 at 1004, resp_4 at 1005: the first two are past 100 s
    assert [log.get(f"resp_{n}", "o") is not None for n in (2, 3, 4)] == [False, False, True]
    assert log.count() == 3  # still in the file until the next save
    log.save("resp_5", "o", [], {})
    assert log.count() == 2  # resp_4 and resp_5
    log.close()


def test_a_limit_of_zero_keeps_nothing(db_path: Path) -> None:
    log = ResponseLog(db_path, limit=0)
    log.save("resp_1", "o", [], BODY)
    assert log.get("resp_1", "o") is None
    log.close()


def test_the_history_never_shows_a_kept_response(db_path: Path, store: HistoryStore) -> None:
    log = ResponseLog(db_path, clock=ticking_clock())
    log.save("resp_1", "o", INPUT, BODY)
    assert store.list_conversations() == [] and store.search("quokka") == []
    chat = store.create_conversation("A chat")
    assert [c.id for c in store.list_conversations()] == [chat.id]
    assert log.count() == 1
    log.close()


def test_all_kept_responses_together_stay_within_their_bytes(db_path: Path) -> None:
    log = ResponseLog(db_path, max_bytes=3000, clock=ticking_clock())
    for n in range(4):
        log.save(f"resp_{n}", "o", [{"pad": "x" * 900}], {"n": n})  # about 930 bytes each
    kept = [log.get(f"resp_{n}", "o") for n in range(4)]
    assert [k is not None for k in kept] == [False, True, True, True]  # the oldest went first
    assert kept[3] is not None and 900 < kept[3].size < 1000
    log.close()
