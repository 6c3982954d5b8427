"""mcp.json: valid entries load into frozen dataclasses, each bad entry is refused with a sentence
while the others load, the file as a whole is checked, and it is saved private."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from prefill.mcp_tools.config import HttpServer, StdioServer, parse_config
from prefill.mcp_tools.config_file import read_config, save_config
from prefill.mcp_tools.errors import McpConfigError

GOOD = {
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
              "env": {"API_KEY": "sk-secret"}},
    "search": {"url": "https://example.com/mcp?key=q-secret", "headers": {"Authorization": "Bearer h-secret"}},
    "local": {"type": "stdio", "command": "/usr/bin/true", "cwd": "/tmp", "disabled": True},
    "typed": {"type": "http", "url": "http://127.0.0.1:9000/mcp"},
}


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), "utf-8")
    return path


def test_valid_entries_load_as_frozen_dataclasses(tmp_path: Path) -> None:
    config = read_config(write(tmp_path / "mcp.json", {"mcpServers": GOOD}))
    assert config.problems == ()
    files, search, local, typed = config.servers
    assert files == StdioServer("files", "npx", ("-y", "@modelcontextprotocol/server-filesystem", "/tmp"),
                                (("API_KEY", "sk-secret"),))
    assert search == HttpServer("search", "https://example.com/mcp?key=q-secret",
                                (("Authorization", "Bearer h-secret"),))
    assert local.disabled and local.cwd == "/tmp" and isinstance(typed, HttpServer)
    assert config.server("search") is search and config.server("nope") is None
    with pytest.raises(AttributeError):
        files.command = "rm"  # type: ignore[misc]
    shown = repr(config)
    assert not any(secret in shown for secret in ("sk-secret", "q-secret", "h-secret"))
    assert search.where == "https://example.com/mcp"


@pytest.mark.parametrize(("entry", "words"), [
    ("npx", "it is a string; it must be an object"),
    ({}, 'neither "command"'),
    ({"command": "a", "url": "http://x/mcp"}, 'both "command" and "url"'),
    ({"command": 7}, '"command" is a number; it must be a string'),
    ({"command": "  "}, '"command" is empty'),
    ({"command": "a\x00b"}, "NUL character"),
    ({"command": "a", "args": "-v"}, '"args" is a string; it must be a list of strings'),
    ({"command": "a", "args": ["-v", 3]}, 'item 2 of "args" is a number'),
    ({"command": "a", "env": ["K=V"]}, '"env" is a list; it must be an object'),
    ({"command": "a", "env": {"K": 1}}, '"env" "K" is a number'),
    ({"command": "a", "env": {"NOT A NAME": "v"}}, "not an environment variable name"),
    ({"command": "a", "disabled": "yes"}, '"disabled" is a string; write true or false'),
    ({"url": "ftp://example.com/mcp"}, "must start with http:// or https://"),
    ({"url": "http:///mcp"}, "has no host name"),
    ({"url": "http://example.com:99999/mcp"}, "is not a URL"),
    ({"url": "http://x/mcp", "headers": {"X-Key": "a\r\nInjected: 1"}}, "line break"),
    ({"url": "http://x/mcp", "headers": {"bad header": "v"}}, "not an HTTP header name"),
    ({"type": "sse", "url": "http://x/sse"}, "old SSE transport"),
    ({"type": "websocket", "url": "ws://x"}, 'Prefill knows "stdio" and "http"'),
    ({"type": "http", "command": "a"}, 'an HTTP server needs a "url"'),
    ({"type": "stdio", "url": "http://x/mcp"}, 'needs a "command"'),
])
def test_each_bad_entry_is_refused_with_words_and_the_others_load(tmp_path: Path, entry: object, words: str) -> None:
    config = read_config(write(tmp_path / "mcp.json", {"mcpServers": {"bad": entry, "good": {"command": "a"}}}))
    assert [s.name for s in config.servers] == ["good"]
    (problem,) = config.problems
    assert problem.name == "bad"
    assert problem.message.startswith('MCP server "bad": ')
    assert words in problem.message
    assert json.loads(problem.raw) == entry


def test_a_bad_name_is_refused() -> None:
    config = parse_config({"mcpServers": {"": {"command": "a"}, "x" * 65: {"command": "a"}}})
    assert config.servers == ()
    assert "the name is empty" in config.problems[0].message
    assert "at most 64 printable characters" in config.problems[1].message


def test_a_missing_file_is_an_empty_list(tmp_path: Path) -> None:
    config = read_config(tmp_path / "absent.json")
    assert config.servers == () and config.problems == ()


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "it holds a list"),
    ('{"mcpServers": [1]}', '"mcpServers" is a list'),
    ('{"servers": {"a": {"command": "a"}}}', 'rename it'),
    (" " * (1 << 20) + "{}", "larger than 1024 KiB"),
    ("[" * 100_000, "nested too deeply|not valid JSON"),
])
def test_a_file_that_is_not_the_shape_is_refused_whole(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content, "utf-8")
    with pytest.raises(McpConfigError) as caught:
        read_config(path)
    assert caught.value.path == path
    assert any(w in str(caught.value) for w in words.split("|"))


def test_an_empty_object_is_an_empty_list() -> None:
    assert parse_config({}).servers == ()


def test_saved_file_is_private_and_reads_back(tmp_path: Path) -> None:
    folder = tmp_path / "config"
    path = folder / "mcp.json"
    servers = read_config(write(tmp_path / "in.json", {"mcpServers": GOOD})).servers
    save_config(servers, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert read_config(path).servers == servers


def test_saving_tightens_a_file_and_folder_others_could_read(tmp_path: Path) -> None:
    folder = tmp_path / "config"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    path = write(folder / "mcp.json", {"mcpServers": {}})
    path.chmod(0o644)
    save_config([StdioServer("a", "a", env=(("KEY", "secret"),))], path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [p.name for p in folder.iterdir()] == ["mcp.json"]  # no temporary file left


def test_saving_keeps_refused_entries_as_written(tmp_path: Path) -> None:
    path = write(tmp_path / "mcp.json", {"mcpServers": {"bad": {"command": 7, "note": "mine"}, "ok": {"command": "a"}}})
    config = read_config(path)
    save_config(config.servers, path, keep=config.problems)
    assert json.loads(path.read_text("utf-8")) == {"mcpServers": {"ok": {"command": "a"},
                                                                   "bad": {"command": 7, "note": "mine"}}}
    save_config([StdioServer("bad", "fixed")], path, keep=config.problems)  # a fixed entry replaces the kept one
    assert json.loads(path.read_text("utf-8")) == {"mcpServers": {"bad": {"command": "fixed"}}}


def test_a_folder_that_cannot_be_written_is_a_typed_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(McpConfigError):
        save_config([], blocker / "mcp.json")
