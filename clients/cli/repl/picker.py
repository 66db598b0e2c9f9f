"""The REPL's ``/resume``: the saved sessions grouped by day, a picker that filters them, and the switch."""

from __future__ import annotations

import contextlib
import datetime as dt

from clients.cli.connection.loop import ClientError
from clients.cli.repl import resume
from clients.cli.repl.host import ReplHost
from clients.cli.textsafe import literal


class SessionPicker:
    """``/resume`` of one REPL; :attr:`rows` is set while its ``resume›`` prompt waits for a pick."""

    def __init__(self, repl: ReplHost) -> None:
        self.repl = repl
        self.rows: list[resume.SessionRow] | None = None

    async def refresh_rows(self) -> list[resume.SessionRow]:
        """The saved sessions of the workspace (kept for `/resume <words>` completion)."""
        summaries = await self.repl.client.list_sessions(self.repl.workspace)
        self.repl.session_rows = [resume.SessionRow(s.session_id, s.last_activity, s.preview, s.message_count,
                                                    s.open) for s in summaries]
        return self.repl.session_rows

    async def refresh_rows_quietly(self) -> None:
        """:meth:`refresh_rows`, saying nothing when the loop does not answer."""
        with contextlib.suppress(ClientError):
            await self.refresh_rows()

    async def open(self, args: str) -> None:
        """``/resume ID-PREFIX`` resumes that session; a bare ``/resume`` lists them to pick from."""
        rows = [r for r in await self.refresh_rows() if r.session_id != self.repl.session_id]
        if args:
            match, candidates = resume.match_prefix(rows, args)
            if match is not None:
                await self._resume_id(match.session_id)
            elif candidates:
                self.repl.print(literal(f"/resume {args} is ambiguous; candidates:", "yellow"))
                self._show_rows(candidates)
            else:
                self.repl.print(literal(f"no saved session starts with {args!r}", "yellow"))
            return
        groups = resume.group_sessions(rows, dt.date.today())
        if not groups:
            self.repl.print(literal("no saved sessions", "dim"))
            return
        self.rows = [row for _, group in groups for row in group]
        self._show_groups(groups)
        self.repl.print(literal("type a number, an id prefix or words to filter; Enter alone cancels", "dim"))

    async def pick(self, line: str) -> None:
        """A line typed at the ``resume›`` prompt: a number, an id prefix, words to filter, or nothing."""
        result = resume.pick(self.rows or [], line)
        self.rows = result.rows
        if result.message:
            self.repl.print(literal(result.message, "yellow" if result.rows else "dim"))
        if result.resume_id:
            await self._resume_id(result.resume_id)
        elif result.rows and not result.message:
            self._show_groups(resume.group_sessions(result.rows, dt.date.today()))

    async def _resume_id(self, session_id: str) -> None:
        if self.repl.busy():
            return
        await self.repl.switch_to(await self.repl.client.open_session(self.repl.workspace, session_id), redraw=True)

    def _show_groups(self, groups: list[tuple[str, list[resume.SessionRow]]]) -> None:
        for text, style in resume.group_lines(groups):
            self.repl.print(literal(text, style))

    def _show_rows(self, rows: list[resume.SessionRow]) -> None:
        for row in rows:
            self.repl.print(literal(f"  {resume.row_line(row)}"))
