"""The transcript model passes Qt's model tester; a flush touches one row only."""

from __future__ import annotations

from prefill.ui.chat.transcript.transcript_model import Roles, Row, TranscriptModel


def test_model_passes_qtmodeltester(qtmodeltester) -> None:
    m = TranscriptModel()
    m.set_rows([Row("user", ["hi"]), Row("assistant", ["hello"], {"ttft_ms": 5.0}, "stop", False, 7)])
    m.append_row(Row("user", ["more"]))
    m.append_text(2, " text")
    qtmodeltester.check(m, force_py=True)


def test_append_text_changes_one_row(qtbot) -> None:
    m = TranscriptModel()
    m.set_rows([Row("user", ["a"]), Row("assistant", [], streaming=True)])
    with qtbot.waitSignal(m.dataChanged) as blocker:
        m.append_text(1, "tok")
    top, bottom, roles = blocker.args
    assert (top.row(), bottom.row()) == (1, 1) and roles == [Roles.CONTENT]
    m.append_text(1, "ens")
    assert m.data(m.index(1), Roles.CONTENT) == "tokens"
    assert m.data(m.index(0), Roles.CONTENT) == "a"
    text, n = m.chunks_since(1, 1)
    assert (text, n) == ("ens", 2)


def test_remove_from_and_update(qtbot) -> None:
    m = TranscriptModel()
    m.set_rows([Row("user", ["a"]), Row("assistant", ["b"]), Row("user", ["c"])])
    m.remove_from(1)
    assert m.rowCount() == 1
    m.update_row(0, content="edited", message_id=3)
    assert m.data(m.index(0), Roles.CONTENT) == "edited"
    assert m.data(m.index(0), Roles.MESSAGE_ID) == 3


def test_paging_an_answer_changes_its_row_only(qtbot, qtmodeltester) -> None:
    m = TranscriptModel()
    m.set_rows([Row("user", ["a"]), Row("assistant", ["third"], version=2, versions=3), Row("user", ["c"])])
    with qtbot.waitSignal(m.dataChanged) as blocker:
        m.update_row(1, content="second", version=1)
    top, bottom, roles = blocker.args
    assert (top.row(), bottom.row()) == (1, 1) and set(roles) == {Roles.CONTENT, Roles.VERSION}
    assert (m.data(m.index(1), Roles.VERSION), m.data(m.index(1), Roles.VERSIONS)) == (1, 3)
    assert m.data(m.index(1), Roles.CONTENT) == "second" and m.data(m.index(0), Roles.VERSIONS) == 1
    qtmodeltester.check(m, force_py=True)
