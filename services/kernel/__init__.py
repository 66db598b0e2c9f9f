"""What every ai-coding service shares: config, endpoints, server bootstrap,
health/reflection, the auth interceptor, logging, errors and ids.

Keep this package free of heavy imports (no openai, no mcp): the CLI client
imports parts of it.
"""

__version__ = "0.1.0"
