"""All sessions open in one loop service: opening (new or stored), eviction of idle ones, shutdown."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from services.kernel.errors import ConfigError
from services.kernel.invocation import effective_environment
from services.loop.core.crash_marks import mark_crashed_turn
from services.loop.core.errors import SessionNotFound
from services.loop.core.sessions import Session, SessionStore
from services.loop.session.deps import LoopDeps, SessionOptions
from services.loop.session.reclaim import Reclaimer
from services.loop.session.runtime import SessionRuntime
from services.loop.tools.project_mcp import ProjectServers

# Idle sessions kept in memory beyond this are dropped (least recently used first), and so is
# one left idle for IDLE_SESSION_SECONDS (swept every EVICT_SWEEP_SECONDS); either stays on disk
# and is loaded again by its next OpenSession or Converse. One held session costs the loop about
# 50-100 KB for a short one (bench/footprint.py) plus its event window (up to LoopDeps.event_window
# events of ~200 B): 100 full windows would be ~400 MB, hence the time limit. A dropped runtime is
# freed by a cyclic collection only: reclaim.py runs one within a bound.
MAX_IDLE_SESSIONS = 100
IDLE_SESSION_SECONDS = 600.0
EVICT_SWEEP_SECONDS = 30.0
# Evicted sessions remembered (workspace, options) so a client's next Converse finds its session
# without a new OpenSession; the oldest are forgotten past this (~1 KB each).
MAX_EVICTED_REMEMBERED = 1000


ENVIRONMENT_HINT = ("The services keep the environment they were started with: after exporting a variable, "
                    "run `ai-coding down` and retry.")


def with_environment_hint(err: ConfigError, client_sent_env: bool = False) -> ConfigError:
    """A model that cannot be resolved may need a variable the services were not started with:
    say so, since exporting it in the client's shell changes nothing for a running service. A client
    that sent its own variables (``client_sent_env``) was heard: the hint would be false."""
    if client_sent_env or not (err.message.startswith("no model configured") or "is not set" in err.message):
        return err
    return ConfigError(err.message, hint=f"{err.hint} {ENVIRONMENT_HINT}".strip())


class LoopRuntime:
    """All sessions open in this loop service."""

    def __init__(self, deps: LoopDeps,
                 deps_for: Callable[[str, dict[str, str] | None], tuple[LoopDeps, list[str]]] | None = None
                 ) -> None:
        self.deps = deps
        # A workspace's deps (its layered config, in the client's environment) and that config's warnings.
        self.deps_for = deps_for or (lambda workspace, client_env: (deps, []))
        self.sessions: dict[str, SessionRuntime] = {}
        self._stores: dict[str, SessionStore] = {}
        self._evicted: dict[str, tuple[str, SessionOptions]] = {}
        # Opens of one stored session in flight: [lock, openers]. Loading a session and attaching its
        # tools awaits, so without the lock two opens (a REPL's follower and its driver after a loop
        # restart) each built a runtime of their own over the same journal.
        self._opening: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self.project_mcp = ProjectServers()
        self.reclaim = Reclaimer()

    def store(self, workspace: str) -> SessionStore:
        if workspace not in self._stores:
            self._stores[workspace] = SessionStore(workspace, fsync=self.deps.fsync)
        return self._stores[workspace]

    async def open(self, workspace: str, session_id: str, model: str, options: SessionOptions
                   ) -> tuple[SessionRuntime, list[str]]:
        """Create or resume a session; returns its runtime and warnings."""
        store = self.store(workspace)
        deps, config_warnings = self.deps_for(workspace, options.client_env)
        if not session_id:
            try:
                deps.model_for(model)  # before the session file: no model means no session is written
            except ConfigError as err:
                raise with_environment_hint(err, options.client_env is not None) from None
            return await self._start(store, deps, workspace, store.new(model), model, options, config_warnings)
        # A session nothing was said in yet is only in memory (no file until its first turn).
        sid = session_id if session_id in self.sessions else store.resolve(session_id)
        lock, openers = self._opening.setdefault(sid, (asyncio.Lock(), [0]))
        openers[0] += 1
        try:
            async with lock:
                live = self.sessions.get(sid)
                if live is not None:
                    live.set_options(options)
                    live.reconfigure(deps)
                    return live, config_warnings
                session, warnings = store.load(sid)
                return await self._start(store, deps, workspace, session, model, options,
                                         [*config_warnings, *warnings])
        finally:
            openers[0] -= 1
            if not openers[0]:
                del self._opening[sid]

    async def _start(self, store: SessionStore, deps: LoopDeps, workspace: str, session: Session, model: str,
                     options: SessionOptions, warnings: list[str]) -> tuple[SessionRuntime, list[str]]:
        """A runtime for ``session`` (new or just loaded), registered; its warnings after ``warnings``."""
        # Services started on demand start now, while the session is built and its turn sent.
        if deps.memory is not None:
            deps.memory.warm()
        if deps.mcp is not None:
            deps.mcp.warm()
        try:
            client = deps.model_for(model or session.model)
        except ConfigError as err:
            if model or not session.model:
                raise with_environment_hint(err, options.client_env is not None) from None
            # The session's model left the config: continue it with the default rather than refuse it.
            try:
                client = deps.model_for("")
            except ConfigError:
                raise with_environment_hint(err, options.client_env is not None) from None
            warnings = [*warnings, f"this session used model `{session.model}`, which is no longer configured "
                                   f"({err}); continuing with `{client.model_name}`"]
        session.model = client.model_name
        crashed = mark_crashed_turn(session.messages, session.open_turn)
        session.open_turn = {}
        self._evicted.pop(session.id, None)
        rt = SessionRuntime(session, store, deps, client, options)
        if crashed:
            rt.save()
            warnings = [*warnings, crashed.strip("[]")]
        await rt.attach_tools()
        await rt.opened()
        self.sessions[session.id] = rt
        await self._evict_idle(keep=session.id)
        env = effective_environment(os.environ, options.client_env) if options.client_env is not None else None
        project = await self.project_mcp.open(deps.mcp, workspace, env)
        return rt, [*warnings, *rt.warnings, *project]

    async def _evict_idle(self, keep: str) -> None:
        await self._evict(self._over_cap(keep))

    def _over_cap(self, keep: str) -> list[SessionRuntime]:
        """The least recently used idle sessions beyond MAX_IDLE_SESSIONS (``keep`` is never one)."""
        idle = [rt for sid, rt in self.sessions.items() if rt.quiet and sid != keep]
        return sorted(idle, key=lambda r: r.session.updated)[: max(len(idle) - MAX_IDLE_SESSIONS, 0)]

    async def evict_stale(self, now: float | None = None) -> int:
        """Drop from memory every session idle (quiet, nobody following) for IDLE_SESSION_SECONDS;
        how many were dropped."""
        cutoff = (time.time() if now is None else now) - IDLE_SESSION_SECONDS
        victims = [rt for rt in self.sessions.values() if rt.quiet and not rt.busy and rt.session.updated < cutoff]
        count = len(victims)
        await self._evict(victims)
        return count

    async def sweep(self, every: float = EVICT_SWEEP_SECONDS) -> None:
        """Run :meth:`evict_stale` every ``every`` seconds (a task of the service), then collect the
        sessions dropped since the last collection."""
        while True:
            await asyncio.sleep(every)
            await self.evict_stale()
            self.reclaim.idle()

    async def _evict(self, victims: list[SessionRuntime]) -> None:
        """Drop ``victims`` from memory. The list is emptied and no frame here keeps a runtime: the
        collection that may follow (reclaim.py) must find them unreachable."""
        # Take every victim out before the first await: an open that overlaps this one must not
        # pick the same sessions again (it did, and its `del` raised KeyError).
        held = sum(self._take_out(rt) for rt in victims)
        ids = [rt.session.id for rt in victims]
        victims.clear()
        while len(self._evicted) > MAX_EVICTED_REMEMBERED:
            del self._evicted[next(iter(self._evicted))]
        for sid in ids:
            await self.deps.tools.close_session(sid)
        if ids:
            self.reclaim.evicted(len(ids), held)

    def _take_out(self, rt: SessionRuntime) -> int:
        """Save ``rt`` for good and forget it (but where it lives); the events its window held."""
        del self.sessions[rt.session.id]
        rt.persist_for_good()
        if rt.store.written(rt.session.id):  # a session never written is forgotten with its runtime
            self._evicted[rt.session.id] = (rt.session.workspace, rt.options)
        rt.store.forget(rt.session.id)
        return rt.events.held

    async def get(self, session_id: str) -> SessionRuntime:
        """An open session; one evicted from memory for being idle is loaded again."""
        rt = self.sessions.get(session_id)
        if rt is None and session_id in self._evicted:
            workspace, options = self._evicted.pop(session_id)
            rt, _ = await self.open(workspace, session_id, "", options)
        if rt is None:
            raise SessionNotFound(f"session {session_id!r} is not open in this loop service",
                                  hint="Call OpenSession with its workspace first.")
        return rt

    async def shutdown(self) -> None:
        """Give running turns their final event and save every session."""
        await asyncio.gather(*(rt.stop("service_stopping") for rt in self.sessions.values()))
