"""Terminal plumbing of the REPL: output above the live prompt, completion, width, opt-in timings."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.patch_stdout import StdoutProxy

from clients.cli.mcp_input import argument_being_typed
from clients.cli.repl import resume
from clients.cli.slash import SUBCOMMANDS, completions, subcommand_completions
from clients.cli.textsafe import visible_controls

if TYPE_CHECKING:
    from clients.cli.repl.host import CompleterHost

# prompt_toolkit's default (0.2 s) batches output above the prompt coarsely: bench/client.py's
# Enter-to-first-token p50 fell from 153 to 96 ms when it went to 10 ms (same run conditions).
_WRITE_BATCH_SECONDS = 0.01


@contextlib.contextmanager
def stdout_above_prompt() -> Iterator[None]:
    """Like ``patch_stdout(raw=True)``, with a shorter write batch so streamed lines appear at once."""
    with StdoutProxy(raw=True, sleep_between_writes=_WRITE_BATCH_SECONDS) as proxy:
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = proxy
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved


class Timings:
    """Opt-in (``AI_CODING_CLIENT_TIMINGS=FILE``): the client's own milliseconds per turn, for bench/client.py.

    One JSON line per turn: ``key_to_send`` (Enter handled until the Start is sent),
    ``event_to_draw`` (first text delta received until the prompt area is redrawn with it),
    and the wall-clock times of the Enter key and of that redraw (to time the pty around them).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.marks: dict[str, float] = {}
        self.line = ""

    def mark(self, name: str) -> None:
        """Record when ``name`` happened (the first time only, per turn)."""
        if self.path and name not in self.marks:
            self.marks[name] = time.perf_counter()
            if name == "key":
                self.marks["key_wall"] = time.time()

    def drawn(self) -> None:
        """The prompt area was redrawn: after the first text delta, write the turn's row."""
        marks = self.marks
        if not self.path or "event" not in marks or "drawn" in marks:
            return
        marks["drawn"] = time.perf_counter()
        row = {"key_to_send": (marks.get("send", 0) - marks.get("key", 0)) * 1000,
               "event_to_draw": (marks["drawn"] - marks["event"]) * 1000,
               "send_to_event": (marks["event"] - marks.get("send", marks["event"])) * 1000,
               "key_wall": marks.get("key_wall", 0.0), "drawn_wall": time.time(), "line": self.line}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    def reset(self, line: str) -> None:
        """Start timing the turn that ``line`` starts."""
        self.marks = {}
        self.line = line


class SlashCompleter(Completer):
    """Completion as soon as ``/`` is typed; subcommands of /memory and /mcp; saved sessions after ``/resume ``."""

    def __init__(self, repl: CompleterHost) -> None:
        self._repl = repl

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """Commands while the first word is typed; saved sessions after ``/resume ``."""
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        if text.startswith("/resume "):
            query = text[len("/resume "):]
            for row in resume.filter_rows(self._repl.session_rows, query)[:20]:
                yield Completion(row.session_id, start_position=-len(query),
                                 display=visible_controls(resume.row_line(row)))
            return
        command, space, rest = text[1:].partition(" ")
        if space and command in SUBCOMMANDS and " " not in rest:
            for shown, doc in subcommand_completions(command, rest):
                yield Completion(shown.split(" ")[0], start_position=-len(rest), display=shown, display_meta=doc)
            return
        if text.startswith("/mcp retry "):
            name = text[len("/mcp retry "):]
            for server in self._repl.mcp_names:
                if server.startswith(name):
                    yield Completion(server, start_position=-len(name), display=visible_controls(server))
            return
        typing_argument = argument_being_typed(text)  # /server:prompt key=... (a server's prompt)
        if typing_argument is not None:
            typed = typing_argument[3]
            for value in self._repl.complete_mcp_argument(*typing_argument):
                yield Completion(value, start_position=-len(typed), display=visible_controls(value))
            return
        if " " in text:
            return
        for shown, doc in completions(text[1:]):
            yield Completion("/" + shown[1:].split(" ")[0], start_position=-len(text), display=shown,
                             display_meta=doc)


def terminal_width(default: int = 100) -> int:
    """The real terminal's width (ioctl on the tty; $COLUMNS may be stale after a resize)."""
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
    except OSError:
        columns = 0
    return columns or shutil.get_terminal_size((default, 30)).columns


def log_crash(log_path: Path, err: BaseException) -> None:
    """Append ``err``'s traceback to the client log (never shown to the user)."""
    import traceback

    with contextlib.suppress(OSError), open(log_path, "a", encoding="utf-8") as fh:
        fh.write(f"--- {dt.datetime.now().isoformat()} ---\n")
        fh.write("".join(traceback.format_exception(err)))
