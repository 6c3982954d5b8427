"""The MCP SDK's own log lines, kept out of a person's terminal.

The SDK logs through `logging`, some of it with a traceback per message (a line on a server's
stdout that is not JSON-RPC, an SSE event it cannot parse): a chatty server would fill the
terminal of `prefill chat --mcp` (where nothing configures logging, so Python prints warnings on
stderr). The MCP client words what matters itself (a server's state, a call's result, a count of the
lines it skipped), so the SDK's records are lowered to DEBUG without their traceback: seen by
whoever turns debug logging on, by nobody else.
"""

from __future__ import annotations

import logging

SDK_LOGGERS = ("client",  # the SDK's client session logs under this bare name
               "mcp.client.auth.oauth2", "mcp.client.caching", "mcp.client.client", "mcp.client.sse",
               "mcp.client.stdio", "mcp.client.streamable_http", "mcp.os.posix.utilities",
               "mcp.os.win32.utilities", "mcp.shared.direct_dispatcher", "mcp.shared.dispatcher",
               "mcp.shared.jsonrpc_dispatcher", "mcp.shared.tool_name_validation")


class _ToDebug(logging.Filter):
    """Lowers a record to DEBUG and drops its traceback (the message stays)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG:
            record.msg = f"{record.levelname.lower()}: {record.getMessage()}"
            record.args = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.exc_info = record.exc_text = record.stack_info = None
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


_FILTER = _ToDebug()


def quiet_sdk_logs() -> None:
    """Install the filter on the SDK's loggers (a filter acts on its own logger's records only,
    hence each by name, and any other already made under "mcp."); safe to call again."""
    made = [n for n in logging.Logger.manager.loggerDict if n.startswith("mcp.")]
    for name in (*SDK_LOGGERS, *made):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
