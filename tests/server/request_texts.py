"""Every text a checked request carries to the engine, for the fuzz tests of each dialect's door: each
must be valid Unicode (a tokenizer takes nothing else)."""

from __future__ import annotations

from collections.abc import Iterator

from prefill.server.core import GenerationRequest


def request_texts(req: GenerationRequest) -> Iterator[str]:
    for m in req.messages:
        yield from (m.content, m.tool_call_id, m.name)
        for c in m.tool_calls:
            yield from (c.id, c.name, c.arguments)
    for t in req.tools.tools:
        yield from (t.name, t.description, t.parameters)
    yield from req.sampling.stop
    yield from (ref.url for ref in req.images)
