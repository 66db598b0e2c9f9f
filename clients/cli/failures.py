"""A command's failure as one readable line on stderr and an exit code, never a traceback.

No typer here: ``ai-coding run``'s fast path (:mod:`clients.cli.run_fast`) exits through this module
without the command-line framework; every other command gets it through :mod:`clients.cli.commands.common`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from clients.cli import exit_codes


class CommandExit(SystemExit):
    """Ends the command with ``code`` (its line was already printed). A ``SystemExit``: typer lets it
    through unchanged, and the console script ends the process with its code."""


@contextlib.contextmanager
def cli_errors(command: str) -> Iterator[None]:
    """Turn any failure into ``ai-coding COMMAND: message`` on stderr and a non-zero exit.

    ``AiCodingError`` and gRPC statuses are expected failures (their message is the
    line); anything else is a bug: one line, with the traceback in the client log.
    """
    from services.kernel.errors import AiCodingError, ServiceUnavailable

    try:
        yield
    except AiCodingError as exc:
        unavailable = isinstance(exc, ServiceUnavailable) or exc.reason == "service_unavailable"
        # A service that answered with a status (connection.loop.ClientError: not imported here, it
        # pulls in grpc) exits as that status says, with the service's own sentence.
        status = str(getattr(exc, "status", "")).upper()
        if status and not unavailable:
            print(f"ai-coding {command}: {getattr(exc, 'detail', '') or exc}", file=sys.stderr)
            raise CommandExit(_RPC_EXIT.get(status, exit_codes.FAILED)) from None
        print(f"ai-coding {command}: {exc}", file=sys.stderr)
        raise CommandExit(exit_codes.UNAVAILABLE if unavailable else exit_codes.USAGE) from None
    except Exception as exc:
        typer = sys.modules.get("typer")  # none of its exits exists unless typer was imported
        if typer is not None and isinstance(exc, (typer.Exit, typer.Abort)):
            raise
        grpc = sys.modules.get("grpc")
        if grpc is not None and isinstance(exc, grpc.RpcError):
            line, code = _rpc_line(exc)
            print(f"ai-coding {command}: {line}", file=sys.stderr)
            raise CommandExit(code) from None
        where = _log_unexpected(command)
        print(f"ai-coding {command}: unexpected error: {type(exc).__name__}: {exc} (details in {where})",
              file=sys.stderr)
        raise CommandExit(exit_codes.FAILED) from None


# gRPC status names -> exit code; the rest count as failed.
_RPC_EXIT = {
    "UNAVAILABLE": exit_codes.UNAVAILABLE,
    "DEADLINE_EXCEEDED": exit_codes.UNAVAILABLE,
    "INVALID_ARGUMENT": exit_codes.USAGE,
    "FAILED_PRECONDITION": exit_codes.USAGE,
    "NOT_FOUND": exit_codes.USAGE,
    "ALREADY_EXISTS": exit_codes.USAGE,
    "UNAUTHENTICATED": exit_codes.USAGE,
    "PERMISSION_DENIED": exit_codes.USAGE,
}


def _rpc_line(err: BaseException) -> tuple[str, int]:
    """One line and an exit code for a service's gRPC status."""
    code_fn = getattr(err, "code", None)
    details_fn = getattr(err, "details", None)
    name = code_fn().name if callable(code_fn) and code_fn() is not None else "UNKNOWN"
    details = (details_fn() if callable(details_fn) else "") or "no details"
    if name in ("UNAVAILABLE", "DEADLINE_EXCEEDED"):
        return f"a service did not answer ({details}); check `ai-coding status` or run `ai-coding up`", \
            _RPC_EXIT[name]
    return details, _RPC_EXIT.get(name, exit_codes.FAILED)


def _log_unexpected(command: str) -> str:
    """Append the current traceback to the client log; returns where it went."""
    import tempfile
    import traceback
    from pathlib import Path

    from services.kernel.endpoints import runtime_dir

    try:
        logs = runtime_dir() / "logs"
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        logs = Path(tempfile.gettempdir())
    path = logs / "client.log"
    with contextlib.suppress(OSError), path.open("a", encoding="utf-8") as fh:
        fh.write(f"--- ai-coding {command}\n{traceback.format_exc()}\n")
    return str(path)


def fail(command: str, message: str, code: int = exit_codes.USAGE) -> CommandExit:
    """Print one error line and return the exit to raise."""
    print(f"ai-coding {command}: {message}", file=sys.stderr)
    return CommandExit(code)


__all__ = ["CommandExit", "cli_errors", "fail"]
