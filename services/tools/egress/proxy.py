"""The egress proxy: an asyncio HTTP proxy on one Unix socket per command ("gate").

Per connection it reads one request head (bounded in size and time), decides it
(:class:`~services.tools.egress.rules.EgressRules`: deny wins, then allow, else a 403 naming the
line to add, unless the user grants the host: services/tools/egress/grants.py), resolves the name
through the address policy and connects to the checked address.

- ``CONNECT host:port``: the first bytes through the tunnel must be a TLS ClientHello whose
  server name (when it sends one) is the host CONNECT named; anything else (a CONNECT inside
  the CONNECT, plain HTTP, another name) closes the tunnel before anything reaches the host.
  The tunnel then carries bytes untouched, except to a host with a credential rule, whose TLS
  the proxy terminates to add the headers (services/tools/egress/intercept.py).
- ``GET http://host/...`` (any method): forwarded as one origin-form request with the user's
  credential headers added, ``Connection: close``; a second request on the connection is never
  read, so nothing can be smuggled behind the first.

Bounds: connections per command (concurrent and total) and per proxy, bytes per command and per
session, a deadline on the request head (slow clients), an idle deadline on every relay. Every
request leaves an :class:`EgressRecord` on its gate (host, port, bytes, verdict, rule).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import ssl
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from services.kernel.egress_records import EgressRecord, summed
from services.kernel.netgrants import Grant, GrantScope
from services.kernel.netpolicy import NetRefused, Target
from services.kernel.netrules import Decision, allow_line
from services.tools.egress.ca import Authority
from services.tools.egress.grants import Deliver, Grants
from services.tools.egress.intercept import intercept
from services.tools.egress.rules import EgressRules, Ruling
from services.tools.egress.wire import (
    MAX_HEAD_BYTES,
    Destination,
    Head,
    WireError,
    client_hello_sni,
    content_length,
    destination,
    outgoing_head,
    parse_head,
    tls_record_length,
)

log = logging.getLogger("ai_coding.tools.egress")


@dataclass(frozen=True)
class Limits:
    head_seconds: float = 10.0
    connect_seconds: float = 10.0
    idle_seconds: float = 60.0
    resolve_seconds: float = 10.0
    concurrent_per_gate: int = 64
    connections_per_gate: int = 2000
    connections_per_session: int = 20000
    concurrent_total: int = 512
    bytes_per_gate: int = 1 << 30
    bytes_per_session: int = 4 << 30


MAX_REFUSALS_KEPT = 50
"""Unlisted hosts kept per session for ``/network`` (the oldest leave first)."""


@dataclass
class Refusal:
    """An unlisted host a command of the session was refused (``/network`` lists them)."""

    reason: str
    count: int = 0
    background: bool = False


@dataclass
class SessionBudget:
    bytes: int = 0
    connections: int = 0
    refused: dict[tuple[str, int], Refusal] = field(default_factory=dict)

    def refusal(self, host: str, port: int, reason: str, background: bool) -> None:
        entry = self.refused.pop((host, port), None) or Refusal(reason)
        entry.reason, entry.background = reason, background or entry.background
        entry.count += 1
        self.refused[(host, port)] = entry  # the newest last
        while len(self.refused) > MAX_REFUSALS_KEPT:
            del self.refused[next(iter(self.refused))]


def grant_hint(host: str, port: int, session_id: str) -> str:
    """How the user allows ``host:port`` for the session, from the REPL or a shell."""
    target = host if port == 443 else f"{host}:{port}"
    return (f"To allow it for this session: /network allow {target} in the REPL, or "
            f"`ai-coding network allow {target} --session {session_id}`.")


class Refused(Exception):
    def __init__(self, status: int, ruling: Ruling) -> None:
        super().__init__(ruling.reason)
        self.status, self.ruling = status, ruling


def refusal_body(status: int, ruling: Ruling) -> bytes:
    """The HTTP answer a refused request gets (the command prints it; the hint is the fix)."""
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "Error")
    text = f"ai-coding sandbox proxy: {ruling.reason}.\n" + (f"{ruling.hint}\n" if ruling.hint else "")
    body = text.encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nX-AI-Coding-Egress: {ruling.verdict}\r\nConnection: close\r\n\r\n"
            ).encode() + body


class Gate:
    """One command's way out: a Unix socket in a private directory, its records and bounds."""

    def __init__(self, proxy: EgressProxy, budget: SessionBudget, session_id: str = "",
                 deliver: Deliver | None = None, background: bool = False) -> None:
        self.proxy, self.budget, self.session_id = proxy, budget, session_id
        self.deliver = deliver
        """Asks the user about an unlisted host (None: nobody can be asked, it is refused)."""
        self.background = background
        """A background job's gate: it outlives its tool call, so nobody can be asked."""
        self.reported = 0
        """Records already handed out by :meth:`take_report` (a job's, call after call)."""
        self.once: set[tuple[str, int]] = set()
        self.asking: dict[tuple[str, int], asyncio.Future[Grant]] = {}
        self.dir = tempfile.mkdtemp(prefix="ai-coding-egress-")
        self.path = os.path.join(self.dir, "egress.sock")
        self.records: list[EgressRecord] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None
        self.total = 0
        self.bytes = 0
        self.dropped = 0

    async def start(self) -> None:
        self.server = await asyncio.start_unix_server(self._accept, self.path, limit=MAX_HEAD_BYTES + 1024)
        os.chmod(self.path, 0o600)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limits = self.proxy.limits
        if (len(self.tasks) >= limits.concurrent_per_gate or self.total >= limits.connections_per_gate
                or self.budget.connections >= limits.connections_per_session
                or self.proxy.active >= limits.concurrent_total):
            writer.close()  # over a bound: dropped at once, nothing read (counted, not recorded one by one)
            self.dropped += 1
            return
        self.total += 1
        self.budget.connections += 1
        self.proxy.active += 1
        handler = asyncio.ensure_future(self._serve(reader, writer))
        self.tasks.add(handler)

        def done(t: asyncio.Task[None]) -> None:
            self.tasks.discard(t)
            self.proxy.active -= 1

        handler.add_done_callback(done)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record = EgressRecord("", 0, "", Decision.REFUSED, started=time.time())
        began = time.monotonic()
        upstream: asyncio.StreamWriter | None = None
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.proxy.limits.head_seconds)
            head = parse_head(raw)
            record.method = head.method
            dest = destination(head)
            record.host, record.port = dest.host, dest.port
            ruling, target = await self._admit(dest, head.method, record)
            record.rule, record.verdict = ruling.rule, Decision.ALLOW
            if head.method == "CONNECT":
                upstream = await self._tunnel(reader, writer, dest, record, target)
            else:
                upstream = await self._forward(reader, writer, head, dest, record, target)
        except Refused as exc:
            verdict = exc.ruling.verdict
            record.verdict = Decision.DENY if verdict is Decision.UNLISTED else verdict
            record.reason = exc.ruling.reason
            with contextlib.suppress(OSError):
                writer.write(refusal_body(exc.status, exc.ruling))
                await asyncio.wait_for(writer.drain(), 5)
        except WireError as exc:
            record.verdict, record.reason = Decision.REFUSED, str(exc)
            with contextlib.suppress(OSError):
                writer.write(refusal_body(400, Ruling(Decision.REFUSED, "", str(exc))))
                await asyncio.wait_for(writer.drain(), 5)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError,
                ValueError) as exc:
            if not record.reason:
                record.reason = f"{type(exc).__name__} {exc}".strip() if record.host else \
                    "no complete request in time"
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
            record.duration_ms = (time.monotonic() - began) * 1000.0
            self.records.append(record)

    async def _admit(self, dest: Destination, method: str, record: EgressRecord) -> tuple[Ruling, Target | None]:
        """The ruling that lets ``dest`` through, or Refused. Deny wins; an unlisted host goes through
        only on the user's grant, asked after the address policy accepted its address (so no grant
        ever opens a denied host, a private address or the metadata service); the checked address is
        then the one connected to."""
        ruling = self.proxy.rules.decide(dest.host, dest.port)
        if ruling.verdict is Decision.ALLOW:
            return ruling, None
        if ruling.verdict is not Decision.UNLISTED:
            raise Refused(403, ruling)
        key, grants = (dest.host, dest.port), self.proxy.grants
        if key in self.once or grants.granted(self.session_id, *key):
            record.granted = GrantScope.ONCE if key in self.once else GrantScope.SESSION
            return Ruling(Decision.ALLOW, "", f"granted by the user ({record.granted})"), None
        if self.deliver is None:
            why = ("a background job cannot ask you" if self.background
                   else "nobody can be asked to allow it here: a run without a terminal")
            reason = f"{ruling.reason} ({why})"
            self.budget.refusal(dest.host, dest.port, reason, self.background)
            hint = "\n".join(h for h in (grant_hint(dest.host, dest.port, self.session_id), ruling.hint) if h)
            raise Refused(403, Ruling(Decision.UNLISTED, "", reason, hint))
        target = await self.resolve(dest)
        grant = await self._asked(dest, method, ruling)
        if grant.scope is GrantScope.DENY:
            raise Refused(403, Ruling(Decision.UNLISTED, "", f"{ruling.reason} ({grant.reason or 'not granted'})",
                                      ruling.hint))
        record.granted = grant.scope
        return Ruling(Decision.ALLOW, "", f"granted by the user ({grant.scope})"), target

    async def _asked(self, dest: Destination, method: str, ruling: Ruling) -> Grant:
        """The user's answer for ``dest``: one ask per host:port of the command, however many
        connections wait on it."""
        assert self.deliver is not None
        key = (dest.host, dest.port)
        waiting = self.asking.get(key)
        if waiting is None:
            waiting = asyncio.ensure_future(self.proxy.grants.ask(
                self.session_id, self.deliver, dest.host, dest.port, method, ruling.reason,
                allow_line(dest.host, dest.port)))
            self.asking[key] = waiting
        grant = await asyncio.shield(waiting)
        if grant.scope is GrantScope.ONCE:
            self.once.add(key)
        elif grant.scope is GrantScope.SESSION:
            self.proxy.grants.remember(self.session_id, *key)
        return grant

    async def resolve(self, dest: Destination) -> Target:
        """The address the policy accepts for ``dest`` (Refused when it accepts none)."""
        rules, limits = self.proxy.rules, self.proxy.limits
        try:
            return await asyncio.wait_for(asyncio.to_thread(rules.policy.resolve, dest.host, dest.port,
                                                            rules.literals()), limits.resolve_seconds)
        except NetRefused as exc:
            raise Refused(403, Ruling(Decision.REFUSED, "", str(exc))) from None
        except TimeoutError:
            raise Refused(502, Ruling(Decision.REFUSED, "", f"resolving {dest.host} took too long")) from None

    async def connect(self, dest: Destination, tls: ssl.SSLContext | None = None, target: Target | None = None
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to ``dest`` at the checked address (``target``, or resolved now)."""
        limits = self.proxy.limits
        if target is None:
            target = await self.resolve(dest)
        try:
            return await asyncio.wait_for(asyncio.open_connection(
                target.address, target.port, ssl=tls, server_hostname=dest.host if tls else None),
                limits.connect_seconds)
        except ssl.SSLCertVerificationError as exc:
            raise Refused(502, Ruling(Decision.ALLOW, "", f"{dest.host}'s certificate is not trusted "
                                                           f"({exc.verify_message})")) from None
        except (OSError, TimeoutError) as exc:
            raise Refused(502, Ruling(Decision.ALLOW, "", f"cannot connect to {dest.host}:{dest.port}: "
                                                           f"{exc or type(exc).__name__}")) from None

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dest: Destination,
                      record: EgressRecord, target: Target | None) -> asyncio.StreamWriter:
        if self.proxy.rules.has_credential(dest.host, dest.port):
            if self.proxy.authority is not None:
                return await intercept(self, reader, writer, dest, record)
            record.reason = "credential rule not applied: HTTPS is tunnelled untouched (no TLS interception)"
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        limits = self.proxy.limits
        header = await asyncio.wait_for(reader.readexactly(5), limits.head_seconds)
        length = tls_record_length(header)
        if length is None:
            raise WireError(f"the CONNECT tunnel to {dest.host} does not start with TLS (a tunnel carries one "
                            "TLS connection to the host it names)")
        hello = await asyncio.wait_for(reader.readexactly(length), limits.head_seconds)
        sni = client_hello_sni(hello)
        if sni is not None and sni != dest.host:
            raise WireError(f"the TLS server name {sni} is not the host CONNECT named ({dest.host})")
        up_reader, up_writer = await self.connect(dest, target=target)
        up_writer.write(header + hello)
        record.bytes_up += len(header) + len(hello)
        await self._relay(reader, writer, up_reader, up_writer, record)
        return up_writer

    async def forward_body(self, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, length: int,
                           record: EgressRecord) -> None:
        """``length`` bytes of request body from the command to the host."""
        remaining = length
        while remaining > 0:
            chunk = await asyncio.wait_for(reader.read(min(65536, remaining)), self.proxy.limits.idle_seconds)
            if not chunk:
                break
            remaining -= len(chunk)
            self._count(record, up=len(chunk))
            up_writer.write(chunk)
            await up_writer.drain()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: Head,
                       dest: Destination, record: EgressRecord, target: Target | None) -> asyncio.StreamWriter:
        length = content_length(head)
        up_reader, up_writer = await self.connect(dest, target=target)
        out = outgoing_head(head, dest, self.proxy.rules.inject(dest.host, dest.port))
        up_writer.write(out)
        record.bytes_up += len(out)
        await self.forward_body(reader, up_writer, length, record)
        await self.pump(up_reader, writer, record, "down")  # the answer, until the host closes
        return up_writer

    def _count(self, record: EgressRecord, *, up: int = 0, down: int = 0) -> None:
        record.bytes_up += up
        record.bytes_down += down
        self.bytes += up + down
        self.budget.bytes += up + down
        limits = self.proxy.limits
        if self.bytes > limits.bytes_per_gate or self.budget.bytes > limits.bytes_per_session:
            record.reason = "byte limit reached"
            raise OSError("the egress byte limit was reached")

    async def pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: EgressRecord,
                    way: str) -> None:
        idle = self.proxy.limits.idle_seconds
        try:
            while True:
                chunk = await asyncio.wait_for(src.read(65536), idle)
                if not chunk:
                    break
                self._count(record, **{way: len(chunk)})
                dst.write(chunk)
                await dst.drain()
        finally:
            if dst.can_write_eof():
                with contextlib.suppress(OSError):
                    dst.write_eof()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, record: EgressRecord) -> None:
        ups = asyncio.ensure_future(self.pump(reader, up_writer, record, "up"))
        downs = asyncio.ensure_future(self.pump(up_reader, writer, record, "down"))
        try:  # until both directions ended, or one failed (idle, byte limit, reset)
            await asyncio.wait({ups, downs}, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for t in (ups, downs):
                t.cancel()
            await asyncio.gather(ups, downs, return_exceptions=True)

    async def close(self) -> None:
        """Stop accepting, end every open connection, remove the socket."""
        if self.server is not None:
            self.server.close()
        waiting: list[asyncio.Future[Any]] = [*self.tasks, *self.asking.values()]
        for task in waiting:
            task.cancel()
        if waiting:
            await asyncio.gather(*waiting, return_exceptions=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def report(self) -> list[dict[str, Any]]:
        records = [asdict(r) for r in summed(self.records)]
        if self.dropped:
            records.append(asdict(EgressRecord("", 0, "", Decision.REFUSED, count=self.dropped, started=time.time(),
                                               reason=f"{self.dropped} connections over the connection limits")))
        return records

    def take_report(self) -> tuple[list[dict[str, Any]], str]:
        """(records, note) of the requests since the last call: a background job's, told with each
        of its job_output / job_stop results so they reach that call's trace."""
        fresh, self.reported = self.records[self.reported:], len(self.records)
        records = [asdict(r) for r in summed(fresh)]
        return records, self.note(fresh)

    def note(self, records: list[EgressRecord] | None = None) -> str:
        """What the model should know: each refused host once, with its fix."""
        records = self.records if records is None else records
        seen: dict[str, str] = {}
        for r in records:
            if r.verdict != Decision.ALLOW and r.host and r.host not in seen:
                seen[r.host] = r.reason
        if not seen:
            return ""
        lines = [f"[sandbox network] refused {host}: {why}" for host, why in seen.items()]
        hints = {self.proxy.rules.decide(r.host, r.port).hint for r in records
                 if r.verdict == Decision.DENY and r.host}
        if self.deliver is None:
            hints |= {grant_hint(r.host, r.port, self.session_id) + " Ask the user to." for r in records
                      if r.verdict == Decision.DENY and r.host
                      and self.proxy.rules.decide(r.host, r.port).verdict is Decision.UNLISTED}
        return "\n" + "\n".join(lines + sorted(h for h in hints if h))


@dataclass
class EgressProxy:
    """The service's proxy: the rules, the limits, the per-session byte budgets."""

    rules: EgressRules
    limits: Limits = field(default_factory=Limits)
    authority: Authority | None = None
    """The per-installation CA (only when a credential rule exists): HTTPS to a credential host
    is terminated here so the headers can be added (services/tools/egress/intercept.py)."""
    active: int = 0
    budgets: dict[str, SessionBudget] = field(default_factory=dict)
    grants: Grants = field(default_factory=Grants)

    async def open_gate(self, session_id: str, deliver: Deliver | None = None, background: bool = False) -> Gate:
        """A command's gate; ``deliver`` asks the user about unlisted hosts (None: they are refused)."""
        gate = Gate(self, self.budgets.setdefault(session_id, SessionBudget()), session_id, deliver, background)
        await gate.start()
        return gate

    def forget(self, session_id: str) -> None:
        self.budgets.pop(session_id, None)
        self.grants.forget(session_id)
