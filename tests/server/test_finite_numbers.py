"""Numbers JSON cannot carry back (NaN, Infinity, 1e999): refused at every door, and never written in a
reply when a model writes one in a call's arguments."""

from __future__ import annotations

import pytest

from prefill.engine.message import ToolCall
from prefill.server.errors import ApiError
from prefill.server.fields import parse_json
from prefill.server.ollama.replies import tool_call


@pytest.mark.parametrize("body", [b'{"temperature": NaN}', b'{"x": Infinity}', b'{"x": -Infinity}',
                                  b'{"x": 1e999}', b'{"tools": [{"max": -1E+400}]}'])
def test_a_number_json_cannot_carry_back_is_refused_at_the_door(body: bytes) -> None:
    with pytest.raises(ApiError) as e:
        parse_json(body)
    assert e.value.status == 400 and "finite number" in e.value.message


def test_an_ollama_call_whose_arguments_hold_nan_is_written_as_json() -> None:
    assert tool_call(ToolCall("c1", "f", '{"x": NaN}'), 0)["function"]["arguments"] == {}
    assert tool_call(ToolCall("c1", "f", '{"x": 1.5}'), 0)["function"]["arguments"] == {"x": 1.5}
