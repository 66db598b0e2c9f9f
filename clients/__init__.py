"""ai-coding clients."""
