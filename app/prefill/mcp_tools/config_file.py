"""mcp.json in the app's config folder (beside settings.json): read through the door, written private.

The file holds keys (env values, headers), so it is written like the settings: atomically, mode
0600, in a folder only its owner can open; saving over a file others could read leaves one they
cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import platformdirs

from prefill.engine.private_paths import write_private
from prefill.mcp_tools.config import EntryProblem, McpConfig, McpServer, config_document, parse_config
from prefill.mcp_tools.errors import McpConfigError

CONFIG_FILE = "mcp.json"
MAX_BYTES = 1 << 20  # a real list is a few KiB; a larger file is not one


def default_config_path() -> Path:
    """Where the MCP server list lives: the platform's config folder for "prefill", as settings.json."""
    return Path(platformdirs.user_config_dir("prefill", appauthor=False)) / CONFIG_FILE


def read_config(path: Path | None = None) -> McpConfig:
    """Read and check the MCP server list. A missing file is an empty list.

    Each entry that is not right is refused on its own (`McpConfig.problems`); the others load.

    Raises:
        McpConfigError: The file cannot be read, is too large, is not JSON, or is not the
            `{"mcpServers": {…}}` shape.
    """
    path = path if path is not None else default_config_path()
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return McpConfig()
    except OSError as exc:
        raise McpConfigError(path, exc.strerror or str(exc)) from exc
    if len(raw) > MAX_BYTES:
        raise McpConfigError(path, f"it is larger than {MAX_BYTES // 1024} KiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are.
        raise McpConfigError(path, f"it is not valid JSON ({exc})") from exc
    except RecursionError:
        raise McpConfigError(path, "it is nested too deeply") from None
    try:
        return parse_config(data)
    except ValueError as exc:
        raise McpConfigError(path, str(exc)) from exc


def save_config(servers: Iterable[McpServer], path: Path | None = None, keep: Iterable[EntryProblem] = ()) -> None:
    """Write the MCP server list atomically (a temporary file, then os.replace), mode 0600 in a 0700 folder.

    Args:
        servers: The entries to write, in order.
        path: The file; ``default_config_path()`` when None.
        keep: Refused entries to write back as they were (pass ``McpConfig.problems``), so a save
            does not lose an entry a person has yet to fix; a server of the same name replaces one.

    Raises:
        McpConfigError: The folder or file cannot be written.
    """
    path = path if path is not None else default_config_path()
    text = json.dumps(config_document(servers, keep), indent=2, ensure_ascii=False) + "\n"
    try:
        write_private(path, text)
    except OSError as exc:
        raise McpConfigError(path, exc.strerror or str(exc)) from exc
