"""``ai-coding mcp serve``: the agent as an MCP server other agents hand tasks to (docs/mcp.md)."""
