"""The door for OpenAI's bodies (chat and text completions): every one is checked here, once, and
becomes the core's `GenerationRequest`.

Anything malformed, unknown or unsupported becomes an `ApiError` with OpenAI's
status and shape; code behind this module may trust what it gets. The messages and the tool fields
are decoded by the one OpenAI codec (`wire/openai_chat.py`), which `remote/` encodes with.
"""

from __future__ import annotations

from typing import Any

from prefill.engine.request import MAX_REASONING_BUDGET, REASONING_EFFORTS, TemplateOptions
from prefill.engine.settings import ServeSampling
from prefill.server.core import DEFAULTS, UNLIMITED, GenerationRequest
from prefill.server.documents.field import documents_field
from prefill.server.errors import ApiError, bad_request, model_not_found, wire_faults
from prefill.server.fields import MAX_STOPS, parse_json, requested_model, stop_strings
from prefill.server.fields import get_bool as _bool
from prefill.server.fields import get_float as _float
from prefill.server.fields import get_int as _int
from prefill.server.fields import unicode_text as _unicode
from prefill.server.openai.parse_tools import parse_tool_fields
from prefill.wire.openai_chat import decode_messages


def parse_chat(obj: dict[str, Any], model_id: str) -> GenerationRequest:
    model = _model(obj, model_id)
    with wire_faults():
        messages, images = decode_messages(obj.get("messages"))
    tools = parse_tool_fields(obj)
    if obj.get("logprobs"):
        raise bad_request("Log probabilities are not supported.", "logprobs")
    return GenerationRequest("chat", model, messages=messages, tools=tools, images=images,
                             options=_reasoning(obj), compaction=compaction_mode(obj),
                             documents=documents_field(obj), **_common(obj))


def parse_completion(obj: dict[str, Any], model_id: str) -> GenerationRequest:
    model = _model(obj, model_id)
    prompt = obj.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if prompt is None:
        raise bad_request("'prompt' is required.", "prompt")
    if not isinstance(prompt, str):
        raise bad_request("'prompt' must be a string (one prompt per request).", "prompt")
    for name in ("echo", "suffix", "logprobs"):
        if obj.get(name):
            raise bad_request(f"'{name}' is not supported.", name)
    if _int(obj, "best_of", 1, 1) != 1:
        raise bad_request("'best_of' must be 1.", "best_of")
    return GenerationRequest("completion", model, prompt=_unicode(prompt, "prompt"), documents=documents_field(obj),
                             **_common(obj))


def compaction_mode(obj: dict[str, Any]) -> str:
    """The `compaction` extension field: "off" (the default) or "auto" (server/compaction.py)."""
    mode = obj.get("compaction", "off")
    if mode not in ("off", "auto"):
        raise bad_request("'compaction' is \"auto\" (summarise the conversation when it would not fit) or \"off\".",
                          "compaction")
    return str(mode)


def _reasoning(obj: dict[str, Any]) -> TemplateOptions:
    """How a reasoning model thinks: OpenAI's `reasoning_effort` (read by a template that takes it, as
    gpt-oss's; a thinking budget for the others; "none": no thinking), the `reasoning_budget`
    extension (tokens; -1 or null: no limit) and `chat_template_kwargs.enable_thinking`."""
    effort = obj.get("reasoning_effort")
    if effort is not None and effort not in (*REASONING_EFFORTS, "none"):
        raise bad_request(f"'reasoning_effort' is one of {', '.join(REASONING_EFFORTS)} or none.", "reasoning_effort")
    budget = obj.get("reasoning_budget")
    if budget is not None and (type(budget) is not int or not -1 <= budget <= MAX_REASONING_BUDGET):
        raise bad_request(f"'reasoning_budget' is a number of tokens from 0 to {MAX_REASONING_BUDGET} "
                          "(-1: no limit).", "reasoning_budget")
    kwargs = obj.get("chat_template_kwargs")
    think = kwargs.get("enable_thinking") if isinstance(kwargs, dict) else None
    if think is not None and not isinstance(think, bool):
        raise bad_request("'chat_template_kwargs.enable_thinking' must be true or false.", "chat_template_kwargs")
    if budget is None and effort == "none":
        budget = 0
    return TemplateOptions(think, effort if effort in REASONING_EFFORTS else "",
                           budget if budget is not None and budget >= 0 else None)


def _model(obj: dict[str, Any], model_id: str) -> str:
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("'model' is required (see GET /v1/models).", "model")
    if model != model_id:
        raise model_not_found(model, [model_id])
    return model


def _common(obj: dict[str, Any]) -> dict[str, Any]:
    """Stream flags and sampling parameters, shared by both endpoints."""
    stream = _bool(obj, "stream", False)
    options = obj.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("'stream_options' must be an object.", "stream_options")
    include_usage = bool(stream and options and _bool(options, "include_usage", False))
    if _int(obj, "n", 1, 1) != 1:
        raise bad_request("Only n=1 is supported.", "n")
    max_tokens = obj.get("max_completion_tokens")
    key = "max_completion_tokens" if max_tokens is not None else "max_tokens"
    limit = _int(obj, key, None, 1) if obj.get(key) is not None else None
    stops = stop_strings(obj.get("stop"), "stop")
    seed = _int(obj, "seed", None, None) if obj.get("seed") is not None else None
    d = DEFAULTS
    try:
        sampling = ServeSampling(
            temperature=_float(obj, "temperature", d.temperature, 0.0, 2.0),
            top_p=_float(obj, "top_p", d.top_p, 0.0, 1.0),
            top_k=_int(obj, "top_k", d.top_k, 0),
            min_p=_float(obj, "min_p", d.min_p, 0.0, 1.0),
            repeat_penalty=d.repeat_penalty,
            frequency_penalty=_float(obj, "frequency_penalty", 0.0, -2.0, 2.0),
            presence_penalty=_float(obj, "presence_penalty", 0.0, -2.0, 2.0),
            seed=seed % 2**31 if seed is not None and seed >= 0 else -1,  # negative: random; 31-bit, as the schema
            max_tokens=limit or UNLIMITED,
            stop=stops,
            ignore_eos=_bool(obj, "ignore_eos", False),
            logit_bias=_logit_bias(obj.get("logit_bias")),
        )
    except ValueError as e:  # e.g. top_p 0: in range for JSON, not for the sampler
        raise bad_request(f"{e}.") from None
    return {"stream": stream, "include_usage": include_usage, "sampling": sampling}


MAX_BIASES = 1024


def _logit_bias(raw: Any) -> tuple[tuple[int, float], ...]:
    """OpenAI's `logit_bias`: token ids (as strings or numbers) to a bias from -100 to 100."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or len(raw) > MAX_BIASES:
        raise bad_request(f"'logit_bias' must be an object of at most {MAX_BIASES} token ids and biases.",
                          "logit_bias")
    out = []
    for key, value in raw.items():
        token = int(key) if isinstance(key, str) and key.isdigit() and len(key) < 10 else None
        if token is None or type(value) not in (int, float) or not -100 <= value <= 100:
            raise bad_request(f"'logit_bias' maps token ids to numbers from -100 to 100; {key!r}: {value!r} is "
                              "not one.", "logit_bias")
        out.append((token, float(value)))
    return tuple(sorted(out))


__all__ = ["MAX_STOPS", "ApiError", "GenerationRequest", "parse_chat", "parse_completion", "parse_json",
           "requested_model"]
