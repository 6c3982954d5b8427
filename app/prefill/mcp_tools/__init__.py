"""Tools from MCP servers: the mcp.json door, and one client client that runs them off the caller's thread. No Qt.

Named `mcp_tools` because `mcp` is the SDK it is built on.
"""
