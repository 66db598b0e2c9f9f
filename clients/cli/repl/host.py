"""What the REPL's key bindings and completer need of the REPL (a Protocol, so they do not
import the app module that imports them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prompt_toolkit import PromptSession

from clients.cli import views
from clients.cli.render import EventRenderer
from clients.cli.repl.resume import SessionRow


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

    def note(self, text: str) -> None: ...
