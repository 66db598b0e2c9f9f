"""The ai-coding client (Typer app, REPL, supervisor)."""

import services.kernel  # noqa: F401  (first: it turns gRPC's fork handlers off before grpc loads)
