"""Tab completion of a server prompt's arguments in the REPL (``/library:summarize title=d``).

The completer runs on prompt_toolkit's thread; the gateway's client lives on the REPL's event
loop, so the question is handed to that loop and waited for briefly (no answer: no completions).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from clients.cli import mcp_input
from clients.cli.connection.services import ServiceClients

ANSWER_SECONDS = 1.5

ArgumentCompleter = Callable[[str, str, str, str], list[str]]


def no_completion(server: str, prompt: str, argument: str, typed: str) -> list[str]:
    return []


def gateway_completer(services: ServiceClients | None, loop: asyncio.AbstractEventLoop) -> ArgumentCompleter:
    if services is None:
        return no_completion

    def complete(server: str, prompt: str, argument: str, typed: str) -> list[str]:
        future = asyncio.run_coroutine_threadsafe(
            services.mcp.complete_prompt(server, prompt, argument, typed), loop)
        try:
            return mcp_input.completion_values(future.result(timeout=ANSWER_SECONDS))
        except Exception:  # the gateway is slow or away: nothing to offer
            future.cancel()
            return []

    return complete
