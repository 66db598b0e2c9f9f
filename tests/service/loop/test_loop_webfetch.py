"""webfetch through the real loop: a local HTTP server on 127.0.0.1 stands for the web.

The server is reached the way a user reaches an internal host: its name (``site.test``) is
pinned to its loopback address in the user's ``net.pinned_hosts``; nothing relaxes the checks.
"""

from __future__ import annotations

import datetime
import http.server
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

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
    port: ClassVar[int] = 0

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/big": (200, "text/plain", b"z" * 500_000),
            "/image": (200, "image/png", b"\x89PNG"),
            "/missing": (404, "text/plain", b"no"),
            "/secret": (200, "text/plain", b"HOST-SECRET-42"),
        }
        redirects = {"/to-file": "file:///etc/passwd", "/to-loopback": f"http://127.0.0.1:{self.port}/secret",
                     "/to-localhost": f"http://localhost:{self.port}/secret",
                     "/to-metadata": "http://169.254.169.254/latest/meta-data/"}
        if self.path in redirects:
            self.send_response(302)
            self.send_header("Location", redirects[self.path])
            self.end_headers()
            return
        if self.path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass
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
def site_server() -> Iterator[int]:
    _Site.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    server.daemon_threads = True
    _Site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield _Site.port
    server.shutdown()
    server.server_close()


@pytest.fixture
def site(site_server: int) -> str:
    return f"http://site.test:{site_server}"


def net(port: int, *, allow: bool = True, **more: Any) -> dict[str, Any]:
    section: dict[str, Any] = {"pinned_hosts": {"site.test": f"127.0.0.1:{port}"}}
    if allow:
        section["webfetch_allow_domains"] = [f"site.test:{port}"]
    section.update(more)
    return {"net": section}


def fetch_turn(url: str, then_match: str) -> list[dict[str, object]]:
    return [
        {"match": "look it up", "tool_calls": [{"name": "webfetch", "arguments": {"url": url}}]},
        {"match": then_match, "text": "fetched"},
    ]


def tool_result(events: list[loop_pb2.TurnEvent]) -> loop_pb2.ToolFinished:
    return next(e.tool_finished for e in events if e.WhichOneof("event") == "tool_finished")


def test_webfetch_returns_the_pages_text_without_markup_or_scripts(
        make_stack: Callable[..., LoopStack], site: str, site_server: int) -> None:
    stack = make_stack(fetch_turn(f"{site}/page", "pip install thing"), sections=net(site_server))
    _, events = stack.turn("look it up")
    end = finished(events)
    assert status_name(end) == "completed", end.reason
    result = tool_result(events).result
    assert result.ok and "Install" in result.output and "Run pip install thing." in result.output
    assert "steal()" not in result.output and "<b>" not in result.output
    assert _Site.hits == ["/page"]


def _approve_or_deny(decision: loop_pb2.ApprovalDecision.ValueType, asked: list[str]
                     ) -> Callable[[loop_pb2.TurnEvent, Conversation], None]:
    def answer(event: loop_pb2.TurnEvent, conv: Conversation) -> None:
        if event.WhichOneof("event") == "approval_requested":
            asked.append(event.approval_requested.tool)
            conv.send(loop_pb2.ClientMessage(approval=loop_pb2.ApprovalReply(
                request_id=event.approval_requested.request_id, decision=decision)))
    return answer


def test_webfetch_asks_first_and_a_denial_fetches_nothing(make_stack: Callable[..., LoopStack], site: str,
                                                          site_server: int) -> None:
    stack = make_stack(fetch_turn(f"{site}/page", "denied"), sections=net(site_server, allow=False))
    sid = stack.open(auto_approve=False, interactive=True).session_id
    asked: list[str] = []
    end = finished(stack.start(sid, "look it up").drain(_approve_or_deny(loop_pb2.APPROVAL_DECISION_DENY, asked)))
    assert asked == ["webfetch"]
    assert status_name(end) == "completed", end.reason
    assert _Site.hits == []


def test_auto_approve_does_not_approve_webfetch_of_an_unlisted_host(
        make_stack: Callable[..., LoopStack], site: str, site_server: int) -> None:
    stack = make_stack(fetch_turn(f"{site}/page", "denied"), sections=net(site_server, allow=False))
    sid = stack.open(auto_approve=True, interactive=True).session_id
    asked: list[str] = []
    end = finished(stack.start(sid, "look it up").drain(_approve_or_deny(loop_pb2.APPROVAL_DECISION_DENY, asked)))
    assert asked == ["webfetch"], "auto-approve let webfetch through without asking"
    assert status_name(end) == "completed" and _Site.hits == []


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/secret", "http://localhost:{port}/secret",
                                    "http://0.0.0.0:{port}/secret", "http://[::1]:{port}/secret",
                                    "http://site.test:{port}/to-loopback", "http://site.test:{port}/to-localhost",
                                    "http://site.test:{port}/to-metadata", "http://169.254.169.254/latest/"])
def test_the_hosts_own_network_is_refused_even_with_an_always_approval(
        make_stack: Callable[..., LoopStack], site_server: int, target: str) -> None:
    url = target.format(port=site_server)
    script = [*fetch_turn(url, "address_refused")[:1], {"match": "address_refused", "text": "refused"}]
    # The allow-list names 127.0.0.1 (an IP literal may be listed), yet the address check still holds.
    stack = make_stack(script, sections=net(site_server, allow=False,
                                            webfetch_allow_domains=[f"127.0.0.1:{site_server}"]))
    sid = stack.open(auto_approve=True, interactive=True).session_id
    asked: list[str] = []
    events = stack.start(sid, "look it up").drain(_approve_or_deny(loop_pb2.APPROVAL_DECISION_ALLOW_ALWAYS, asked))
    result = tool_result(events).result
    assert not result.ok and result.error.code == "address_refused", result.output
    assert "/secret" not in _Site.hits and "HOST-SECRET-42" not in result.output


@pytest.mark.parametrize(("name", "answer"), [("rebind.test", "10.20.30.40"), ("meta.test", "169.254.169.254"),
                                            ("loop.test", "127.0.0.1")])
def test_an_allowed_name_that_resolves_to_a_private_address_is_refused_before_connecting(
        make_stack: Callable[..., LoopStack], site_server: int, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, name: str, answer: str) -> None:
    hosts = tmp_path / "hosts.json"  # a resolver stub: no packet goes to these addresses
    hosts.write_text(json.dumps({name: [answer]}))
    monkeypatch.setenv("AI_CODING_TEST_HOSTS", str(hosts))
    url = f"http://{name}:{site_server}/secret"
    script = [*fetch_turn(url, "address_refused")[:1], {"match": "address_refused", "text": "refused"}]
    stack = make_stack(script, sections=net(site_server, webfetch_allow_domains=[f"{name}:{site_server}"]))
    _, events = stack.turn("look it up")
    result = tool_result(events).result
    assert result.error.code == "address_refused" and name in result.output and answer in result.output
    assert _Site.hits == []


def test_a_trickling_server_is_ended_by_the_fetch_deadline_which_it_names(
        make_stack: Callable[..., LoopStack], site: str, site_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import services.loop.tools.webfetch as webfetch

    monkeypatch.setattr(webfetch, "TIMEOUT_S", 2.0)
    stack = make_stack(fetch_turn(f"{site}/trickle", "timeout"), sections=net(site_server))
    _, events = stack.turn("look it up")
    result = tool_result(events).result
    assert not result.ok and result.error.code == "timeout", result.output
    assert "webfetch's deadline (2 s)" in result.output


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "site.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("site.test")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_a_self_signed_https_page_names_the_certificate_not_the_network(
        make_stack: Callable[..., LoopStack], tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stack = make_stack(fetch_turn(f"https://site.test:{port}/page", "tls_certificate"), sections=net(port))
        _, events = stack.turn("look it up")
        result = tool_result(events).result
        assert result.error.code == "tls_certificate", result.output
        assert "certificate" in result.output and "self-signed" in result.output
    finally:
        server.shutdown()
        server.server_close()


def test_a_large_page_is_cut_and_marked(make_stack: Callable[..., LoopStack], site: str, site_server: int) -> None:
    stack = make_stack(fetch_turn(f"{site}/big", "cut at the size limit"), sections=net(site_server))
    _, events = stack.turn("look it up")
    result = tool_result(events).result
    text, _, mark = result.output.partition("\n[...")
    assert result.ok and text == "z" * MAX_TEXT_CHARS and "cut at the size limit" in mark
    assert result.limit_hit == "max_bytes"


@pytest.mark.parametrize(("path", "code"), [("/image", "not_text"), ("/missing", "http_error"),
                                            ("/to-file", "redirect_refused")])
def test_what_is_not_a_text_page_is_a_tool_error_the_turn_goes_on(
        make_stack: Callable[..., LoopStack], site: str, site_server: int, path: str, code: str) -> None:
    stack = make_stack(fetch_turn(f"{site}{path}", code), sections=net(site_server))
    _, events = stack.turn("look it up")
    assert status_name(finished(events)) == "completed"
    result = tool_result(events).result
    assert not result.ok and result.error.code == code, result.output


def test_no_network_is_a_tool_error_that_says_so(make_stack: Callable[..., LoopStack]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stack = make_stack(fetch_turn(f"http://site.test:{port}/", "network_unavailable"), sections=net(port))
    _, events = stack.turn("look it up")
    assert status_name(finished(events)) == "completed"
    assert tool_result(events).result.error.code == "network_unavailable"


def test_urls_other_than_http_or_with_credentials_are_refused_and_html_reads_as_text() -> None:
    for bad in ("file:///etc/passwd", "ftp://x/y", "http://", "https://u:p@host/x", "http://x:99999/"):
        with pytest.raises(ValueError):
            check_url(bad)
    assert check_url(" https://example.org/a?b=1 ") == "https://example.org/a?b=1"
    assert html_to_text("<p>a &amp; b</p><script>x</script><div>c</div>") == "a & b\n\nc"
