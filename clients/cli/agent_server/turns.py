"""One ``run_task`` of ``ai-coding mcp serve``: a turn on the loop service, followed to its end.

The loop is found (and started, as ``ai-coding run`` starts it) for the task's workspace; the
session opens in the granted permission mode; events go to ``progress``; approval requests to
``approve``. A cancellation of the MCP request interrupts the turn (``Interrupt{turn}``) and waits
a few seconds for its final event, so nothing keeps running behind a caller that gave up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import anyio

from clients.cli import views
from clients.cli.agent_server import policy
from clients.cli.connection.loop import ClientError, LoopClient, TurnStream
from clients.cli.driver import TurnDriver
from services.kernel.endpoints import Endpoint
from services.kernel.errors import AiCodingError

Progress = Callable[[views.Event], Awaitable[None]]
Approve = Callable[[views.ApprovalRequested], Awaitable[tuple[views.Decision, str]]]
# After Interrupt{turn}: how long a cancelled task waits for the turn's final event.
STOP_GRACE_SECONDS = 5.0


def _loop_endpoint(root: str) -> Endpoint:
    """The loop's endpoint for ``root``, started when nothing serves (blocking: run in a thread)."""
    from pathlib import Path

    from clients.cli import control

    setup = control.resolve(Path(root))
    control.ensure_running(setup, ["loop"], quiet=True)
    return setup.endpoints["loop"]


class TaskRunner:
    """Runs one task; :meth:`run` never raises for a failure of the task itself (it is the report)."""

    def __init__(self, place: policy.Place, grant: policy.Grant, *, model: str = "", session_id: str = "",
                 progress: Progress, approve: Approve) -> None:
        self.place = place
        self.grant = grant
        self.model = model
        self.session_id = session_id
        self.progress = progress
        self.approve = approve
        self.notes: list[str] = [grant.note] if grant.note else []
        self.text: list[str] = []
        self.finished: views.TurnFinished | None = None

    async def run(self, prompt: str) -> policy.TaskReport:
        try:
            endpoint = await anyio.to_thread.run_sync(_loop_endpoint, str(self.place.root))
        except AiCodingError as err:
            return self._report("failed", policy.Scan({}), policy.Scan({}), f"the loop service is not available: {err}")
        client = LoopClient(endpoint, cwd=str(self.place.cwd))
        try:
            return await self._run(client, prompt)
        finally:
            with anyio.CancelScope(shield=True):
                await client.close()

    async def _run(self, client: LoopClient, prompt: str) -> policy.TaskReport:
        mode = self.grant.mode
        try:
            opened = await client.open_session(str(self.place.root), self.session_id, model=self.model,
                                               auto_approve=mode == policy.Mode.AUTO, interactive=False)
            self.session_id = opened.session_id
            if mode == policy.Mode.READONLY:
                await client.run_command(opened.session_id, "permissions", policy.Mode.READONLY.label)
        except ClientError as err:
            empty = policy.Scan({})
            return self._report("failed", empty, empty, err.detail or err.message)
        self.notes += list(opened.warnings)
        before = await anyio.to_thread.run_sync(policy.scan, self.place.root)
        stream = TurnDriver(client, opened.session_id, lambda event: None).start(prompt)  # the one turn driver
        following = asyncio.ensure_future(self._follow(stream))
        try:
            error = await asyncio.shield(following)  # a cancel must not close the stream before the interrupt
        except BaseException:
            # The caller cancelled (notifications/cancelled, or it went away): stop the turn too.
            with anyio.CancelScope(shield=True):
                stream.interrupt(views.Scope.TURN)
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(following), STOP_GRACE_SECONDS)
                following.cancel()
            raise
        after = await anyio.to_thread.run_sync(policy.scan, self.place.root)
        return self._report(policy.status_name(self.finished, "stream_ended"), before, after, error)

    async def _follow(self, stream: TurnStream) -> str:
        """Read the turn to its final event; "" or why the stream broke off."""
        try:
            async for event in stream.events():
                body = event.body
                if isinstance(body, views.TextDelta) and event.scope is None:
                    self.text.append(body.text)
                elif isinstance(body, views.ApprovalRequested) and event.scope is None:
                    await self.progress(event)
                    decision, note = await self.approve(body)
                    if note:
                        self.notes.append(note)
                    stream.approve(body.request_id, decision)
                    continue
                await self.progress(event)
                if isinstance(body, views.TurnFinished) and event.scope is None:
                    self.finished = body
                    return ""
        except ClientError as err:
            return err.detail or err.message
        finally:
            stream.close()
        return "the loop closed the turn's stream before the turn finished"

    def _report(self, status: str, before: policy.Scan, after: policy.Scan, error: str) -> policy.TaskReport:
        notes = list(self.notes)
        if error:
            notes.append(error)
        finished = self.finished
        if finished is not None and finished.reason and finished.status != views.TurnStatus.COMPLETED:
            notes.append(finished.reason)
        text = finished.text if finished is not None and finished.text else "".join(self.text)
        return policy.TaskReport(status=status, text=text, session_id=self.session_id, mode=self.grant.mode,
                                 changes=policy.changed_files(before.files, after.files), notes=notes,
                                 scan_complete=before.complete and after.complete)
