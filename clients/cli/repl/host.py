"""What the REPL's parts need of the REPL: Protocols, so the key bindings, the completer, the
streams, the commands and the picker do not import the app module that imports them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from prompt_toolkit import PromptSession
from rich.text import Text

from clients.cli import session_views, views
from clients.cli.connection.loop import LoopClient
from clients.cli.connection.services import ServiceClients
from clients.cli.progress import Progress
from clients.cli.render import EventRenderer
from clients.cli.repl.recovery import ServiceRestorer
from clients.cli.repl.resume import SessionRow
from clients.cli.repl.service_commands import Output, PendingForget


class CompleterHost(Protocol):
    """The names the slash completer offers."""

    mcp_names: list[str]
    session_rows: list[SessionRow]
    complete_mcp_argument: Callable[[str, str, str, str], list[str]]
    """(server, prompt, argument, typed) -> values the server suggests (completion/complete)."""


class KeyHost(Protocol):
    """The state and actions the key bindings reach."""

    prompt: PromptSession[str]
    renderer: EventRenderer
    last_answer: tuple[str, float] | None
    turn_running: bool

    def submit_line(self, line: str) -> None: ...

    def answer_approval(self, decision: views.Decision) -> None: ...

    def answer_question(self, answer: str) -> None: ...

    def interrupt(self, scope: views.Scope, note: str) -> None: ...

    def press_ctrl_c(self) -> None: ...

    def unfold_diff(self) -> None:
        """Print the last folded diff whole."""
        ...

    def note(self, text: str) -> None: ...


class Marks(Protocol):
    """The opt-in client timings (``terminal.Timings``)."""

    def mark(self, name: str) -> None: ...


class ReplHost(Protocol):
    """The REPL's state and actions its streams, commands and ``/resume`` picker use."""

    client: LoopClient
    services: ServiceClients | None
    workspace: str
    session_id: str
    last_seq: int
    turn_running: bool
    queued: list[str]
    renderer: EventRenderer
    progress: Progress
    prompt: PromptSession[str]
    restorer: ServiceRestorer
    timings: Marks
    session_rows: list[SessionRow]
    mcp_names: list[str]
    confirm: PendingForget | None
    asking_plan: bool

    def print(self, text: Text) -> None: ...

    def note(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def echo(self, line: str) -> None: ...

    def show(self, out: Output) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]: ...

    def invalidate(self) -> None: ...

    def sync_width(self) -> None: ...

    def busy(self) -> bool: ...

    async def switch_to(self, opened: session_views.OpenedSession, redraw: bool,
                        replay_in_flight: bool = False) -> None: ...

    def send_input(self, text: str) -> None:
        """Start a turn with ``text`` (or queue it)."""
        ...

    def send_plan(self, topic: str) -> None: ...

    def keep_ticking(self) -> None:
        """Redraw the status line every second while something runs."""
        ...

    def watch_jobs(self) -> None:
        """Keep the status line's background jobs up to date while it shows one."""
        ...

    async def resume_session(self, args: str) -> None:
        """``/resume [args]``."""
        ...
