"""Typer commands of the ``ai-coding`` client, one module per group (imports stay light)."""
