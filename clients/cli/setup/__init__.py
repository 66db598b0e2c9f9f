"""First-run setup, ``config init --provider``, and ``doctor``: stdlib HTTP only (no openai, no mcp)."""
