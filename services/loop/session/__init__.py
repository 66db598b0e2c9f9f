"""Live sessions: the composition root and its slash commands."""
