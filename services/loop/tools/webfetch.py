"""``webfetch``: the text of one web page, for the model (a deferred tool, asked for every time).

It runs in the loop, not in the tools service: it touches no workspace file, and the tools
service is the process meant to sit on a host with no network at all (its bash sandbox reaches
the network only through its egress proxy), so a fetch there would either fail or need that hole
opened. The loop already speaks HTTP to the model. What keeps it in bounds:

- the gate (:mod:`services.loop.webgate`) asks before every call; ``--auto-approve`` never
  approves webfetch; only the user's ``net.webfetch_allow_domains`` fetches without asking;
- every hop (the URL and each redirect) goes through the one address policy
  (:mod:`services.kernel.netpolicy`) before anything connects, and the connection goes to the
  address that was checked, never to the name again: loopback, private, link-local (the cloud
  metadata address), multicast and this host's own addresses are refused unless the user pinned
  the name (``net.pinned_hosts``);
- http and https only, no credentials in the URL, at most ``MAX_REDIRECTS`` redirects, each to
  http(s) again; no cookies, no auth headers, no proxy credentials of ours are sent;
- ``MAX_BYTES`` read at most; one wall-clock deadline over the whole fetch (lookups, connects,
  headers, body, redirects: ``TIMEOUT_S`` or the turn's remaining time, whichever is shorter):
  when it passes, the socket is shut down, so the work ends with the wait, and the error names
  that deadline; HTML is reduced to its text;
- no network (DNS fails, connection refused) and a refused certificate are tool errors that say
  which, not a failed turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import html.parser
import http.client
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from services.kernel.netpolicy import AddressPolicy, NetConfig, NetRefused, Target, policy_from_config
from services.kernel.netrules import expand
from services.loop.core.errors import LoopError
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.policy.permissions import Level
from services.loop.tools.args import define, doc

MAX_BYTES = 200_000
"""Bytes read from the response body; the rest is not downloaded."""
MAX_TEXT_CHARS = 40_000
"""Characters of text handed to the model (it pays for them on every later step)."""
TIMEOUT_S = 20.0
"""The whole fetch's wall-clock deadline (every hop, header and byte included)."""
MAX_REDIRECTS = 5
MAX_HEADER_BYTES = 64_000
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})

@dataclass(frozen=True)
class WebfetchArgs:
    url: str = doc("http:// or https:// URL")


class FetchError(LoopError):
    """A fetch that did not give text: ``code`` is the stable reason the model sees."""

    reason = "fetch_failed"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Page:
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool


def check_url(url: str) -> str:
    """The URL to fetch, or ValueError saying what the model must fix."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"webfetch takes an http:// or https:// URL with a host, not {url!r:.80}")
    if parts.username or parts.password:
        raise ValueError("webfetch does not send credentials; give the URL without user:password@")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"the port of {url!r:.80} is not a number from 1 to 65535") from None
    return urllib.parse.urlunsplit(parts)


def host_port(url: str) -> tuple[str, int]:
    """The host (lower case) and port a checked URL connects to."""
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)


class _Text(html.parser.HTMLParser):
    """HTML to plain text: script/style dropped, block elements on their own lines."""

    BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section",
                        "article", "header", "footer", "table", "ul", "ol", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript") and self.skip:
            self.skip -= 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@dataclass
class Deadline:
    """One wall-clock deadline over a whole fetch: at ``ends`` the current socket is shut down,
    which ends a blocked read or connect at once (a per-operation timeout alone would let a
    server trickle one byte per second forever)."""

    seconds: float
    name: str
    ends: float = 0.0
    expired: bool = False
    sock: socket.socket | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.ends = time.monotonic() + self.seconds

    def left(self) -> float:
        left = self.ends - time.monotonic()
        if left <= 0:
            self.expired = True
            raise FetchError("timeout", self.message())
        return left

    def watch(self, sock: socket.socket | None) -> None:
        with self.lock:
            self.sock = sock
            if self.expired and sock is not None:
                _shut(sock)

    def fire(self) -> None:
        with self.lock:
            self.expired = True
            if self.sock is not None:
                _shut(self.sock)

    def message(self) -> str:
        return f"the fetch did not finish within {self.name} ({self.seconds:.3g} s) and was stopped"


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Pinned(http.client.HTTPConnection):
    """An HTTP connection to the address the policy checked (the name is only the Host header)."""

    def __init__(self, target: Target, deadline: Deadline) -> None:
        super().__init__(target.host, target.port, timeout=deadline.left())
        self.target, self.deadline = target, deadline

    def connect(self) -> None:
        self.sock = socket.create_connection((self.target.address, self.target.port), self.deadline.left())
        self.deadline.watch(self.sock)


class _PinnedTLS(_Pinned):
    def __init__(self, target: Target, deadline: Deadline, context: ssl.SSLContext) -> None:
        super().__init__(target, deadline)
        self.context = context

    def connect(self) -> None:
        super().connect()
        assert self.sock is not None
        self.sock = self.context.wrap_socket(self.sock, server_hostname=self.target.host)
        self.deadline.watch(self.sock)


def _one_hop(url: str, policy: AddressPolicy, deadline: Deadline, literals: frozenset[str], max_bytes: int,
             context: ssl.SSLContext) -> tuple[int, str, str, bytes] | str:
    """One request: (status, content type, charset, body) or the redirect's target URL."""
    parts = urllib.parse.urlsplit(url)
    host, port = host_port(url)
    try:
        target = policy.resolve(host, port, literals)
    except NetRefused as err:
        raise FetchError("address_refused", f"{url}: {err}") from None
    deadline.left()
    conn = _PinnedTLS(target, deadline, context) if parts.scheme == "https" else _Pinned(target, deadline)
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        conn.request("GET", path, headers={"User-Agent": "ai-coding-webfetch", "Accept": "text/*, */*;q=0.5",
                                           "Accept-Encoding": "identity", "Connection": "close"})
        response = conn.getresponse()
        if response.status in REDIRECT_CODES and response.getheader("Location"):
            return urllib.parse.urljoin(url, response.getheader("Location", ""))
        if response.status >= 400:
            raise FetchError("http_error", f"{url} answered HTTP {response.status} {response.reason}")
        body = bytearray()
        while len(body) <= max_bytes:
            deadline.left()
            chunk = response.read1(min(65536, max_bytes + 1 - len(body)))
            if not chunk:
                break
            body += chunk
        if deadline.expired:  # the watchdog shut the socket: what was read is not the page
            raise FetchError("timeout", deadline.message() + f" after {len(body):,} bytes of the body")
        return response.status, response.headers.get_content_type(), \
            response.headers.get_content_charset() or "utf-8", bytes(body)
    finally:
        deadline.watch(None)
        conn.close()


def fetch(url: str, policy: AddressPolicy, *, max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT_S,
          deadline_name: str = "webfetch's deadline", literals: frozenset[str] = frozenset(),
          context: ssl.SSLContext | None = None) -> Page:
    """Fetch ``url`` (blocking; the handler runs it in a thread) under one wall-clock deadline."""
    deadline = Deadline(timeout, deadline_name)
    timer = threading.Timer(timeout, deadline.fire)
    timer.daemon = True
    timer.start()
    context = context or ssl.create_default_context()
    current = url
    try:
        for _ in range(MAX_REDIRECTS + 1):
            got = _guarded_hop(current, policy, deadline, literals, max_bytes, context)
            if isinstance(got, str):
                try:
                    current = check_url(got)  # a redirect to file:// or ftp:// is refused like a direct one
                except ValueError:
                    raise FetchError("redirect_refused", f"{current} redirects to {got!r:.80}, which webfetch "
                                     "does not follow (http and https only)") from None
                continue
            status, content_type, charset, body = got
            break
        else:
            raise FetchError("redirect_refused", f"{url} redirects more than {MAX_REDIRECTS} times")
    finally:
        timer.cancel()
    if not content_type.startswith(TEXT_TYPES):
        raise FetchError("not_text", f"{current} is {content_type}, not text; webfetch returns text only")
    truncated = len(body) > max_bytes
    try:
        text = body[:max_bytes].decode(charset, errors="replace")
    except LookupError:
        text = body[:max_bytes].decode("utf-8", errors="replace")
    if content_type in ("text/html", "application/xhtml+xml"):
        text = html_to_text(text)
    if len(text) > MAX_TEXT_CHARS:
        text, truncated = text[:MAX_TEXT_CHARS], True
    return Page(current, status, content_type, text, truncated)


def _guarded_hop(url: str, policy: AddressPolicy, deadline: Deadline, literals: frozenset[str], max_bytes: int,
                 context: ssl.SSLContext) -> tuple[int, str, str, bytes] | str:
    """:func:`_one_hop` with its failures named: the deadline, the certificate, the network."""
    host, _ = host_port(url)
    try:
        return _one_hop(url, policy, deadline, literals, max_bytes, context)
    except FetchError:
        raise
    except ssl.SSLCertVerificationError as err:
        raise FetchError("tls_certificate", f"{host}'s certificate is not trusted ({err.verify_message}); "
                         "webfetch verifies certificates and does not read such a page") from None
    except (OSError, http.client.HTTPException) as err:
        if deadline.expired:
            raise FetchError("timeout", deadline.message()) from None
        if isinstance(err, ssl.SSLError):
            raise FetchError("tls_error", f"the TLS handshake with {host} failed: {err.reason or err}") from None
        if isinstance(err, http.client.HTTPException):
            raise FetchError("bad_response", f"{url} did not answer valid HTTP ({type(err).__name__})") from None
        raise FetchError("network_unavailable", f"cannot reach {url}: {err.strerror or err}") from None


@dataclass
class WebFetcher:
    """webfetch for one session: the user's ``net`` settings (pins, allow-list) bound in."""

    net: NetConfig
    environ: Mapping[str, str] | None = None

    async def handle(self, ctx: ToolContext, call: ToolCall, args: WebfetchArgs) -> ToolOutcome:
        url = check_url(args.url)
        remaining = ctx.remaining()
        timeout, name = (TIMEOUT_S, "webfetch's deadline") if remaining >= TIMEOUT_S else \
            (max(remaining, 0.5), "the turn's remaining time")
        literals = frozenset(r.name for r in expand(self.net.webfetch_allow_domains) if not r.wildcard)
        try:
            policy = policy_from_config(self.net.pinned_hosts, self.environ)
            page = await asyncio.to_thread(fetch, url, policy, timeout=timeout, deadline_name=name,
                                           literals=literals)
        except ValueError as err:
            return ToolOutcome(call.id, call.name, False, f"config_error: {err}", error_code="config_error",
                               error_message=str(err))
        except FetchError as err:
            return ToolOutcome(call.id, call.name, False, f"{err.code}: {err}", error_code=err.code,
                               error_message=str(err))
        cut = "\n[... cut at the size limit]" if page.truncated else ""
        return ToolOutcome(call.id, call.name, True, f"{page.text}{cut}",
                           data={"url": page.url, "status": page.status, "content_type": page.content_type,
                                 "truncated": page.truncated},
                           limit_hit="max_bytes" if page.truncated else "")


DESCRIPTION = "Fetch an http(s) URL and return its text (HTML reduced to text; bounded size)."


def webfetch_tool(net: NetConfig) -> ToolDef:
    """The session's webfetch, with the user's network settings."""
    return define("webfetch", DESCRIPTION, WebfetchArgs, WebFetcher(net).handle, permission=Level.WARN,
                  deferred=True)


WEBFETCH = webfetch_tool(NetConfig())
"""webfetch with no pins and no allow-list (every fetch asks; nothing private is reachable)."""
