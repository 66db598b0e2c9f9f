"""What every command shares: one readable line for a failure, never a traceback."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import typer

from clients.cli import exit_codes


@contextlib.contextmanager
def cli_errors(command: str) -> Iterator[None]:
    """Turn an ``AiCodingError`` into ``ai-coding COMMAND: message`` on stderr and a non-zero exit."""
    from services.kernel.errors import AiCodingError, ServiceUnavailable

    try:
        yield
    except AiCodingError as exc:
        code = exit_codes.UNAVAILABLE if isinstance(exc, ServiceUnavailable) else exit_codes.USAGE
        print(f"ai-coding {command}: {exc}", file=sys.stderr)
        raise typer.Exit(code) from None


def fail(command: str, message: str, code: int = exit_codes.USAGE) -> typer.Exit:
    """Print one error line and return the Exit to raise."""
    print(f"ai-coding {command}: {message}", file=sys.stderr)
    return typer.Exit(code)
