"""The window's transcript rows as the conversation service's chat (ui/chat/row_messages.py): what the
model reads of the chat the window shows. No window, no model."""

from __future__ import annotations

from prefill.engine.message import Message, ToolCall
from prefill.engine.request import TemplateOptions
from prefill.session.compaction import HEADING
from prefill.session.conversation import Compacted, Said
from prefill.ui.chat.row_messages import conversation_of
from prefill.ui.chat.transcript.summary_rows import SUMMARY
from prefill.ui.chat.transcript.transcript_model import Row


def tool_row(result: str, round_: int = 1, id_: str = "c1") -> Row:
    return Row("tool", [result], {"id": id_, "tool": "clock", "arguments": "{}", "round": round_})


def test_the_model_reads_from_the_last_summary_with_the_calls_before_their_answer() -> None:
    rows = [Row("user", ["Hi"]), Row("assistant", ["Hello."]), Row(SUMMARY, ["Greetings."]),
            Row("notice", ["Model loaded."]), Row("user", ["Time?"]), tool_row("12:00"),
            Row("assistant", ["Noon."], finish_reason="stop"), Row(SUMMARY, [], streaming=True)]
    conv = conversation_of("Be brief.", rows, options=TemplateOptions(think=True))
    call = ToolCall("c1", "clock", "{}")
    assert conv.model_messages() == [
        Message("system", f"Be brief.\n\n{HEADING}\nGreetings."), Message("user", "Time?"),
        Message("assistant", "", tool_calls=(call,)), Message("tool", "12:00", tool_call_id="c1", name="clock"),
        Message("assistant", "Noon.")]
    assert [type(i) for i in conv.items] == [Said, Said, Compacted, Said, Said, Said, Said]  # no notice, no summary
    assert conv.options == TemplateOptions(think=True)  # still being written


def test_calls_of_an_answer_that_failed_answer_nothing_and_stopped_calls_share_the_answer() -> None:
    rows = [Row("user", ["Time?"]), tool_row("12:00"), Row("user", ["Again?"]), tool_row("13:00", id_=""),
            Row("assistant", ["Looking"], finish_reason="tool_calls")]
    messages = conversation_of("", rows).model_messages()
    fallback = ToolCall(f"call_{2:012d}{0:012d}", "clock", "{}")  # no id kept: made from its place
    assert messages == [Message("user", "Time?"), Message("user", "Again?"),
                        Message("assistant", "Looking", tool_calls=(fallback,)),
                        Message("tool", "13:00", tool_call_id=fallback.id, name="clock")]
