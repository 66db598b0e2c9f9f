"""webfetch through the real loop: a local HTTP server on 127.0.0.1 stands for the web."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from ai_coding.v1 import loop_pb2

from services.loop.tools.webfetch import MAX_TEXT_CHARS, check_url, html_to_text
from tests.service.loop.harness import (
    Conversation,
    LoopStack,
    fake,
    finished,
    make_stack,
    status_name,
    workspace,
)

__all__ = ["fake", "make_stack", "workspace"]

PAGE = (b"<html><head><title>Docs</title><style>p{color:red}</style><script>steal()</script></head>"
        b"<body><h1>Install</h1><p>Run <b>pip install thing</b>.</p></body></html>")


class _Site(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/big": (200, "text/plain", b"z" * 500_000),
            "/image": (200, "image/png", b"\x89PNG"),
            "/missing": (404, "text/plain", b"no"),
        }
        if self.path == "/to-file":
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()
            return
        code, ctype, body = routes.get(self.path, (404, "text/plain", b""))
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    _Site.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fetch_turn(url: str, then_match: str) -> list[dict[str, object]]:
    return [
        {"match": "look it up", "tool_calls": [{"name": "webfetch", "arguments": {"url": url}}]},
        {"match": then_match, "text": "fetched"},
    ]


def tool_result(events: list[loop_pb2.TurnEvent]) -> loop_pb2.ToolFinished:
    return next(e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished")


def test_webfetch_returns_the_pages_text_without_markup_or_scripts(
        make_stack: Callable[..., LoopStack], site: str) -> None:
    stack = make_stack(fetch_turn(f"{site}/page", "pip install thing"))
    _, events = stack.turn("look it up")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    result = tool_result(events).result
    assert result.ok and "Install" in result.output and "Run pip install thing." in result.output
    assert "steal()" not in result.output and "<b>" not in result.output
    assert _Site.hits == ["/page"]


def test_webfetch_asks_first_and_a_denial_fetches_nothing(make_stack: Callable[..., LoopStack], site: str) -> None:
    stack = make_stack(fetch_turn(f"{site}/page", "denied"))
    sid = stack.open(auto_approve=False, interactive=True).session_id
    asked: list[str] = []

    def deny(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            asked.append(event.approval_requested.tool)
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=loop_pb2.APPROVAL_DECISION_DENY)))

    end = finished(stack.start(sid, "look it up").drain(deny))
    assert asked == ["webfetch"]
    assert status_name(end) == "completed", end.reason
    assert _Site.hits == []


def test_a_large_page_is_cut_and_marked(make_stack: Callable[..., LoopStack], site: str) -> None:
    stack = make_stack(fetch_turn(f"{site}/big", "cut at the size limit"))
    _, events = stack.turn("look it up")
    result = tool_result(events).result
    text, _, mark = result.output.partition("\n[...")
    assert result.ok and text == "z" * MAX_TEXT_CHARS and "cut at the size limit" in mark
    assert result.limit_hit == "max_bytes"


@pytest.mark.parametrize(("path", "code"), [("/image", "not_text"), ("/missing", "http_error"),
                                            ("/to-file", "redirect_refused")])
def test_what_is_not_a_text_page_is_a_tool_error_the_turn_goes_on(
        make_stack: Callable[..., LoopStack], site: str, path: str, code: str) -> None:
    stack = make_stack(fetch_turn(f"{site}{path}", code))
    _, events = stack.turn("look it up")
    assert status_name(finished(events)) == "completed"
    result = tool_result(events).result
    assert not result.ok and result.error.code == code, result.output


def test_no_network_is_a_tool_error_that_says_so(make_stack: Callable[..., LoopStack], tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stack = make_stack(fetch_turn(f"http://127.0.0.1:{port}/", "network_unavailable"))
    _, events = stack.turn("look it up")
    assert status_name(finished(events)) == "completed"
    assert tool_result(events).result.error.code == "network_unavailable"


def test_urls_other_than_http_or_with_credentials_are_refused_and_html_reads_as_text() -> None:
    for bad in ("file:///etc/passwd", "ftp://x/y", "http://", "https://u:p@host/x"):
        with pytest.raises(ValueError):
            check_url(bad)
    assert check_url(" https://example.org/a?b=1 ") == "https://example.org/a?b=1"
    assert html_to_text("<p>a &amp; b</p><script>x</script><div>c</div>") == "a & b\n\nc"
