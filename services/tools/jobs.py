"""Background jobs: long-running commands in the same sandbox, with bounded
output buffers, stopped on request or at CloseSession. Stopping a job, or its
command exiting, ends every process it started (its group, and through the
``reaper`` marker the ones that left it: ``setsid``, a daemon's double fork)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.tools import limits
from services.tools.errors import ToolError
from services.tools.output import RingBuffer, TextDecoder
from services.tools.process import Spawned, spawn

if TYPE_CHECKING:
    from services.tools.egress.proxy import Gate


@dataclass
class Job:
    """One background command."""

    job_id: str
    name: str
    command: str
    process: Spawned
    started: float
    buffer: RingBuffer = field(default_factory=lambda: RingBuffer(limits.JOB_BUFFER_CHARS))
    ended: float | None = None
    stopped: bool = False
    reader: asyncio.Task[None] | None = None
    gate: Gate | None = None
    """Its way out under ``network: proxy`` (its requests' records, told with job_output)."""

    @property
    def status(self) -> str:
        if self.process.returncode is None:
            return "running"
        return "stopped" if self.stopped else "exited"

    def describe(self) -> dict[str, Any]:
        end = self.ended if self.ended is not None else time.monotonic()
        out = {"job_id": self.job_id, "name": self.name, "command": self.command, "status": self.status,
               "exit_code": self.process.returncode, "runtime_s": round(end - self.started, 3)}
        refused = sorted({f"{r.host}:{r.port}" for r in self.gate.records if r.verdict != "allow" and r.host}) \
            if self.gate is not None else []
        return {**out, "egress_refused": refused} if refused else out


async def _read(job: Job, on_end: Callable[[], None] | None = None) -> None:
    try:
        stream = job.process.stdout
        decoder = TextDecoder()
        reading = asyncio.create_task(_drain(stream, job, decoder))
        await job.process.wait()
        job.ended = time.monotonic()
        # The job is its command: what it left behind (a detached child holding the pipe or not) ends now.
        await job.process.kill_tree()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reading, 5)
    finally:
        if on_end is not None:
            on_end()


async def _drain(stream: asyncio.StreamReader, job: Job, decoder: TextDecoder) -> None:
    while data := await stream.read(65536):
        job.buffer.feed(decoder.feed(data))
    job.buffer.feed(decoder.feed(b"", final=True))


class JobTable:
    """A session's jobs."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self._counter = 0

    async def start(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, command: str,
                    name: str, on_end: Callable[[], None] | None = None) -> Job:
        """Start a job; ``on_end`` runs once its process has exited (the sandbox's placeholder lease)."""
        running = sum(1 for j in self.jobs.values() if j.status == "running")
        if running >= limits.JOB_MAX_PER_SESSION:
            raise ToolError("job_limit", f"{running} jobs are already running in this session",
                            "Stop one with job_stop before starting another.")
        self._counter += 1
        job_id = f"job-{self._counter}"
        process = await spawn(argv, env, cwd)
        job = Job(job_id, name or command[:40], command, process, time.monotonic())
        job.reader = asyncio.create_task(_read(job, on_end))
        self.jobs[job_id] = job
        return job

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            known = ", ".join(self.jobs) or "none"
            raise ToolError("not_found", f"no job {job_id!r} in this session (jobs: {known})",
                            "Use job_list to see the job ids.")
        return job

    async def stop(self, job: Job) -> bool:
        """Kill the job's process group; True when it was still running."""
        was_running = job.process.returncode is None
        if was_running:
            job.stopped = True
        await job.process.kill_tree()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.process.wait(), 10)
        if job.reader is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(job.reader, 5)
        return was_running

    async def stop_all(self) -> int:
        """Stop every job; how many were still running."""
        results = await asyncio.gather(*(self.stop(job) for job in self.jobs.values()))
        return sum(results)
