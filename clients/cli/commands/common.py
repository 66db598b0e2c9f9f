"""What every command shares: one readable line for a failure, never a traceback.

The failure handling itself (:func:`cli_errors`, :func:`fail`) lives in :mod:`clients.cli.failures`,
which imports no typer: ``ai-coding run``'s fast path (:mod:`clients.cli.run_fast`) uses it too.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

import typer

from clients.cli import exit_codes
from clients.cli.failures import CommandExit, cli_errors, fail

if TYPE_CHECKING:
    from services.kernel.endpoints import Endpoint

T = TypeVar("T")


class _Client(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Client)


def service_call(noun: str, command: str, service: str, what: str, make: Callable[[Endpoint], ClientT],
                 body: Callable[[ClientT], Awaitable[T]]) -> T:
    """Run ``body(client)`` against ``service`` for ``ai-coding NOUN COMMAND``, started first when
    nothing runs (as ``run`` and the REPL do); failures become one line and an exit code (``what``
    names the service in that line, e.g. "the memory service")."""
    from clients.cli import connection, control
    from clients.cli.connection.loop import ClientError

    with cli_errors(f"{noun} {command}"):
        setup = control.resolve(None)
        control.ensure_running(setup, [service])
        endpoint = setup.endpoints[service]

    async def run() -> T:
        client = make(endpoint)
        try:
            return await body(client)
        finally:
            await client.close()

    try:
        return connection.run(run())
    except ClientError as err:
        if err.reason == "service_unavailable":
            print(f"ai-coding {noun} {command}: {what} is not reachable at {endpoint}; "
                  f"see `ai-coding status` and `ai-coding logs {service}`.", file=sys.stderr)
            raise typer.Exit(exit_codes.UNAVAILABLE) from None
        # The service itself answered: its sentence names the cause, its stable reason rides along.
        reason = f" ({err.reason})" if err.reason != err.status else ""
        print(f"ai-coding {noun} {command}: {err.detail or err.message}{reason}", file=sys.stderr)
        raise typer.Exit(exit_codes.UNAVAILABLE if err.status == "unavailable" else exit_codes.USAGE) from None


__all__ = ["CommandExit", "cli_errors", "fail", "service_call"]
