"""How long a huge MCP tool answer takes to come back cut, and whether its server stays on.

A server written with the official SDK (started here over stdio) answers `huge` with N million
characters of text (its message is about twice that: the SDK sends the text again as structured
content). The MCP client cuts every answer to its result budget; the figure is the call's time from
`McpClient.call` to the cut result, and the server's state after it (it must still be ready and
answer a following call). Before Prefill read stdout in bounded lines, 10 MB took about 0.9 s
and 100 MB about 64 s, past the 60 s call limit, so the server was marked failed. Prints one
JSON object.

    python benchmarks/mcp_result_bench.py [--mb 10 100] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")


    @server.tool()
    def huge(chars: int) -> str:
        """Answer `chars` characters."""
        return "0123456789" * (chars // 10)


    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b


    server.run("stdio")
''')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, nargs="+", default=[10, 100], help="answer sizes, in millions of characters")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    from prefill.mcp_tools.client import McpClient
    from prefill.mcp_tools.config import StdioServer

    figures: dict[str, object] = {"reps": args.reps}
    with tempfile.TemporaryDirectory() as tmp, McpClient(start_timeout_s=60) as client:
        script = Path(tmp) / "server.py"
        script.write_text(SERVER)
        state = client.start(StdioServer("bench", sys.executable, (str(script),)))
        if state.status.value != "ready":
            raise SystemExit(state.reason)
        for mb in args.mb:
            times, cut, ready = [], 0, True
            for _ in range(args.reps):
                began = time.perf_counter()
                result = client.call("bench", "huge", {"chars": mb * 1_000_000}, timeout_s=120)
                times.append(time.perf_counter() - began)
                if result.is_error:
                    raise SystemExit(result.text)
                cut = result.cut_bytes
                after = client.state("bench")
                ready = ready and after is not None and after.status.value == "ready"
                ready = ready and client.call("bench", "add", {"a": 1, "b": 2}).text == "3"
            figures[f"{mb}_mb"] = {"median_s": round(statistics.median(times), 3),
                                   "max_s": round(max(times), 3), "cut_bytes": cut, "server_still_ready": ready}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
