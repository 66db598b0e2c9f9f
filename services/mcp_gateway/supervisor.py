"""One owner task per server: connect, park, reconnect with backoff, close.

The SDK's session must be entered and left in the same task (anyio cancel
scopes), so each server has exactly one owner task that holds the session;
calls borrow it from other tasks. The owner parks while connected (it does not
read the stream), so a dead server is noticed when a call fails with a
transport error: that call marks the server reconnecting and wakes the owner.
An ordinary tool error does not restart anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from services.mcp_gateway.catalog import ToolEntry
from services.mcp_gateway.domain import (
    CallOutcome,
    McpSession,
    ProgressSink,
    ServerView,
    SessionOpener,
    State,
)
from services.mcp_gateway.errors import NeedsAuth, TransportFailure
from services.mcp_gateway.notices import kept_lines
from services.mcp_gateway.policy import backoff_delay, call_deadline_source, call_timeout_s, deadline_key
from services.mcp_gateway.settings import ServerSettings

log = logging.getLogger("ai_coding.mcp_gateway.supervisor")

CLOSE_BOUND_S = 8.0
SESSION_CLOSE_BOUND_S = {"local": 8.0, "remote": 2.0}
"""Leaving a dropped session: a local one gets the SDK's shielded stdio shutdown (up to ~7 s: stdin
close, SIGTERM, SIGKILL), a remote one its DELETE; past this the exit is cancelled, which ends any
request still open (a remote call the server stalled kept it waiting for the SDK's 300 s read timeout)."""


class ServerSupervisor:
    """Keeps one server connected for as long as the gateway runs."""

    def __init__(self, settings: ServerSettings, opener: SessionOpener, limiter: asyncio.Semaphore) -> None:
        self.settings = settings
        self._opener = opener
        self._limiter = limiter
        self.state = State.DISABLED if settings.disabled else State.CONNECTING
        self.reason = "disabled in config" if settings.disabled else ""
        self.tools: list[ToolEntry] = []
        self.instructions = ""
        """What the server said about using it when it connected (``initialize`` instructions)."""
        self.attempts = 0
        self._failures = 0
        self._retry_at = 0.0
        self.degraded_reason = ""
        self.waiting_on: Callable[[], str] = lambda: ""
        """The OAuth endpoint the connect waits for now ("" when none; the opener sets it)."""
        self.log = kept_lines()
        """What the server logged this gateway run, across reconnects (its opener fills it)."""
        self._session: McpSession | None = None
        self._in_flight = 0
        self._abandoned = False
        """A call on this (remote) session ran past its deadline: its HTTP request may still be open."""
        self._wake = asyncio.Event()
        self._drop = asyncio.Event()
        self._changed = asyncio.Condition()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.auth_required = False
        """Set by the OAuth hooks when the server answered 401 and no login is running."""
        self.login_pending = False
        """True while a user login runs: the next attempt may open a browser flow."""
        self._hold_for_auth = False
        self._parked = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the owner task; returns at once (the state is CONNECTING until the first attempt settles)."""
        if self._task is None and not self.settings.disabled:
            self._task = asyncio.create_task(self._own(), name=f"mcp-owner-{self.settings.name}")

    async def aclose(self, grace: float = 0.5) -> None:
        """Close the session and stop the owner (its child process exits with it). Idempotent."""
        self._closing = True
        self._drop.set()
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            task.cancel()
            # The SDK's stdio shutdown is shielded and bounded (~7 s: stdin close, SIGTERM,
            # SIGKILL); never wait without a bound, and never swallow our caller's cancel.
            done, _ = await asyncio.wait({task}, timeout=CLOSE_BOUND_S)
        if not done:
            log.warning("owner of mcp server %s did not stop within %gs", self.settings.name, CLOSE_BOUND_S)
            return
        if not task.cancelled() and task.exception() is not None:
            log.warning("owner of mcp server %s ended with %r", self.settings.name, task.exception())

    def reconnect_now(self) -> None:
        """Drop the current session (if any) and try again without waiting for the backoff."""
        if self.settings.disabled:
            return
        self._failures = 0
        self._drop.set()
        self._wake.set()

    def begin_login(self) -> None:
        """Let the next attempt run the interactive OAuth flow, starting now."""
        self.login_pending = True
        self.reconnect_now()

    def logout(self) -> None:
        """Forget the session and wait for a new login (no timed retries)."""
        self._hold_for_auth = True
        self.login_pending = False
        self._drop.set()
        self._wake.set()

    def _waiting_on(self) -> str:
        url = self.waiting_on()
        return f" while waiting for the OAuth endpoint {url}" if url else ""

    def _sign_in_reason(self) -> str:
        return f"sign in required: run `ai-coding mcp login {self.settings.name}`"

    def view(self, log_lines: int = 0) -> ServerView:
        """A snapshot for ListServers, with the newest ``log_lines`` kept log lines."""
        retry = max(0.0, self._retry_at - time.monotonic()) if self.state in (State.FAILED,) else 0.0
        return ServerView(
            name=self.settings.name,
            type=self.settings.type,
            state=self.state,
            reason=self.reason,
            tool_count=len(self.tools),
            attempts=self.attempts,
            next_retry_in_s=round(retry, 3),
            auto_approve=self.settings.auto_approve,
            degraded=bool(self.degraded_reason),
            degraded_reason=self.degraded_reason,
            log=tuple(self.log)[-log_lines:] if log_lines > 0 else (),
        )

    async def wait_settled(self, timeout: float) -> State:
        """Wait until the state is not CONNECTING/RECONNECTING (or the timeout passes)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self.state not in (State.CONNECTING, State.RECONNECTING))
        return self.state

    async def wait_connected(self, timeout: float) -> bool:
        """Wait until CONNECTED; False on timeout."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self.state == State.CONNECTED)
        return self.state == State.CONNECTED

    # ---------------------------------------------------------------- owner

    async def _set(self, state: State, reason: str = "") -> None:
        self.state = state
        self.reason = reason
        if state in (State.FAILED, State.NEEDS_AUTH) and not self.degraded_reason:
            self.degraded_reason = f"server '{self.settings.name}': {reason}"
        async with self._changed:
            self._changed.notify_all()

    async def _own(self) -> None:
        while not self._closing:
            if self._hold_for_auth and not self.login_pending:
                if self.state != State.NEEDS_AUTH:
                    await self._set(State.NEEDS_AUTH, self._sign_in_reason())
                await self._wake.wait()
                self._wake.clear()
                continue
            self._drop.clear()
            self._wake.clear()
            self.auth_required = False
            self.attempts += 1
            login_attempt = self.login_pending
            try:
                await self._connect_and_park()
            except Exception as exc:
                await self._after_failure(exc, login_attempt)
                continue
            if not self._closing and not self._hold_for_auth:
                # The session was dropped (transport failure or a retry request): reconnect now.
                await self._set(State.RECONNECTING, self.reason or "reconnecting")

    async def _connect_and_park(self) -> None:
        timeouts = self.settings.timeout
        startup = timeouts.startup / 1000.0
        if self.login_pending:
            startup += 600.0  # a person is signing in
        # One cancel scope spans the whole session so the SDK's own scopes nest inside it;
        # its deadline is lifted once the server is ready (a fail_after around the enter
        # alone would exit before the session's task group does).
        phase = "startup"
        self._parked = False
        # A sign-in waits on a person, not on a cold start: it does not take one of the slots.
        holding = not self.login_pending
        if holding:
            await self._limiter.acquire()
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + startup) as scope:
                async with self._opener(self.settings) as session:
                    phase = "catalog"
                    scope.deadline = anyio.current_time() + timeouts.catalog / 1000.0
                    tools = await session.list_tools()
                    scope.deadline = math.inf
                    if holding:
                        self._limiter.release()
                        holding = False
                    await self._park(session, tools)
                    # Leaving the session is bounded too: a request the server stalled (a call that
                    # ran past its deadline) would otherwise hold the SDK's exit until its read timeout.
                    phase = "closing"
                    scope.deadline = anyio.current_time() + SESSION_CLOSE_BOUND_S.get(self.settings.type, 8.0)
        except Exception:
            if not self._parked:
                raise
            # Leaving a dropped session can raise (the server died under it): that is the
            # drop already being handled, so reconnect at once instead of backing off.
            log.info("closing the old session of %s raised; reconnecting", self.settings.name, exc_info=True)
            return
        finally:
            if holding:
                self._limiter.release()
        if scope.cancelled_caught:
            if phase == "closing":
                log.warning("mcp server %s: leaving its old session took too long; it was cut off",
                            self.settings.name)
                return
            if phase == "startup":
                waiting = self._waiting_on()
                raise TimeoutError(f"did not become ready within {startup:g}s{waiting} "
                                   f"({deadline_key(self.settings.name, 'startup', timeouts.startup)})")
            raise TimeoutError(f"tools/list did not answer within {timeouts.catalog / 1000.0:g}s "
                               f"({deadline_key(self.settings.name, 'catalog', timeouts.catalog)})")

    async def _park(self, session: McpSession, tools: list[ToolEntry]) -> None:
        self._parked = True
        self.tools = self._visible(tools)
        self._session = session
        self._abandoned = False
        self._failures = 0
        self.login_pending = False
        self._hold_for_auth = False
        self.instructions = str(getattr(session, "instructions", "") or "")
        await self._set(State.CONNECTED)
        log.info("mcp server %s connected with %d tools", self.settings.name, len(self.tools))
        try:
            await self._wait_for_drop(session)
        finally:
            self._session = None

    async def _wait_for_drop(self, session: McpSession) -> None:
        """Park until the session is dropped; a ``tools/list_changed`` meanwhile lists the tools again."""
        changed: asyncio.Event | None = getattr(session, "tools_changed", None)
        while changed is not None and not self._drop.is_set():
            waiters = {asyncio.ensure_future(self._drop.wait()), asyncio.ensure_future(changed.wait())}
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if self._drop.is_set():
                return
            changed.clear()
            try:
                with anyio.fail_after(self.settings.timeout.catalog / 1000.0):
                    self.tools = self._visible(await session.list_tools())
            except Exception as exc:  # the old list stays; a broken transport shows on the next call
                log.warning("mcp server %s: listing its changed tools failed: %r", self.settings.name, exc)
                continue
            log.info("mcp server %s now has %d tools", self.settings.name, len(self.tools))
            async with self._changed:
                self._changed.notify_all()
        await self._drop.wait()

    def _visible(self, tools: list[ToolEntry]) -> list[ToolEntry]:
        allowed = self.settings.tools
        return [t for t in tools if t.tool in allowed] if allowed else tools

    async def _after_failure(self, exc: BaseException, login_attempt: bool) -> None:
        self._session = None
        self.tools = []
        from services.mcp_gateway.connection import describe_error  # the SDK is loaded by now

        reason = describe_error(exc)
        if self.auth_required or isinstance(exc, NeedsAuth):
            if login_attempt or not self.login_pending:
                # A login that started while this attempt ran gets its own attempt next.
                self.login_pending = False
                self._hold_for_auth = True
            await self._set(State.NEEDS_AUTH, self._sign_in_reason())
            return
        if self._closing:
            return
        self._failures += 1
        delay = backoff_delay(self._failures)
        self._retry_at = time.monotonic() + delay
        log.warning("mcp server %s failed (%s); retry in %.0fs", self.settings.name, reason, delay)
        await self._set(State.FAILED, reason)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._wake.wait()

    # ---------------------------------------------------------------- calls

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float,
                   on_progress: ProgressSink, user_seconds: Callable[[], float] | None = None) -> CallOutcome:
        """Call one tool, waiting (within the limit) for a connection in progress."""
        if self.settings.tools and tool not in self.settings.tools:
            return CallOutcome(False, f"tool {tool!r} of server {self.settings.name!r} is not enabled",
                               error_code="mcp_tool_not_available", error_message="tool not in the whitelist",
                               hint="Use a tool listed in the MCP catalog.")
        return await self.use(f"MCP tool {self.settings.name}__{tool}",
                              lambda session: session.call_tool(tool, arguments, on_progress), timeout_s,
                              user_seconds)

    async def use(self, what: str, run: Callable[[McpSession], Awaitable[CallOutcome]],
                  timeout_s: float, user_seconds: Callable[[], float] | None = None) -> CallOutcome:
        """Run one request on the open session (tools, resources, prompts), waiting (within the
        limit) for a connection in progress; a broken transport starts a reconnect. The limit
        does not count ``user_seconds()``: time the server's questions waited for the user."""
        limit = call_timeout_s(timeout_s, self.settings.timeout.execution)
        source = call_deadline_source(self.settings.name, timeout_s, self.settings.timeout.execution)
        started = time.monotonic()
        if self.state in (State.CONNECTING, State.RECONNECTING):
            await self.wait_settled(limit)
        session = self._session
        if session is None or self.state != State.CONNECTED:
            return self._not_ready()
        remaining = max(0.001, limit - (time.monotonic() - started))
        asked_before = user_seconds() if user_seconds is not None else 0.0
        self._in_flight += 1
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + remaining) as scope:
                base = scope.deadline
                stretch = asyncio.ensure_future(_stretch(scope, base, user_seconds, asked_before)) \
                    if user_seconds is not None else None
                try:
                    return await run(session)
                finally:
                    if stretch is not None:
                        stretch.cancel()
            self._abandoned = True
            return _timed_out(what, limit, source, started)
        except TimeoutError:
            self._abandoned = True
            return _timed_out(what, limit, source, started)
        except TransportFailure as exc:
            if self.auth_required:
                return await self._needs_auth_again(session, started)
            if self._session is session:
                self.reason = exc.message
                await self._set(State.RECONNECTING, exc.message)
                self._drop.set()
            return CallOutcome(False, f"{exc.message}; the gateway is reconnecting", error_code="mcp_transport_failed",
                               error_message=exc.message, hint="Retry the call in a moment.",
                               duration_ms=(time.monotonic() - started) * 1000)
        finally:
            self._in_flight -= 1
            await self._end_abandoned(session)

    async def _end_abandoned(self, session: McpSession) -> None:
        """Stopping to wait for a remote call does not end its HTTP request: the SDK reads on (up to its
        300 s read timeout) from a server that stalled. Once no other call uses the session, it is
        replaced, which closes its connections; a local server's call ends with the cancel it is sent."""
        if not self._abandoned or self._in_flight or self.settings.type != "remote" or self._session is not session:
            return
        self._abandoned = False
        log.info("mcp server %s: a call ran past its deadline; reconnecting to close its connection",
                 self.settings.name)
        await self._set(State.RECONNECTING, "reconnecting: a call ran past its deadline")
        self._drop.set()

    async def _needs_auth_again(self, session: McpSession, started: float) -> CallOutcome:
        """The server wants a new authorization mid-call (say more scope) and nobody completed it: the
        session is dropped and the server waits for `mcp login` (a reconnect with the old token would
        show it connected while every such call fails)."""
        name = self.settings.name
        self._hold_for_auth = True
        if self._session is session:
            self._drop.set()
        await self._set(State.NEEDS_AUTH, f"sign in again (the server asked for more permissions): "
                                          f"run `ai-coding mcp login {name}`")
        return CallOutcome(False, f"MCP server {name!r} needs a new sign-in for this call (more permissions)",
                           error_code="mcp_needs_auth", error_message="authorization required",
                           hint=f"The user must run `ai-coding mcp login {name}`, then retry.",
                           duration_ms=(time.monotonic() - started) * 1000)

    def _not_ready(self) -> CallOutcome:
        name = self.settings.name
        if self.state == State.NEEDS_AUTH:
            hint = f"The user must run `ai-coding mcp login {name}`."
        elif self.state == State.DISABLED:
            hint = "The server is disabled in the config."
        else:
            hint = "Use another tool; the gateway keeps retrying this server."
        return CallOutcome(False, f"MCP server {name!r} is {self.state.value}: {self.reason or 'not ready'}",
                           error_code="mcp_server_unavailable", error_message=self.reason or self.state.value,
                           hint=hint)


async def _stretch(scope: anyio.CancelScope, base: float, user_seconds: Callable[[], float],
                   before: float) -> None:
    """Move ``scope``'s deadline past the time questions have waited for the user since it started."""
    while True:
        await asyncio.sleep(0.2)
        scope.deadline = base + (user_seconds() - before)


def _timed_out(what: str, limit: float, source: str, started: float) -> CallOutcome:
    return CallOutcome(False, f"{what} did not answer within {limit:g}s ({source})",
                       error_code="tool_timeout", error_message="the call timed out",
                       hint="Retry with a smaller request, or use another tool.", limit_hit="timeout",
                       duration_ms=(time.monotonic() - started) * 1000)
