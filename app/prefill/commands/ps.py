"""`prefill ps`: what a running `prefill serve` holds, as `ollama ps` shows it.

One line per model loaded or loading (every model with --all): its name, state, the memory it takes,
the requests it serves, and until when it stays (its idle TTL, "pinned", or "while busy"). The names
and errors come from the server: they are printed through `terminal_line`.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from prefill.commands.errors import CliError
from prefill.commands.terminal_text import terminal_line
from prefill.engine.units import format_bytes

DEFAULT_URL = "http://127.0.0.1:8080"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ps", help="list the models a running prefill serve holds",
                       description="List the models a running `prefill serve` holds: loaded or loading, the "
                                   "memory each takes and until when it stays loaded.")
    p.add_argument("--url", default=DEFAULT_URL, help=f"the server (default {DEFAULT_URL})")
    p.add_argument("--api-key", default=os.environ.get("PREFILL_API_KEY", ""),
                   help="the server's key (default: $PREFILL_API_KEY)")
    p.add_argument("--all", action="store_true", help="every model the server can load, not only the loaded ones")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    listing = fetch(args.url, args.api_key)
    rows = [m for m in listing.get("data", []) if isinstance(m, dict)
            and (args.all or m.get("state") in ("loaded", "loading"))]
    for line in lines(rows, listing, time.time()):
        print(line)
    return 0


def fetch(url: str, key: str) -> dict[str, Any]:
    """GET URL/models, as `prefill serve` answers it."""
    import httpx2

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    base = url.rstrip("/").removesuffix("/v1")
    try:
        r = httpx2.get(base + "/models", headers=headers, timeout=10)
    except httpx2.HTTPError as e:
        raise CliError(f"no server answers at {terminal_line(base)} ({e.__class__.__name__}); "
                       "start one with prefill serve, or give its --url") from None
    if r.status_code == 401:
        raise CliError(f"{terminal_line(base)} wants a key: give --api-key or set PREFILL_API_KEY")
    if r.status_code != 200:
        raise CliError(f"{terminal_line(base)}/models answered {r.status_code}: is it prefill serve?")
    try:
        body = r.json()
    except ValueError:
        raise CliError(f"{terminal_line(base)}/models did not answer JSON") from None
    if not isinstance(body, dict):
        raise CliError(f"{terminal_line(base)}/models answered something else than a model list")
    return body


def lines(rows: list[dict[str, Any]], listing: dict[str, Any], now: float) -> list[str]:
    """The table, and the memory line under it."""
    table = [("NAME", "STATE", "MEMORY", "REQUESTS", "UNTIL")]
    for m in rows:
        memory = m.get("memory")
        memory = memory if isinstance(memory, dict) else None
        size = format_bytes(memory["total"]) if memory and isinstance(memory.get("total"), int) else "?"
        if memory and not memory.get("measured") and m.get("state") != "loaded":
            size = f"~{size}"
        state = str(m.get("state", "?"))
        if state == "unusable" and m.get("error"):
            state = f"unusable: {m['error']}"
        table.append((terminal_line(str(m.get("id", "?"))), terminal_line(state), size,
                      str(m.get("in_flight", 0)), until(m, now)))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    out = ["   ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "   " + r[4] for r in table]
    mem = listing.get("memory")
    used, budget = (mem.get("used"), mem.get("budget")) if isinstance(mem, dict) else (None, None)
    if isinstance(used, int):
        of = f" of a {format_bytes(budget)} budget" if isinstance(budget, int) and budget else ""
        out.append(f"{format_bytes(used)} in use{of}")
    return out


def until(m: dict[str, Any], now: float) -> str:
    """When the model leaves if it stays idle, as `ollama ps` says it."""
    if m.get("state") != "loaded":
        return ""
    if m.get("pinned"):
        return "pinned"
    if m.get("in_flight"):
        return "while busy"
    at = m.get("expires_at")
    if not isinstance(at, int | float):
        return "forever"
    left = max(0.0, at - now)
    if left < 90:
        return f"{left:.0f} seconds from now"
    if left < 90 * 60:
        return f"{left / 60:.0f} minutes from now"
    return f"{left / 3600:.1f} hours from now"
