"""Running one command: its own process group, streamed output at a bounded
rate, head+tail cap, timeout and cancellation that kill the whole group and
every process it started (``reaper``: also the ones that left the group)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.tools import limits, reaper
from services.tools.domain import Emit
from services.tools.output import HeadTailBuffer, TextDecoder


@dataclass
class ProcessResult:
    """How a command ended."""

    exit_code: int | None
    output: str
    total_chars: int
    cut_chars: int
    timed_out: bool


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class Spawned:
    """A started command: its pid, an asyncio reader of its output, and an awaitable exit.

    Exit is watched through a pidfd on the event loop, not asyncio's child
    watcher thread: one fewer thread hand-off per command, which is what costs
    most on a busy 2-core machine.
    """

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader, token: str) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdout = stdout
        self.token = token
        """The ``reaper`` marker every process of this command carries."""

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        """The exit status, once the process has ended (it is reaped here)."""
        if self.popen.poll() is not None:
            return self.popen.returncode
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return self.popen.wait()
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()

        def mark_ended() -> None:
            if not ended.done():
                ended.set_result(None)

        loop.add_reader(pidfd, mark_ended)
        try:
            await ended
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        return self.popen.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()

    async def kill_tree(self) -> None:
        """SIGKILL the command's group and every process it started that left the group."""
        kill_group(self.pid)
        await asyncio.to_thread(reaper.kill_marked, self.token)


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PRCTL = _LIBC.prctl if _LIBC is not None else None  # resolved now: the child only calls it


def _die_with_service() -> None:
    """In the child, before exec: SIGKILL it when the thread that started it (the service's event
    loop) dies, so a job never outlives a service killed with SIGKILL. bwrap adds --die-with-parent
    and a PID namespace (everything inside dies); on the host (sandbox none) this covers the
    direct process, which `bash -c` replaces by a lone command."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_GUARDIAN = reaper.Guardian()
"""One per process, started with its first command; it ends when the process does (never before:
runtimes of one process share it, and a clean shutdown has ended its commands already)."""


def dies_with_service(argv: Sequence[str]) -> bool:
    """True when ``argv`` ends itself with the service: bwrap with ``--die-with-parent`` (its
    sandbox, the command included, gets SIGKILL when the service's thread dies)."""
    return bool(argv) and Path(argv[0]).name == "bwrap" and "--die-with-parent" in argv


async def spawn(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Spawned:
    """Start ``argv`` as the leader of a new session/process group, stdout+stderr on one pipe.

    A sandboxed command is started without a ``preexec_fn`` (bwrap's own ``--die-with-parent``
    does what :func:`_die_with_service` does): Python then starts it with vfork, ~0.2 ms, where a
    preexec function needs a full fork of the service process, ~4 ms on 2 cores, on the event loop."""
    _GUARDIAN.ensure()
    token = reaper.new_run_token()
    popen = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, cwd=str(cwd), env=reaper.marked_env(dict(env), token),
                             start_new_session=True,
                             preexec_fn=None if dies_with_service(argv) else _die_with_service)
    assert popen.stdout is not None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), popen.stdout)
    except BaseException:
        kill_group(popen.pid)
        popen.wait()
        raise
    return Spawned(popen, reader, token)


class _Throttle:
    """Collects text and sends it as chunks, at most one per interval, each of bounded size.

    Text still waiting for its slot when the command ends is not streamed: the
    result (sent right away) carries the whole output, so the call never waits
    out an interval just to stream.
    """

    def __init__(self, emit: Emit | None) -> None:
        self.emit = emit
        self.pending: list[str] = []
        self.streamed = 0
        self.last = -1e9
        self.wake = asyncio.Event()
        self.closing = asyncio.Event()

    def add(self, text: str) -> None:
        if self.emit is None or not text or self.streamed >= limits.STREAM_CAP_CHARS:
            return
        room = limits.STREAM_CAP_CHARS - self.streamed
        if len(text) >= room:
            text = text[:room] + "\n[... streaming stopped; the result keeps the head and tail ...]\n"
        self.streamed += len(text)
        self.pending.append(text)
        self.wake.set()

    async def run(self) -> None:
        while not self.closing.is_set():
            await self.wake.wait()
            delay = self.last + limits.CHUNK_INTERVAL_SECONDS - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.closing.wait(), delay)
            if self.closing.is_set() and time.monotonic() - self.last < limits.CHUNK_INTERVAL_SECONDS:
                return
            text = "".join(self.pending)
            self.pending.clear()
            self.wake.clear()
            if not text:
                continue
            if len(text) > limits.CHUNK_MAX_CHARS:
                half = limits.CHUNK_MAX_CHARS // 2
                text = f"{text[:half]}\n[... {len(text) - 2 * half:,} characters not streamed ...]\n{text[-half:]}"
            self.last = time.monotonic()
            if self.emit is not None:
                await self.emit("stdout", text)

    async def close(self, task: asyncio.Task[None]) -> None:
        self.closing.set()
        self.wake.set()
        await task


async def _pump(stream: asyncio.StreamReader, buffer: HeadTailBuffer, throttle: _Throttle) -> None:
    decoder = TextDecoder()
    while data := await stream.read(65536):
        text = decoder.feed(data)
        buffer.feed(text)
        throttle.add(text)
    tail = decoder.feed(b"", final=True)
    buffer.feed(tail)
    throttle.add(tail)


async def run_command(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float,
                      emit: Emit | None, contained: bool = False) -> ProcessResult:
    """Run to completion, timeout or cancellation; the process group never outlives this call.

    ``contained``: ``argv`` is bwrap with its own PID namespace. When its command ends by itself,
    bwrap's init ends with it and the kernel has killed and reaped every process left in the
    namespace before bwrap exits, so the /proc sweep for escaped processes (~10 ms with a few
    hundred processes on the host) is skipped; after a timeout or a cancellation it still runs."""
    proc = await spawn(argv, env, cwd)
    buffer = HeadTailBuffer(limits.OUTPUT_CAP_CHARS)
    throttle = _Throttle(emit)
    sender = asyncio.create_task(throttle.run())
    pump = asyncio.create_task(_pump(proc.stdout, buffer, throttle))
    timed_out = False
    ended_alone = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
            ended_alone = True
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            await proc.wait()
        # A background child may still hold the pipe: give it a moment, then kill the group.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump), limits.KILL_GRACE_SECONDS)
    finally:
        kill_group(proc.pid)
        if not (contained and ended_alone):
            # What left the group too; a cancelled call still sweeps (in the background), never skips the rest.
            sweep = asyncio.ensure_future(asyncio.to_thread(reaper.kill_marked, proc.token))
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(sweep)
        if proc.returncode is None:
            proc.kill()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(pump, 5)
        with contextlib.suppress(asyncio.CancelledError):
            await throttle.close(sender)
    return ProcessResult(None if timed_out else proc.returncode, buffer.render(), buffer.total, buffer.cut, timed_out)
