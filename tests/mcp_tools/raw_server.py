"""A misbehaving MCP server over stdio, written by hand (the SDK would not misbehave): `python raw_server.py MODE`.

"bad-result": a proper handshake (the 2025-11-25 one: `server/discover` is refused) and one usable
tool, `bad`, whose answer is JSON-RPC but not a tool result, listed with three that cannot be used
(a second `bad`, one without a name, one with a 70 KB schema). "chatter": writes lines that are not
JSON-RPC to stdout and never answers anything. "noisy": a working server with one tool, `echo`,
that writes NOISE_LINES lines that are not JSON-RPC (one with a terminal escape) before each answer.
"""

from __future__ import annotations

import json
import sys
import time


def reply(message_id: object, result: object = None, error: object = None) -> None:
    body = {"jsonrpc": "2.0", "id": message_id}
    body.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def bad_result() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # a notification
        if method == "initialize":
            reply(mid, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"}})
        elif method == "tools/list":
            plain = {"type": "object"}
            reply(mid, {"tools": [{"name": "bad", "inputSchema": plain}, {"name": "bad", "inputSchema": plain},
                                  {"name": "", "inputSchema": plain},
                                  {"name": "vast", "inputSchema": {"type": "object", "description": "x" * 70_000}}]})
        elif method == "tools/call":
            reply(mid, {"content": "not a list"})
        else:
            reply(mid, error={"code": -32601, "message": "Method not found"})


NOISE_LINES = 40


def noise() -> None:
    for i in range(NOISE_LINES):
        print(f"\x1b[31mdebug: step {i} of the plan\x1b[0m" if i == 0 else f"debug: step {i}", flush=True)


def noisy() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue
        noise()
        if method == "initialize":
            reply(mid, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "noisy", "version": "0"}})
        elif method == "tools/list":
            reply(mid, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        elif method == "tools/call":
            reply(mid, {"content": [{"type": "text", "text": json.dumps(msg["params"].get("arguments"))}]})
        else:
            reply(mid, error={"code": -32601, "message": "Method not found"})


def chatter() -> None:
    for i in range(3):
        print(f"hello, I am not MCP ({i})", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    {"bad-result": bad_result, "chatter": chatter, "noisy": noisy}[sys.argv[1]]()
