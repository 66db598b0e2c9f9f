"""The tool runtime: sessions (roots, sandbox, file state, jobs) and one call's dispatch.

Nothing the caller sends is trusted: the workspace root is checked, extra roots
and sandbox settings can only narrow what this service's own config allows,
arguments are validated against the schema, paths are resolved here and
commands are matched against the DENY list here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.kernel.command_limits import oversize_reason
from services.kernel.command_policy import denied_reason, writes_files
from services.kernel.config import referenced_vars
from services.kernel.datadir import data_dir
from services.kernel.netpolicy import NetConfig
from services.kernel.offloop import CheckTimeout, off_loop
from services.tools import limits, placeholders
from services.tools.checkpoints.hook import CheckpointHook
from services.tools.config import SANDBOX_MODES, ToolsConfig, network_mode
from services.tools.domain import (
    Emit,
    OpenedSession,
    SandboxPolicy,
    SessionRequest,
    ToolCallResult,
    ToolOutput,
)
from services.tools.egress.ca import ca_env
from services.tools.egress.forwarder import EgressMount, find_python, proxy_env
from services.tools.egress.grants import ASK_USER
from services.tools.egress.proxy import Gate
from services.tools.egress.setup import make_egress
from services.tools.errors import ToolError, UnknownSession, WorkspaceError
from services.tools.files import edit_file, read_file, write_file
from services.tools.filestate import FileStateTracker
from services.tools.jobs import Job, JobTable
from services.tools.paths import check_workspace_root
from services.tools.process import run_command
from services.tools.sandbox import (
    SANDBOX_HOME,
    BwrapProbe,
    bwrap_argv,
    hidden_top_level,
    host_argv,
    sandbox_env,
)
from services.tools.schemas import (
    SPECS_BY_NAME,
    TOOL_SPECS,
    BashArgs,
    JobArgs,
    JobStartArgs,
    NoArgs,
    ToolSpecData,
    parse_arguments,
    validate_arguments,
)
from services.tools.search import glob_files, grep_files

_PARSE_OFF_LOOP_CHARS = 65_536
log = logging.getLogger("ai_coding.tools")

NONE_WARNING = ("the sandbox is off (tools.sandbox.mode: none): commands run on the host with your "
                "permissions and network")


def decide_sandbox(config: ToolsConfig, requested_mode: str,
                   requested_network: bool | None) -> tuple[SandboxPolicy, list[str]]:
    """The session's sandbox: the service's config, tightened (never loosened) by the request.
    ``requested_network`` None means the request did not say (the config decides)."""
    warnings: list[str] = []
    mode = config.sandbox.mode if config.sandbox.mode in SANDBOX_MODES else "bwrap"
    if requested_mode == "bwrap":
        mode = "bwrap"
    elif requested_mode == "none" and mode != "none":
        warnings.append("the request asked to turn the sandbox off; the tool service's config keeps bwrap")
    net = network_mode(config.sandbox.network) if requested_network is not False else "off"
    if mode == "none":
        warnings.append(NONE_WARNING)
    return SandboxPolicy(mode, net == "host", net == "proxy" and mode == "bwrap"), warnings


def decide_extra_roots(configured: Sequence[str], requested: Sequence[str], home: Path | None = None,
                       private: Sequence[tuple[str, str]] = ()) -> tuple[list[Path], list[str]]:
    """Extra roots granted: the configured ones that pass the workspace-root checks (so not one
    containing home or a private dir), narrowed to the requested ones if any."""
    warnings: list[str] = []
    allowed: list[Path] = []
    for raw in configured:
        try:
            allowed.append(check_workspace_root(str(Path(raw).expanduser()), home or Path.home(), private))
        except WorkspaceError as exc:
            warnings.append(f"extra workspace root {raw} ignored: {exc.message}")
    if not requested:
        return allowed, warnings
    granted = []
    for raw in requested:
        real = Path(os.path.realpath(Path(raw).expanduser()))
        if real in allowed:
            granted.append(real)
        else:
            warnings.append(f"extra root {raw} is not in the tool service's user config "
                            "(tools.extra_workspace_roots); ignored")
    return granted, warnings


def decide_read_only_paths(configured: Sequence[str], home: Path,
                           private: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """``tools.sandbox.read_only_paths`` that pass the workspace-root checks (none holds home or a
    private dir), and a warning for each one refused."""
    shown: list[str] = []
    warnings: list[str] = []
    for raw in configured:
        try:
            shown.append(str(check_workspace_root(str(Path(raw).expanduser()), home, private)))
        except WorkspaceError as exc:
            warnings.append(f"tools.sandbox.read_only_paths entry {raw} ignored: {exc.message}")
    return shown, warnings


@dataclass
class Session:
    """One session's roots, sandbox, file state and jobs."""

    session_id: str
    roots: list[Path]
    sandbox: SandboxPolicy
    secret_names: list[str]
    tracker: FileStateTracker = field(default_factory=FileStateTracker)
    jobs: JobTable = field(default_factory=JobTable)
    last_used: float = field(default_factory=time.monotonic)
    calls_in_flight: int = 0

    def idle_for(self, now: float) -> float:
        """Seconds since the last call ended (0 while a call or a job runs)."""
        busy = self.calls_in_flight or any(job.status == "running" for job in self.jobs.jobs.values())
        return 0.0 if busy else now - self.last_used


Handler = Callable[[Session, Any, float, Emit], Awaitable[ToolOutput]]
"""A tool: its session, its parsed arguments (the tool's arguments dataclass), the time bound, chunks."""


class ToolRuntime:
    """Everything the ToolRuntime gRPC service does, in domain types."""

    def __init__(self, config: ToolsConfig, *, host_env: Mapping[str, str] | None = None,
                 home: Path | None = None, private: Sequence[tuple[str, str]] = (),
                 ripgrep: str | None = None, net: NetConfig | None = None) -> None:
        self.config = config
        self.host_env = dict(os.environ if host_env is None else host_env)
        self.egress, self.egress_error = make_egress(config.sandbox, net or NetConfig(), self.host_env,
                                                     data_dir(self.host_env) / "egress-ca")
        if self.egress is not None:  # "for this session" grants outlive a restart of this service
            self.egress.grants.keep_in(data_dir(self.host_env) / "egress-grants")
        self._gate_waits: set[asyncio.Task[None]] = set()
        self.credential_vars = sorted(referenced_vars(config.sandbox.credentials))
        self.home = home or Path.home()
        self.private = list(private)
        """(what, directory) pairs a root may not contain and commands never see (besides home)."""
        self.hidden_paths = [str(self.home), *(where for _, where in self.private)]
        self.shown_paths, self.shown_warnings = decide_read_only_paths(config.sandbox.read_only_paths,
                                                                       self.home, self.private)
        self.ripgrep = ripgrep
        self.sessions: dict[str, Session] = {}
        self.probe = BwrapProbe(config.sandbox.bwrap)
        self.checkpoints = CheckpointHook(config.checkpoints, data_dir(self.host_env) / "checkpoints")
        self.handlers: dict[str, Handler] = {
            "read": self._threaded(lambda s, a: read_file(a, s.roots, s.tracker)),
            "write": self._threaded(lambda s, a: write_file(a, s.roots, s.tracker)),
            "edit": self._threaded(lambda s, a: edit_file(a, s.roots, s.tracker)),
            "glob": self._threaded(lambda s, a: glob_files(a, s.roots)),
            "grep": self._threaded(lambda s, a: grep_files(a, s.roots, self.ripgrep)),
            "bash": self._bash,
            "job_start": self._job_start, "job_output": self._job_output, "job_list": self._job_list,
            "job_stop": self._job_stop,
        }
        self.previews: dict[str, Handler] = {
            "write": self._threaded(lambda s, a: write_file(a, s.roots, s.tracker, dry_run=True)),
            "edit": self._threaded(lambda s, a: edit_file(a, s.roots, s.tracker, dry_run=True)),
            "bash": self._bash_verdict,
        }

    # ------------------------------------------------------------ sessions

    async def open_session(self, request: SessionRequest) -> OpenedSession:
        """Register a session; a workspace root that is missing, `/` or the home directory is refused."""
        if not request.session_id:
            raise WorkspaceError("the session id is empty", hint="Pass the loop's session id.")
        root = check_workspace_root(request.workspace_root, self.home, self.private)
        policy, warnings = decide_sandbox(self.config, request.sandbox_mode, request.network)
        extra, root_warnings = decide_extra_roots(self.config.extra_workspace_roots, request.extra_roots,
                                                  self.home, self.private)
        warnings += root_warnings + self.shown_warnings + self.checkpoints.recovered_lines(root)
        if policy.egress and self.egress is None:
            warnings.append(f"the sandbox's egress proxy cannot run, commands will be refused: {self.egress_error}")
        if policy.mode == "bwrap":
            try:
                await self.probe.ensure()
            except ToolError as exc:
                warnings.append(f"{exc.message}. {exc.hint}")
        self._forget_idle()
        old = self.sessions.get(request.session_id)
        if old is not None and old.roots[0] != root:
            await old.jobs.stop_all()
            old = None
        session = Session(request.session_id, [root, *extra], policy, list(request.secret_env_names))
        if old is not None:
            session.tracker, session.jobs = old.tracker, old.jobs
        self.sessions[request.session_id] = session
        self.checkpoints.prepare(root)
        return OpenedSession(str(root), warnings, policy, [str(p) for p in extra])

    def _forget_idle(self) -> None:
        now = time.monotonic()
        for session_id, session in list(self.sessions.items()):
            if session.idle_for(now) > self.config.idle_session_seconds:
                log.info("forgetting idle session %s", session_id)
                del self.sessions[session_id]

    async def close_session(self, session_id: str, ending: bool = True) -> int:
        """Stop the session's jobs and forget it; how many jobs were still running. ``ending``: the
        session closed (its network grants end); else only this service stops (they are kept)."""
        session = self.sessions.pop(session_id, None)
        if self.egress is not None and ending:
            self.egress.forget(session_id)
        return 0 if session is None else await session.jobs.stop_all()

    async def close_all(self) -> None:
        """Stop every session's jobs and release the checkpoint watches (service shutdown: the sessions
        go on, their network grants stay in the store for the next start)."""
        for session_id in list(self.sessions):
            await self.close_session(session_id, ending=False)
        self.checkpoints.close()

    def session_root(self, session_id: str) -> Path:
        """The workspace root of an open session (UnknownSession when it is not open)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"session {session_id!r} is not open in the tool service",
                                 hint="Call OpenSession first (the tool service may have restarted).")
        return session.roots[0]

    def list_tools(self) -> list[ToolSpecData]:
        return list(TOOL_SPECS)

    # ------------------------------------------------------------ calls

    async def call(self, session_id: str, call_id: str, tool: str, arguments_json: str, bound: float,
                   emit: Emit, dry_run: bool = False) -> ToolCallResult:
        """Run one tool call; failures the model can act on come back as a result with a code.
        ``dry_run`` previews write/edit (the real diff, nothing written) and bash (its policy verdict)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"session {session_id!r} is not open in the tool service",
                                 hint="Call OpenSession first (the tool service may have restarted).")
        started = time.monotonic()
        session.calls_in_flight += 1
        try:
            spec = SPECS_BY_NAME.get(tool)
            if spec is None:
                raise ToolError("unknown_tool", f"there is no tool named {tool!r}",
                                f"Use one of: {', '.join(SPECS_BY_NAME)}.")
            if len(arguments_json) > _PARSE_OFF_LOOP_CHARS:  # a 10 MB object takes ~0.1 s to parse
                args = await off_loop(lambda: validate_arguments(spec, parse_arguments(arguments_json)))
            else:
                args = validate_arguments(spec, parse_arguments(arguments_json))
            handlers = self.previews if dry_run else self.handlers
            if tool not in handlers:
                raise ToolError("invalid_arguments", f"`{tool}` has no dry run",
                                f"Dry runs exist for: {', '.join(self.previews)}.")
            taken = None if dry_run else await self.checkpoints.before(tool, session_id, call_id, session.roots[0])
            out = await handlers[tool](session, args, bound, emit)
            await self.checkpoints.after(out, taken, tool, session_id, call_id, session.roots[0])
        except ToolError as exc:
            out = ToolOutput("", ok=False, error_code=exc.code, error_message=exc.message, error_hint=exc.hint)
        except CheckTimeout as exc:
            out = ToolOutput("", ok=False, error_code="tool_timeout", error_message=f"the arguments: {exc}",
                             error_hint="Send smaller arguments.")
        except OSError as exc:
            out = ToolOutput("", ok=False, error_code="io_error", error_message=f"{exc.strerror or exc}"
                             + (f": {exc.filename}" if exc.filename else ""),
                             error_hint="Check the path and its permissions.")
        finally:
            session.calls_in_flight -= 1
            session.last_used = time.monotonic()
        duration = (time.monotonic() - started) * 1000
        log.debug("session %s call %s %s: ok=%s code=%s %.1f ms", session_id, call_id, tool, out.ok,
                  out.error_code, duration)
        output = out.output if out.ok else "\n".join(p for p in (out.output, f"Error: {out.error_message}",
                                                                  out.error_hint) if p)
        return ToolCallResult(call_id, tool, out.ok, output, out.data, out.error_code, out.error_message,
                              out.error_hint, duration, out.limit_hit)

    @staticmethod
    def _bound(own: float, bound: float) -> float:
        return min(own, bound) if bound > 0 else own

    def _threaded(self, fn: Callable[[Session, Any], ToolOutput]) -> Handler:
        """A blocking file tool run in a worker thread under the file-tool deadline."""

        async def handler(session: Session, args: Any, bound: float, emit: Emit) -> ToolOutput:
            timeout = self._bound(limits.FILE_TOOL_TIMEOUT, bound)
            try:
                return await asyncio.wait_for(asyncio.to_thread(fn, session, args), timeout)
            except TimeoutError:
                raise ToolError("tool_timeout", f"the operation did not finish within {timeout:g} s",
                                "Narrow the path, pattern or range and try again.") from None

        return handler

    @staticmethod
    async def _denied(command: str) -> str | None:
        """``denied_reason`` off the event loop (checking a long command takes CPU); fails closed."""
        try:
            return await off_loop(denied_reason, command)
        except CheckTimeout as exc:
            return f"the command policy check was stopped ({exc})"

    async def _open_gate(self, session: Session, ask: bool = False, background: bool = False) -> Gate | None:
        """The egress proxy's gate for one command of a ``network: proxy`` sandbox (else None);
        ``ask``: unlisted hosts are asked of the user through the running call (bash, not a job)."""
        if not session.sandbox.egress or session.sandbox.mode != "bwrap":
            return None
        if self.egress is None:
            raise ToolError("egress_unavailable", f"the sandbox's egress proxy cannot run: {self.egress_error}",
                            "Fix tools.sandbox in your user config, then restart the tools service.")
        return await self.egress.open_gate(session.session_id, ASK_USER.get() if ask else None, background)

    async def _command_argv(self, session: Session, command: str, gate: Gate | None = None
                            ) -> tuple[list[str], dict[str, str]]:
        if not command.strip() or "\0" in command:
            raise ToolError("invalid_arguments", "field `command` is empty or contains a NUL byte",
                            "Pass a shell command line.")
        too_long = oversize_reason(command)
        if too_long:
            raise ToolError("command_too_long", too_long, "Put the commands in a script file and run it.")
        reason = await self._denied(command)
        if reason:
            raise ToolError("denied_command", f"refused: {reason}",
                            "This command is on the hard deny list; find another way or ask the user to run it.")
        root = session.roots[0]
        if session.sandbox.mode == "none":
            env = sandbox_env(self.host_env, self.config.sandbox.env_allow, session.secret_names,
                              self.host_env.get("HOME", str(root)))
            return host_argv(command), env
        bwrap = await self.probe.ensure()
        secrets = [*session.secret_names, *self.credential_vars]  # never in, even when env_allow names one
        env = sandbox_env(self.host_env, self.config.sandbox.env_allow, secrets, SANDBOX_HOME)
        egress = None
        if gate is not None:
            python = find_python()
            if python is None:
                raise ToolError("egress_unavailable", "tools.sandbox.network: proxy needs python3 in /usr/bin "
                                "(it relays the proxy into the sandbox)", "Install python3 on the host.")
            authority = gate.proxy.authority
            egress = EgressMount(gate.path, python, tuple(authority.sandbox_binds()) if authority else ())
            env.update(proxy_env())
            if authority is not None:
                env.update(ca_env())
        argv = bwrap_argv(bwrap, session.roots, root, session.sandbox.network, self.hidden_paths, command,
                          self.shown_paths, egress)
        return argv, env

    async def _bash_verdict(self, session: Session, args: BashArgs, bound: float, emit: Emit) -> ToolOutput:
        command = args.command
        reason = await self._denied(command)
        writes = await off_loop(writes_files, command)
        verdict = f"denied: {reason}" if reason else ("writes files" if writes else "runs without writing files")
        return ToolOutput(verdict, {"denied": reason, "writes_files": writes, "dry_run": True})

    async def _bash(self, session: Session, args: BashArgs, bound: float, emit: Emit) -> ToolOutput:
        command = args.command
        timeout = self._bound(args.timeout_seconds, bound)
        gate = await self._open_gate(session, ask=True)
        held: list[str] = []
        try:
            argv, env = await self._command_argv(session, command, gate)  # makes the placeholders
            held = placeholders.lease(session.roots)
            result = await run_command(argv, env, session.roots[0], timeout, emit,
                                       contained=session.sandbox.mode != "none")
        finally:
            placeholders.release(held)
            if gate is not None:
                await gate.close()
        data: dict[str, Any] = {"exit_code": result.exit_code, "total_chars": result.total_chars,
                                "cut_chars": result.cut_chars, "sandbox": session.sandbox.mode}
        note = ""
        if gate is not None:
            data["egress"], note = gate.report(), gate.note()
        if result.timed_out:
            return ToolOutput(result.output + note, data, "timeout", ok=False, error_code="tool_timeout",
                              error_message=f"the command did not finish within {timeout:g} s and was killed "
                                            "with its whole process group",
                              error_hint="If it needs longer, call bash again with a larger timeout_seconds "
                                         f"(max {limits.BASH_MAX_TIMEOUT:g}); for servers use job_start.")
        output = result.output or "(no output)"
        if result.exit_code:
            output += f"\n(exit code {result.exit_code})"
            output += read_only_note(result.output, session.sandbox.mode, hidden_top_level())
        return ToolOutput(output + note, data, "output_cap" if result.cut_chars else "")

    async def _job_start(self, session: Session, args: JobStartArgs, bound: float, emit: Emit) -> ToolOutput:
        command = args.command
        gate = await self._open_gate(session, background=True)
        held: list[str] = []
        try:
            argv, env = await self._command_argv(session, command, gate)  # makes the placeholders
            held = placeholders.lease(session.roots)
            job = await session.jobs.start(argv, env, session.roots[0], command, args.name,
                                           on_end=lambda: placeholders.release(held))
        except BaseException:
            placeholders.release(held)
            if gate is not None:
                await gate.close()
            raise
        if gate is not None:  # the job's way out closes when the job ends
            job.gate = gate
            waiter = asyncio.ensure_future(self._close_gate_after(job.process.wait(), gate))
            self._gate_waits.add(waiter)
            waiter.add_done_callback(self._gate_waits.discard)
        return ToolOutput(f"Started {job.job_id}: {command}", job.describe())

    @staticmethod
    async def _close_gate_after(ended: Awaitable[int], gate: Gate) -> None:
        try:
            await ended
        finally:
            await gate.close()

    async def _job_output(self, session: Session, args: JobArgs, bound: float, emit: Emit) -> ToolOutput:
        job = session.jobs.get(args.job_id)
        text, lost = job.buffer.read_new(limits.JOB_OUTPUT_MAX_CHARS)
        info = job.describe()
        head = f"[{job.job_id} {info['status']}" + (f", exit code {info['exit_code']}" if info["exit_code"]
                                                      is not None else "") + f", {info['runtime_s']:.1f} s]"
        if lost:
            head += f"\n[... {lost:,} older characters were dropped ...]"
        data, note = _job_egress(job)
        return ToolOutput((f"{head}\n{text}" if text else f"{head}\n(no new output)") + note,
                          {**info, "dropped_chars": lost, **data})

    async def _job_list(self, session: Session, args: NoArgs, bound: float, emit: Emit) -> ToolOutput:
        jobs = [job.describe() for job in session.jobs.jobs.values()]
        lines = [f"{j['job_id']}  {j['status']:<8} {j['runtime_s']:>8.1f}s  {j['command'][:80]}" for j in jobs]
        return ToolOutput("\n".join(lines) if lines else "No jobs.", {"jobs": jobs})

    async def _job_stop(self, session: Session, args: JobArgs, bound: float, emit: Emit) -> ToolOutput:
        job = session.jobs.get(args.job_id)
        was_running = await session.jobs.stop(job)
        text = f"Stopped {job.job_id}." if was_running else f"{job.job_id} had already ended."
        data, note = _job_egress(job)
        return ToolOutput(text + note, {**job.describe(), **data})


def _job_egress(job: Job) -> tuple[dict[str, Any], str]:
    """A job's requests through the proxy since it last told them: ``data.egress`` (the loop traces
    them under this call) and the note for the model (each refused host, and how the user allows it)."""
    if job.gate is None:
        return {}, ""
    records, note = job.gate.take_report()
    return ({"egress": records} if records else {}), note


READ_ONLY_NOTE = ("\n[sandbox] .git and .ai-coding are read-only inside the sandbox: git would run on the "
                  "host whatever a command wrote there. git status/diff/log work; commit, branch, stash, "
                  "checkout and init do not: leave them to the user (say what to run).")


def read_only_note(output: str, mode: str, hidden_top: Sequence[str] = ()) -> str:
    """The explanation appended when a sandboxed command failed on the read-only git/state dirs or on
    a host directory the sandbox hides (not /tmp: commands have a private one)."""
    if mode != "bwrap":
        return ""
    if "Read-only file system" in output and (".git" in output or ".ai-coding" in output):
        return READ_ONLY_NOTE
    named = sorted({top for top in hidden_top if top != "/tmp" and re.search(rf"(?<![\w./-]){re.escape(top)}(/|\b)", output)})
    if named and ("No such file or directory" in output or "not found" in output):
        return (f"\n[sandbox] {', '.join(named)} is hidden inside the sandbox (commands see the system dirs, "
                "the workspace and its extra roots). If the command needs it, ask the user to add the "
                "directory to tools.sandbox.read_only_paths in ~/.config/ai-coding/config.yaml.")
    return ""


def find_ripgrep() -> str | None:
    """The ripgrep program, when installed."""
    return shutil.which("rg")
