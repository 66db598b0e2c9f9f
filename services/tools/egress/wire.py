"""Pure parsing for the egress proxy: a request head, an absolute-form target, a ClientHello's SNI.

Everything here refuses what it does not understand (a ``WireError`` with a sentence): the proxy
only forwards requests whose meaning it is sure of, because the smuggling tricks live in the
gaps between two parsers (a second Host header, a Transfer-Encoding next to a Content-Length).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

MAX_HEAD_BYTES = 16_384
TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                         "te", "trailer", "upgrade"})


class WireError(Exception):
    """A request the proxy refuses to interpret (answered 400)."""


@dataclass
class Head:
    """A parsed request head."""

    method: str
    target: str
    version: str
    headers: list[tuple[str, str]] = field(default_factory=list)

    def values(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name]


@dataclass(frozen=True)
class Destination:
    """Where a request goes: host (lower case), port, and for plain HTTP the origin-form path."""

    host: str
    port: int
    path: str = ""


def parse_head(raw: bytes) -> Head:
    """The request line and headers of ``raw`` (ending in CRLFCRLF)."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise WireError("the request head is not ASCII") from None
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise WireError(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    method, target, version = parts
    if not method or not set(method) <= TOKEN_CHARS:
        raise WireError("bad request method")
    head = Head(method.upper(), target, version)
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t":
            raise WireError("folded header lines are refused")
        name, sep, value = line.partition(":")
        if not sep or not name or not set(name) <= TOKEN_CHARS:
            raise WireError(f"bad header line {line[:60]!r}")
        if "\r" in value or "\n" in value or "\0" in value:
            raise WireError("control characters in a header")
        head.headers.append((name, value.strip()))
    return head


def _host_port(authority: str, default_port: int | None) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    if not port_text:
        if default_port is None:
            raise WireError(f"CONNECT needs host:port, not {authority[:80]!r}")
        return host.lower().rstrip("."), default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise WireError(f"bad port in {authority[:80]!r}")
    host = host.lower().rstrip(".")
    if not host or any(c in host for c in "/@ \\"):
        raise WireError(f"bad host in {authority[:80]!r}")
    return host, int(port_text)


def destination(head: Head) -> Destination:
    """Where ``head`` asks to go; refuses a second Host header, a Host that disagrees with the
    target, a request body framing the proxy would have to guess, and https:// without CONNECT."""
    hosts = head.values("host")
    if len(hosts) > 1:
        raise WireError("the request has more than one Host header")
    if head.method == "CONNECT":
        host, port = _host_port(head.target, None)
        return Destination(host, port)
    parts = urllib.parse.urlsplit(head.target)
    if parts.scheme == "https":
        raise WireError("https:// URLs go through CONNECT, not a plain proxy request")
    if parts.scheme != "http" or not parts.netloc:
        raise WireError("a proxy request needs an absolute http:// URL (is HTTP_PROXY set to this proxy?)")
    if "@" in parts.netloc:
        raise WireError("credentials in the URL are refused")
    host, port = _host_port(parts.netloc, 80)
    if hosts:
        h_host, h_port = _host_port(hosts[0], 80)
        if (h_host, h_port) != (host, port):
            raise WireError(f"the Host header ({hosts[0][:60]}) does not name the URL's host")
    if head.values("transfer-encoding"):
        raise WireError("request bodies with Transfer-Encoding are not forwarded (send a Content-Length)")
    lengths = head.values("content-length")
    if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
        raise WireError("a bad or repeated Content-Length")
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return Destination(host, port, path)


def content_length(head: Head) -> int:
    lengths = head.values("content-length")
    return int(lengths[0]) if lengths else 0


def inner_destination(head: Head, tunnel: Destination) -> Destination:
    """Where a request read inside a terminated CONNECT tunnel goes: origin-form only, with one
    Host header naming the tunnel's host (a request for another host inside it is refused)."""
    hosts = head.values("host")
    if head.method == "CONNECT" or not head.target.startswith("/"):
        raise WireError("inside a CONNECT tunnel only origin-form requests (GET /path) are forwarded")
    if len(hosts) != 1:
        raise WireError("a request inside a tunnel needs exactly one Host header")
    if _host_port(hosts[0], tunnel.port) != (tunnel.host, tunnel.port):
        raise WireError(f"the Host header ({hosts[0][:60]}) is not the tunnel's host ({tunnel.host})")
    if head.values("transfer-encoding"):
        raise WireError("request bodies with Transfer-Encoding are not forwarded (send a Content-Length)")
    lengths = head.values("content-length")
    if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
        raise WireError("a bad or repeated Content-Length")
    return Destination(tunnel.host, tunnel.port, head.target)


def outgoing_head(head: Head, dest: Destination, inject: dict[str, str], default_port: int = 80) -> bytes:
    """The origin-form request sent upstream: hop headers dropped, one Host, the injected
    headers replacing any the command sent under the same names, ``Connection: close``."""
    replaced = {name.lower() for name in inject}
    host = dest.host if dest.port == default_port else f"{dest.host}:{dest.port}"
    lines = [f"{head.method} {dest.path} HTTP/1.1", f"Host: {host}"]
    for name, value in head.headers:
        low = name.lower()
        if low in HOP_HEADERS or low == "host" or low in replaced:
            continue
        lines.append(f"{name}: {value}")
    lines += [f"{name}: {value}" for name, value in inject.items()]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def tls_record_length(header: bytes) -> int | None:
    """The length of the TLS handshake record whose 5-byte header is ``header``, or None when it
    is not a TLS handshake (CONNECT carries one TLS connection, nothing else)."""
    if len(header) != 5 or header[0] != 0x16 or header[1] != 0x03:
        return None
    return int.from_bytes(header[3:5], "big")


def client_hello_sni(record: bytes) -> str | None:
    """The server name of a ClientHello handshake message (``record`` without its 5-byte header);
    None when it sends none. WireError when it is not a well-formed ClientHello."""
    try:
        if record[0] != 0x01:
            raise WireError("the first TLS message is not a ClientHello")
        pos = 4 + 2 + 32  # handshake header, version, random
        pos += 1 + record[pos]  # session id
        pos += 2 + int.from_bytes(record[pos:pos + 2], "big")  # cipher suites
        pos += 1 + record[pos]  # compression methods
        if pos >= len(record):
            return None
        end = pos + 2 + int.from_bytes(record[pos:pos + 2], "big")
        pos += 2
        while pos + 4 <= end:
            kind = int.from_bytes(record[pos:pos + 2], "big")
            size = int.from_bytes(record[pos + 2:pos + 4], "big")
            body = record[pos + 4:pos + 4 + size]
            if kind == 0:  # server_name: list length, type 0, name length, name
                name_len = int.from_bytes(body[3:5], "big")
                return body[5:5 + name_len].decode("ascii").lower().rstrip(".")
            pos += 4 + size
        return None
    except (IndexError, UnicodeDecodeError):
        raise WireError("a malformed ClientHello") from None
