"""The user's answers for hosts the allow-list does not name: "allow once", "for this session", deny.

"For this session" grants are kept per session in the service's state dir (``egress-grants/``,
one JSON file a session, written only here, from a user's answer or the user's ``/network allow``),
so a restarted tools service keeps them until the session closes; a project's config never
reaches them. Files of sessions that never closed (a loop that died) go after ``STORE_MAX_AGE_S``.

A command's connection to an unlisted host (no deny rule, an address the policy accepts) is held
while the caller of its tool call (the loop) asks the user; the caller answers with the
``GrantEgress`` RPC. "Once" opens that host:port for the rest of that command; "session" for every
command of the session until it closes. Nobody to ask (no caller that answers, a headless run, no
answer in time) is a refusal. A grant never reaches past the deny list or the address policy: the
proxy checks both before it asks, and a grant only ever stands for an unlisted name.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from services.kernel.ids import new_id
from services.kernel.netgrants import EgressAsk, Grant, GrantScope

log = logging.getLogger("ai_coding.tools.egress")

# The longest a held connection waits for the user's answer (the command's own timeout also ends it).
ANSWER_WAIT_S = 300.0


Deliver = Callable[[EgressAsk], Awaitable[None]]
"""Puts an ask on the tool call's stream (the servicer's; None when the caller answers no asks)."""
ASK_USER: ContextVar[Deliver | None] = ContextVar("ai_coding_egress_ask_user", default=None)
"""How the tool call running in this context asks about an unlisted host (set per call by the servicer)."""


STORE_MAX_AGE_S = 30 * 86400.0
_SAFE = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass
class Grants:
    """The service's pending asks and each session's granted hosts."""

    wait_seconds: float = ANSWER_WAIT_S
    session: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    pending: dict[str, tuple[str, asyncio.Future[Grant]]] = field(default_factory=dict)
    store: Path | None = None
    """Where each session's grants are kept (None: in memory only; :meth:`keep_in` sets it)."""

    def keep_in(self, store: Path) -> None:
        """Keep grants in ``store``, dropping files no session touched for ``STORE_MAX_AGE_S``."""
        self.store = store
        cutoff = time.time() - STORE_MAX_AGE_S
        with contextlib.suppress(OSError):
            for old in store.glob("*.json"):
                with contextlib.suppress(OSError):
                    if old.stat().st_mtime < cutoff:
                        old.unlink()

    def granted(self, session_id: str, host: str, port: int) -> bool:
        return (host, port) in self.of(session_id)

    def of(self, session_id: str) -> set[tuple[str, int]]:
        """The session's grants (read from the store the first time)."""
        if session_id not in self.session:
            self.session[session_id] = self._load(session_id)
        return self.session[session_id]

    def _file(self, session_id: str) -> Path | None:
        if self.store is None:
            return None
        name = session_id if _SAFE.fullmatch(session_id) else hashlib.sha256(session_id.encode()).hexdigest()
        return self.store / f"{name}.json"

    def _load(self, session_id: str) -> set[tuple[str, int]]:
        path = self._file(session_id)
        if path is None or not path.is_file():
            return set()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return {(str(h), int(p)) for h, p in data["grants"]} if data.get("session_id") == session_id else set()
        except (OSError, ValueError, KeyError, TypeError) as exc:  # unreadable: no grant, said once
            log.warning("the network grants of session %s in %s are unreadable (%s); none apply", session_id,
                        path, exc)
            return set()

    def _save(self, session_id: str) -> None:
        path = self._file(session_id)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            temp = path.with_suffix(f".{os.getpid()}.tmp")
            temp.write_text(json.dumps({"session_id": session_id, "granted_by": "user",
                                        "grants": sorted(self.of(session_id))}), encoding="utf-8")
            os.chmod(temp, 0o600)
            temp.replace(path)
        except OSError as exc:  # kept in memory; lost with a restart, and the log says so
            log.warning("the network grants of session %s were not saved to %s: %s", session_id, path, exc)

    async def ask(self, session_id: str, deliver: Deliver, host: str, port: int, method: str, reason: str,
                  allow_line: str) -> Grant:
        """Deliver one ask and wait for its answer (a refusal when none comes in time)."""
        ask = EgressAsk(f"egress-{new_id()}", host, port, method, reason, allow_line)
        future: asyncio.Future[Grant] = asyncio.get_running_loop().create_future()
        self.pending[ask.ask_id] = (session_id, future)
        try:
            await deliver(ask)
            return await asyncio.wait_for(future, self.wait_seconds)
        except TimeoutError:
            return Grant(GrantScope.DENY, f"nobody answered within {self.wait_seconds:g} s")
        finally:
            self.pending.pop(ask.ask_id, None)

    def answer(self, session_id: str, ask_id: str, grant: Grant) -> bool:
        """Settle a pending ask of ``session_id``; False when there is none (answered, timed out, or
        another session's: one session can never answer for another)."""
        entry = self.pending.get(ask_id)
        if entry is None or entry[0] != session_id or entry[1].done():
            return False
        entry[1].set_result(grant)
        return True

    def remember(self, session_id: str, host: str, port: int) -> None:
        """The user allowed ``host:port`` for the session (kept in the store)."""
        self.of(session_id).add((host, port))
        self._save(session_id)

    def revoke(self, session_id: str, host: str, port: int) -> bool:
        """Take a grant back; False when there was none."""
        grants = self.of(session_id)
        if (host, port) not in grants:
            return False
        grants.discard((host, port))
        self._save(session_id)
        return True

    def forget(self, session_id: str) -> None:
        """The session closed: its grants end (the store's file too), its pending asks are refused."""
        self.session.pop(session_id, None)
        path = self._file(session_id)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        for ask_id, (owner, future) in list(self.pending.items()):
            if owner == session_id and not future.done():
                with contextlib.suppress(asyncio.InvalidStateError):
                    future.set_result(Grant(GrantScope.DENY, "the session closed"))
                self.pending.pop(ask_id, None)
