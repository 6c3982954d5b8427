"""The Responses API's bounds on what it keeps: a conversation continued by `previous_response_id` is kept
whole again at each step, so one past its bound is refused in words instead of growing the history
database request by request; and numbers JSON cannot carry back never reach a reply."""

from __future__ import annotations

import pytest

from prefill.engine.message import ToolCall
from prefill.server.errors import ApiError
from prefill.server.fields import parse_json
from prefill.server.ollama.replies import tool_call
from prefill.server.responses.routes import MAX_KEPT_BYTES, check_kept_growth


def test_a_kept_conversation_goes_on_until_its_bound_then_is_refused_in_words() -> None:
    check_kept_growth("resp_1", MAX_KEPT_BYTES - 1000, 1000)
    with pytest.raises(ApiError) as e:
        check_kept_growth("resp_1", MAX_KEPT_BYTES - 1000, 1001)
    assert e.value.status == 400 and e.value.param == "previous_response_id"
    assert '"store": false' in e.value.message and "16 MiB" in e.value.message


@pytest.mark.parametrize("body", [b'{"temperature": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}',
                                  b'{"x": 1e999}', b'{"tools": [{"max": -1E+400}]}'])
def test_a_number_json_cannot_carry_back_is_refused_at_the_door(body: bytes) -> None:
    with pytest.raises(ApiError) as e:
        parse_json(body)
    assert e.value.status == 400 and "finite number" in e.value.message


def test_an_ollama_call_whose_arguments_hold_nan_is_written_as_json() -> None:
    assert tool_call(ToolCall("c1", "f", '{"x": NaN}'), 0)["function"]["arguments"] == {}
    assert tool_call(ToolCall("c1", "f", '{"x": 1.5}'), 0)["function"]["arguments"] == {"x": 1.5}
