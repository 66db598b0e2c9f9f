"""Background jobs in the REPL: while the status line shows a job, the REPL asks the loop (``/jobs``)
every few seconds whether it still runs; a job that ended leaves the line with one dim note.

The tools service sends no event when a job's process exits (nothing of a turn happens then), so
this is the one place that polls, and only while a job is shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

from clients.cli.connection.loop import ClientError
from clients.cli.progress import JobState
from clients.cli.repl.host import ReplHost
from clients.cli.textsafe import literal

# How often a shown job is checked: its end shows within this, and a listing is one small RPC.
JOB_POLL_SECONDS = 2.0


class JobWatcher:
    """Keeps the status line's jobs true to the tools service's table."""

    def __init__(self, repl: ReplHost) -> None:
        self.repl = repl
        self._task: asyncio.Task[None] | None = None

    def watch(self) -> None:
        """Poll while the line shows a job (started when the first one shows; once at a time)."""
        if self.repl.progress.jobs and (self._task is None or self._task.done()):
            self._task = self.repl.spawn(self._poll())

    async def _poll(self) -> None:
        while self.repl.progress.jobs:
            await asyncio.sleep(JOB_POLL_SECONDS)
            await self.check()

    async def check(self) -> None:
        """Ask for the session's jobs once: ended ones leave the line (noted), running ones join it."""
        repl = self.repl
        session_id = repl.session_id
        try:
            reply = await repl.client.run_command(session_id, "jobs", "")
        except ClientError:
            return  # the loop is away: the next poll asks again (the REPL restores the services itself)
        with contextlib.suppress(ValueError):
            data = json.loads(reply.data_json or "{}")
            if session_id != repl.session_id or not isinstance(data, dict) or data.get("error"):
                return
            listed = [job for job in map(JobState.of, data.get("jobs") or []) if job is not None]
            known = {job.job_id for job in listed}
            now = time.monotonic()
            for job in listed:
                if repl.progress.job_seen(job, now):
                    repl.print(literal(f"  {job.ended_line()}", "dim"))
            for job_id in [j for j in repl.progress.jobs if j not in known]:  # gone from the table: ended
                repl.progress.jobs.pop(job_id, None)
            repl.invalidate()
        self.watch()
        repl.keep_ticking()
