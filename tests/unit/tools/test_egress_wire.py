"""The egress proxy's pure parsers: a request head, where it goes, the head sent upstream, SNI."""

from __future__ import annotations

import ssl

import pytest

from services.tools.egress.wire import (
    WireError,
    client_hello_sni,
    destination,
    outgoing_head,
    parse_head,
    tls_record_length,
)


def head(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode() + b"\r\n"


def test_an_absolute_form_request_goes_to_its_url_and_is_sent_once_in_origin_form() -> None:
    parsed = parse_head(head("GET http://Index.Corp:8080/simple/x/?a=1 HTTP/1.1\nHost: index.corp:8080\n"
                             "Proxy-Authorization: Basic leak\nAuthorization: Bearer mine\nAccept: */*\n"))
    dest = destination(parsed)
    assert (dest.host, dest.port, dest.path) == ("index.corp", 8080, "/simple/x/?a=1")
    out = outgoing_head(parsed, dest, {"Authorization": "Bearer injected"}).decode()
    assert out.startswith("GET /simple/x/?a=1 HTTP/1.1\r\nHost: index.corp:8080\r\n")
    assert "Proxy-Authorization" not in out and "Bearer mine" not in out and "Bearer injected" in out
    assert out.endswith("Connection: close\r\n\r\n") and out.count("Host:") == 1


@pytest.mark.parametrize(("raw", "why"), [
    ("GET http://a.test/ HTTP/1.1\nHost: a.test\nHost: b.test\n", "more than one Host"),
    ("GET http://a.test/ HTTP/1.1\nHost: b.test\n", "does not name the URL's host"),
    ("POST http://a.test/ HTTP/1.1\nTransfer-Encoding: chunked\nContent-Length: 3\n", "Transfer-Encoding"),
    ("POST http://a.test/ HTTP/1.1\nContent-Length: 3\nContent-Length: 4\n", "Content-Length"),
    ("GET /relative HTTP/1.1\nHost: a.test\n", "absolute http:// URL"),
    ("GET https://a.test/ HTTP/1.1\n", "CONNECT"),
    ("GET http://u:p@a.test/ HTTP/1.1\n", "credentials"),
    ("CONNECT a.test HTTP/1.1\n", "host:port"),
    ("CONNECT a.test:99999 HTTP/1.1\n", "bad port"),
    ("GET http://a.test/ HTTP/1.1\nX-Folded: a\n continued\n", "folded"),
    ("GET http://a.test/ HTTP/2\n", "HTTP/1.x"),
])
def test_ambiguous_or_smuggling_requests_are_refused(raw: str, why: str) -> None:
    with pytest.raises(WireError, match=why):
        destination(parse_head(head(raw)))


def _client_hello(name: str | None) -> bytes:
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    if name is None:
        context.check_hostname = False
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_the_server_name_of_a_real_client_hello_is_read_and_non_tls_is_not_tls() -> None:
    record = _client_hello("Files.PythonHosted.org")
    length = tls_record_length(record[:5])
    assert length is not None and length == len(record) - 5
    assert client_hello_sni(record[5:]) == "files.pythonhosted.org"
    assert client_hello_sni(_client_hello(None)[5:]) is None
    assert tls_record_length(b"CONNE") is None and tls_record_length(b"GET /") is None
    with pytest.raises(WireError):
        client_hello_sni(b"\x01\x00\x00")
