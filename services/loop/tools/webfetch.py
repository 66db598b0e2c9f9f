"""``webfetch``: the text of one web page, for the model (a deferred tool, asked for every time).

It runs in the loop, not in the tools service: it touches no workspace file, and the tools
service is the process meant to sit on a host with no network at all (its bash sandbox has
none unless the user turns it on), so a fetch there would either fail or need that hole
opened. The loop already speaks HTTP to the model. What keeps it in bounds:

- the gate asks before every call (WARN; the user sees the URL), auto-approve aside;
- http and https only, no credentials in the URL, at most ``MAX_REDIRECTS`` redirects, each
  to http(s) again; no cookies, no auth headers, no proxy credentials of ours are sent;
- ``MAX_BYTES`` read at most and ``TIMEOUT_S`` per fetch; HTML is reduced to its text;
- no network (DNS fails, connection refused) is a tool error that says so, not a failed turn.
"""

from __future__ import annotations

import asyncio
import html.parser
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from services.loop.core.errors import LoopError
from services.loop.core.ports import ToolCall, ToolContext, ToolOutcome
from services.loop.policy.permissions import Level
from services.loop.tools.args import define, doc

MAX_BYTES = 200_000
"""Bytes read from the response body; the rest is not downloaded."""
MAX_TEXT_CHARS = 40_000
"""Characters of text handed to the model (it pays for them on every later step)."""
TIMEOUT_S = 20.0
MAX_REDIRECTS = 5
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")

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
    return urllib.parse.urlunsplit(parts)


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


class _Redirects(urllib.request.HTTPRedirectHandler):
    max_redirections = MAX_REDIRECTS

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        try:
            check_url(newurl)  # a redirect to file:// or ftp:// is refused like a direct one
        except ValueError:
            raise FetchError("redirect_refused", f"{req.full_url} redirects to {newurl!r:.80}, which webfetch "
                             "does not follow (http and https only)") from None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(url: str, *, max_bytes: int = MAX_BYTES, timeout: float = TIMEOUT_S) -> Page:
    """Fetch ``url`` (blocking; the handler runs it in a thread)."""
    opener = urllib.request.build_opener(_Redirects())
    request = urllib.request.Request(url, headers={"User-Agent": "ai-coding-webfetch", "Accept": "text/*, */*;q=0.5"})
    try:
        with opener.open(request, timeout=timeout) as response:
            content_type = response.headers.get_content_type()
            charset = response.headers.get_content_charset() or "utf-8"
            body = response.read(max_bytes + 1)
            status, final = response.status, response.url
    except urllib.error.HTTPError as err:
        if 300 <= err.code < 400:
            raise FetchError("redirect_refused", f"{url} redirects where webfetch does not follow: {err.reason}"
                             ) from None
        raise FetchError("http_error", f"{url} answered HTTP {err.code} {err.reason}") from None
    except ValueError as err:
        raise FetchError("invalid_url", str(err)) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise FetchError("network_unavailable", f"cannot reach {url}: {reason}") from None
    if not content_type.startswith(TEXT_TYPES):
        raise FetchError("not_text", f"{url} is {content_type}, not text; webfetch returns text only")
    truncated = len(body) > max_bytes
    text = body[:max_bytes].decode(charset, errors="replace")
    if content_type in ("text/html", "application/xhtml+xml"):
        text = html_to_text(text)
    if len(text) > MAX_TEXT_CHARS:
        text, truncated = text[:MAX_TEXT_CHARS], True
    return Page(final, status, content_type, text, truncated)


async def _webfetch(ctx: ToolContext, call: ToolCall, args: WebfetchArgs) -> ToolOutcome:
    url = check_url(args.url)
    timeout = max(min(ctx.remaining(), TIMEOUT_S), 0.5)
    try:
        page = await asyncio.to_thread(fetch, url, timeout=timeout)
    except FetchError as err:
        return ToolOutcome(call.id, call.name, False, f"{err.code}: {err}", error_code=err.code,
                           error_message=str(err))
    cut = "\n[... cut at the size limit]" if page.truncated else ""
    return ToolOutcome(call.id, call.name, True, f"{page.text}{cut}",
                       data={"url": page.url, "status": page.status, "content_type": page.content_type,
                             "truncated": page.truncated},
                       limit_hit="max_bytes" if page.truncated else "")


WEBFETCH = define("webfetch", "Fetch an http(s) URL and return its text (HTML reduced to text; bounded size).",
                  WebfetchArgs, _webfetch, permission=Level.WARN, deferred=True)
