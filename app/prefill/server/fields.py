"""Reading a JSON request body, for every dialect: the body as an object, the model it names, and
typed fields (true/false, integers, numbers in a range, valid Unicode: wire/checks.py's checks), each
fault a 400 `ApiError` naming the field. Each dialect's parser (openai/parse.py, anthropic/parse.py) builds on these.
"""

from __future__ import annotations

import json
import math
from typing import Any

from prefill.pool.memory import parse_duration
from prefill.server.errors import bad_request, wire_faults
from prefill.wire import checks


class _NotANumber(ValueError):
    """A number JSON cannot carry back: NaN, Infinity, or one past a float's range (1e999)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotANumber(text)
    return value


def _no_constant(text: str) -> float:
    raise _NotANumber(text)


def finite_json(text: str | bytes) -> Any:
    """JSON read as `json.loads` does, but a number JSON cannot carry back (NaN, Infinity, 1e999) is a
    ValueError, as invalid JSON is."""
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant)


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object. Numbers JSON cannot carry back (NaN, Infinity, 1e999) are refused here:
    a reply or a kept response that repeats one could not be written.

    Raises:
        ApiError: 400 in words.
    """
    try:
        obj = finite_json(body)
    except _NotANumber as e:
        raise bad_request(f"The body holds the number {str(e)[:40]}, which JSON cannot carry back: send a finite "
                          "number.") from None
    except json.JSONDecodeError as e:
        raise bad_request(f"The body is not valid JSON: {e}.") from None
    except RecursionError:
        raise bad_request("The body's JSON is nested too deeply.") from None
    except ValueError as e:  # not UTF-8, or an integer of thousands of digits
        raise bad_request(f"The body is not JSON this server reads: {str(e)[:200]}.") from None
    if not isinstance(obj, dict):
        raise bad_request("The body must be a JSON object.")
    return obj


def requested_model(obj: dict[str, Any]) -> tuple[str, float | None]:
    """The body's `model` and Ollama's `keep_alive` (how long the model stays loaded after this request:
    seconds or a duration such as "10m"; negative: until unloaded; absent: the server's --ttl)."""
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("'model' is required (see GET /v1/models).", "model")
    raw = obj.get("keep_alive")
    if raw is None:
        return model, None
    try:
        if not isinstance(raw, str | int | float) or len(str(raw)) > 32:
            raise ValueError
        keep = parse_duration(raw)
    except ValueError:
        raise bad_request("'keep_alive' is a number of seconds or a duration such as \"10m\" (negative: keep the "
                          "model loaded).", "keep_alive") from None
    if keep != keep or abs(keep) > 10 ** 9:  # NaN, or past any sense
        raise bad_request("'keep_alive' is out of range.", "keep_alive")
    return model, keep


def schema_text(schema: dict[str, Any], where: str) -> str:
    """A JSON schema as the text the model reads: valid Unicode, at most `checks.MAX_SCHEMA_BYTES`."""
    with wire_faults():
        return checks.schema_text(schema, where)


def unicode_text(text: str, param: str) -> str:
    """The text, if it is valid Unicode: JSON can spell a lone surrogate (\\ud800) that no tokenizer takes."""
    with wire_faults():
        return checks.unicode_text(text, param)


def get_bool(obj: dict[str, Any], key: str, default: bool, within: str = "") -> bool:
    """`obj[key]` as true or false; `within` names the object it is in ("options"), for the error."""
    name = f"{within}.{key}" if within else key
    v = obj.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise bad_request(f"'{name}' must be true or false.", name)
    return v


def get_int(obj: dict[str, Any], key: str, default: int | None, low: int | None, within: str = "",
            high: int | None = None) -> Any:
    name = f"{within}.{key}" if within else key
    v = obj.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad_request(f"'{name}' must be an integer.", name)
    if low is not None and v < low:
        raise bad_request(f"'{name}' must be at least {low}.", name)
    if high is not None and v > high:
        raise bad_request(f"'{name}' must be at most {high}.", name)
    return v


def get_float(obj: dict[str, Any], key: str, default: float, low: float, high: float, within: str = "") -> float:
    name = f"{within}.{key}" if within else key
    v = obj.get(key, default)
    if v is None:
        return default
    # An integer is finite, and math.isfinite would overflow on one past a float's range.
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
        raise bad_request(f"'{name}' must be a number.", name)
    if not low <= v <= high:
        raise bad_request(f"'{name}' must be between {low:g} and {high:g}.", name)
    return float(v)


MAX_STOPS = 16


def stop_strings(raw: Any, param: str) -> tuple[str, ...]:
    """Stop strings: one string or an array of at most MAX_STOPS, each valid Unicode; empty ones dropped."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or len(raw) > MAX_STOPS or not all(isinstance(s, str) for s in raw):
        raise bad_request(f"'{param}' must be a string or an array of at most {MAX_STOPS} strings.", param)
    return tuple(unicode_text(s, param) for s in raw if s)
