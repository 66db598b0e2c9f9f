"""HTTPS credential injection: a CONNECT to a host with a credential rule is terminated here.

The proxy answers the tunnel with TLS itself, presenting a leaf certificate for that host signed
by the per-installation CA (:mod:`services.tools.egress.ca`), which only sandboxed commands trust.
It reads ONE origin-form request (its Host must be the tunnel's host), adds the rule's headers
(replacing any the command sent), and sends it over a new TLS connection to the checked address,
verifying the host's real certificate (system CAs, or the rule's ``ca_file``). The answer is
relayed back; the tunnel then closes (``Connection: close``: clients open the next one).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Protocol

from services.tools.egress.ca import Authority
from services.tools.egress.rules import EgressRules
from services.tools.egress.wire import (
    Destination,
    content_length,
    inner_destination,
    outgoing_head,
    parse_head,
)


class _Proxy(Protocol):
    @property
    def authority(self) -> Authority | None: ...
    @property
    def rules(self) -> EgressRules: ...
    @property
    def limits(self) -> Any: ...


class TunnelGate(Protocol):
    """What of a gate (services/tools/egress/proxy.py) a terminated tunnel uses."""

    @property
    def proxy(self) -> _Proxy: ...

    async def connect(self, dest: Destination, tls: ssl.SSLContext | None = None
                      ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]: ...

    async def forward_body(self, reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter, length: int,
                           record: Any) -> None: ...

    async def pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: Any, way: str) -> None: ...


async def intercept(gate: TunnelGate, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    tunnel: Destination, record: Any) -> asyncio.StreamWriter:
    """Serve one request of a credential host's tunnel; the upstream writer (for closing)."""
    authority = gate.proxy.authority
    assert authority is not None
    limits = gate.proxy.limits
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    await asyncio.wait_for(writer.start_tls(authority.server_context(tunnel.host)), limits.head_seconds)
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), limits.head_seconds)
    head = parse_head(raw)
    dest = inner_destination(head, tunnel)
    record.method = f"CONNECT {head.method}"
    cred = gate.proxy.rules.credential(tunnel.host, tunnel.port)
    context = ssl.create_default_context(cafile=cred.ca_file or None) if cred else ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    up_reader, up_writer = await gate.connect(dest, context)
    out = outgoing_head(head, dest, dict(cred.headers) if cred else {}, default_port=443)
    up_writer.write(out)
    record.bytes_up += len(out)
    record.reason = "credential headers added (TLS terminated by the proxy's per-installation CA)"
    await gate.forward_body(reader, up_writer, content_length(head), record)
    await gate.pump(up_reader, writer, record, "down")
    return up_writer
