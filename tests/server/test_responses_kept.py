"""What the Responses API keeps and reads back: a conversation continued by `previous_response_id` is kept
whole again at each step, so one past its bound is refused in words instead of growing the history
database request by request; a kept call the model named as no client may is still read back."""

from __future__ import annotations

import pytest

from prefill.server.errors import ApiError
from prefill.server.responses.routes import MAX_KEPT_BYTES, check_kept_growth


def test_a_kept_conversation_goes_on_until_its_bound_then_is_refused_in_words() -> None:
    check_kept_growth("resp_1", MAX_KEPT_BYTES - 1000, 1000)
    with pytest.raises(ApiError) as e:
        check_kept_growth("resp_1", MAX_KEPT_BYTES - 1000, 1001)
    assert e.value.status == 400 and e.value.param == "previous_response_id"
    assert '"store": false' in e.value.message and "16 MiB" in e.value.message


def test_a_kept_call_with_a_name_no_client_may_send_still_goes_on() -> None:
    """A model whose call format has no grammar may name a tool "search web": the kept conversation holding
    that call goes on (the client cannot mend what the server keeps), while a client sending it is refused."""
    from prefill.server.responses.parse import parse_responses

    call = {"type": "function_call", "call_id": "call_1", "name": "search web", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "call_1", "output": "nothing found"}
    ask = parse_responses({"model": "m", "input": [out]}, "m")
    req = ask.request([{"type": "message", "role": "user", "content": "Look it up."}, call])
    assert [m.role for m in req.messages] == ["user", "assistant", "tool"]
    assert req.messages[1].tool_calls[0].name == "search web" and req.messages[2].name == "search web"
    with pytest.raises(ApiError) as e:
        parse_responses({"model": "m", "input": [call, out]}, "m")
    assert e.value.status == 400 and "input[0]" in e.value.message
