"""What a server writes on stdout is read in bounded lines: a 100 MB answer is cut as it arrives
(and its server stays on), lines that are not MCP are summed up in a few worded lines instead of
the SDK's tracebacks; and the pieces that do it, on bytes made here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import mcp_types as types

from prefill.mcp_tools.client import McpClient
from prefill.mcp_tools.oversized import CUT_META, Oversized, TooLarge, oversized_message, string_prefix
from prefill.mcp_tools.state import ServerStatus
from prefill.mcp_tools.stdio_transport import LineSplitter, NotMcp, parse_line

from .conftest import HERE, stdio_entry

GENEROUS_S = 30.0  # far above what it takes (about 2 s here); before the cut it ran past a 60 s call limit


def test_a_100_mb_answer_is_cut_as_it_arrives_and_the_server_stays(client: McpClient) -> None:
    assert client.start(stdio_entry("tools")).status is ServerStatus.READY
    result = client.call("tools", "huge", {"chars": 100_000_000}, timeout_s=60)
    assert not result.is_error, result.text
    assert result.text.startswith("0123456789" * 100)
    assert "[Prefill cut this result: the tool answered a message of" in result.text
    assert len(result.text.encode()) < client.result_budget_bytes + 1024 and result.cut_bytes > 99_000_000
    assert result.elapsed_s < GENEROUS_S
    state = client.state("tools")
    assert state is not None and state.status is ServerStatus.READY
    assert client.call("tools", "add", {"a": 1, "b": 2}).text == "3"


NOISY_RUN = textwrap.dedent("""
    import sys
    from prefill.mcp_tools.config import StdioServer
    from prefill.mcp_tools.client import McpClient
    with McpClient(start_timeout_s=20) as client:
        state = client.start(StdioServer("noisy", sys.executable, (sys.argv[1], "noisy")))
        print(state.status.value, client.call("noisy", "echo", {"said": "hi"}).text)
""")


def test_a_server_that_prints_to_stdout_gets_a_few_worded_lines_not_tracebacks() -> None:
    """As in `prefill chat --mcp`, where nothing configures logging: what reaches stderr is all there is."""
    done = subprocess.run([sys.executable, "-c", NOISY_RUN, str(HERE / "raw_server.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == 'ready {"said": "hi"}'  # 40 lines of noise before each of its 4 answers
    lines = done.stderr.splitlines()
    assert len(lines) <= 3, done.stderr
    assert "Traceback" not in done.stderr and "\x1b" not in done.stderr
    assert lines[0].startswith("MCP server 'noisy' wrote a line to its output that is not an MCP message: "
                               "“\\x1b[31mdebug: step 0 of the plan\\x1b[0m”")
    assert lines[-1] == ("MCP server 'noisy' wrote 160 lines to its output that are not MCP messages; "
                         "Prefill skipped them.")


def test_lines_are_split_across_chunks_and_a_long_one_keeps_its_ends() -> None:
    split = LineSplitter(limit=10, keep_head=4, keep_tail=3)
    assert split.feed(b"ab\ncd") == [b"ab"]
    assert split.feed(b"ef\n\n") == [b"cdef", b""]
    assert split.feed(b"0123456") == []
    assert split.feed(b"789ABCDEF") == []
    assert split.feed(b"GH\nok\n") == [Oversized(b"0123", b"FGH", 18), b"ok"]
    assert split.feed(b"last") == [] and split.finish() == [b"last"] and split.finish() == []


def test_a_line_is_a_message_a_noise_value_or_nothing() -> None:
    message = parse_line(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')
    assert message is not None and not isinstance(message, Exception)
    assert parse_line(b"  \r") is None
    noise = parse_line(b"hello \xff")
    assert isinstance(noise, NotMcp) and str(noise) == "hello \ufffd"


def test_an_oversized_answer_becomes_a_cut_result_for_its_id() -> None:
    head = b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"caf\\u00e9 \\"quoted\\" \\u00'
    got = oversized_message(Oversized(head, b'zz"}],"isError":true}}', 50_000_000))
    assert not isinstance(got, Exception)
    reply = got.message
    assert isinstance(reply, types.JSONRPCResponse) and reply.id == 7
    result = types.CallToolResult.model_validate(reply.result)
    assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ['café "quoted" ']
    assert result.is_error and result.meta == {CUT_META: {"bytes": 50_000_000, "isError": True}}


def test_an_oversized_line_finds_its_id_at_the_end_or_is_dropped() -> None:
    head = b'{"result": {"content": [{"type": "text", "text": "abc'
    got = oversized_message(Oversized(head, b'xyz"}]}, "jsonrpc": "2.0", "id": "q-1"}', 20_000_000))
    assert not isinstance(got, Exception) and isinstance(got.message, types.JSONRPCResponse)
    assert got.message.id == "q-1"
    error = oversized_message(Oversized(b'{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"disk full at',
                                        b"x", 20_000_000))
    assert not isinstance(error, Exception) and isinstance(error.message, types.JSONRPCError)
    assert error.message.error.message.startswith("disk full at… (a message of 19.1 MiB, too long to read, cut)")
    notice = oversized_message(Oversized(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"x":"',
                                         b"x", 20_000_000))
    assert isinstance(notice, TooLarge)
    assert isinstance(oversized_message(Oversized(b"garbage " * 10, b"garbage", 20_000_000)), TooLarge)


def test_a_cut_json_string_decodes_as_far_as_it_goes() -> None:
    assert string_prefix('"a\\nb" tail', 1) == "a\nb"
    assert string_prefix('"ab\\', 1) == "ab"
    assert string_prefix('"ab\\u26', 1) == "ab"
    assert string_prefix('"\\ud83e\\udd8a fox', 1) == "🦊 fox"
