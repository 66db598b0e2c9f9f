"""The sandbox's way out (tools.sandbox.network: proxy), attacked for real through a running tool
service with real bwrap. Every server listens on 127.0.0.1 only and is reached by a name the
user pinned (net.pinned_hosts); names that must resolve elsewhere use a resolver stub
(AI_CODING_TEST_HOSTS), so no packet is ever sent to a private or public address."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import Config
from tests.support.egress_sites import SECRET_PAGE, Origin, served, tls_origin
from tests.support.tools_harness import ThreadedToolService

SNI_CLIENT = r"""
import socket, ssl, sys
host, port, sni = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
print(s.recv(4096).decode())
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=sni)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
s.sendall(outgoing.read())
print("ANSWER", s.recv(4096)[:1].hex() or "closed")
"""
RAW_CLIENT = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
for part in sys.argv[1:]:
    s.sendall(part.encode().decode("unicode_escape").encode("latin-1"))
    try:
        print(s.recv(4096).decode("latin-1", "replace"), flush=True)
    except OSError as e:
        print("ERR", e)
"""


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served()


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[tuple[Origin, Path]]:
    origin, cert = tls_origin(tmp_path, "secure.test")
    yield origin, cert
    origin.stop()


@pytest.fixture
def proxied(short_dir: Path, workspace: Path, web: Origin, secure: tuple[Origin, Path], tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Iterator[Callable[..., ThreadedToolService]]:
    """A tool service in proxy mode: web.test (HTTP) and secure.test (HTTPS) allowed and pinned."""
    started: list[ThreadedToolService] = []
    hosts = tmp_path / "hosts.json"  # the resolver stub: these names never reach DNS or the network
    hosts.write_text(json.dumps({"loop.test": ["127.0.0.1"], "meta.test": ["169.254.169.254"],
                                 "corp.test": ["10.9.8.7"], "mixed.test": ["93.184.216.34", "127.0.0.1"]}))
    monkeypatch.setenv("AI_CODING_TEST_HOSTS", str(hosts))
    (workspace / "ca.pem").write_bytes(secure[1].read_bytes())

    def make(**sandbox: Any) -> ThreadedToolService:
        port, sport = web.port, secure[0].port
        section = {"network": "proxy",
                   "allow_domains": [f"web.test:{port}", f"secure.test:{sport}", f"denied.test:{port}",
                                     f"loop.test:{port}", f"meta.test:{port}", f"corp.test:{port}",
                                     f"mixed.test:{port}"],
                   "deny_domains": [f"denied.test:{port}"], **sandbox}
        config = Config(data={"tools": {"sandbox": section},
                              "net": {"pinned_hosts": {"web.test": f"127.0.0.1:{port}",
                                                       "secure.test": f"127.0.0.1:{sport}",
                                                       "denied.test": f"127.0.0.1:{port}"}}})
        svc = ThreadedToolService(config, str(short_dir / f"e{len(started)}.sock")).start()
        started.append(svc)
        svc.open("s1", str(workspace))
        return svc

    yield make
    for svc in started:
        svc.stop()


def bash(svc: ThreadedToolService, command: str) -> tuple[str, dict[str, Any]]:
    _, result = svc.call("s1", "bash", json.dumps({"command": command, "timeout_seconds": 60}))
    return result.output, json.loads(result.data_json or "{}")


def raw(svc: ThreadedToolService, *parts: str) -> str:
    """Speak to the proxy byte by byte from inside the sandbox."""
    return raw_with_records(svc, *parts)[0]


def raw_with_records(svc: ThreadedToolService, *parts: str) -> tuple[str, list[dict[str, Any]]]:
    args = " ".join(shlex.quote(p) for p in parts)
    out, data = bash(svc, f"/usr/bin/python3 -c {shlex.quote(RAW_CLIENT)} {args}")
    return out, data["egress"]


def test_an_allowed_host_works_over_plain_http_and_https_connect(
        proxied: Callable[..., ThreadedToolService], web: Origin, secure: tuple[Origin, Path]) -> None:
    svc = proxied()
    out, data = bash(svc, f"curl -sS http://web.test:{web.port}/hello")
    assert SECRET_PAGE.decode() in out and web.paths() == ["/hello"]
    record = data["egress"][0]
    assert (record["host"], record["verdict"], record["rule"]) == ("web.test", "allowed", f"web.test:{web.port}")
    assert record["bytes_down"] > len(SECRET_PAGE) and record["bytes_up"] > 0
    out, data = bash(svc, f"curl -sS --cacert ca.pem https://secure.test:{secure[0].port}/hello")
    assert SECRET_PAGE.decode() in out, out
    assert secure[0].paths() == ["/hello"] and data["egress"][0]["method"] == "CONNECT"


def test_direct_tcp_and_unset_proxy_variables_reach_nothing(
        proxied: Callable[..., ThreadedToolService], web: Origin) -> None:
    svc = proxied()
    attempts = [
        f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{web.port}/hello",
        f"env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://web.test:{web.port}/hello",
        f"env -i /usr/bin/curl -sS --max-time 5 http://127.0.0.1:{web.port}/hello",
        "/usr/bin/python3 -c \"import socket; socket.create_connection(('169.254.169.254', 80), timeout=3)\"",
        f"/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {web.port}), timeout=3)\"",
    ]
    for command in attempts:
        out, _ = bash(svc, command)
        assert SECRET_PAGE.decode() not in out, command
    assert web.paths() == []
    out, _ = bash(svc, "tail -n +3 /proc/net/dev | cut -d: -f1")
    assert out.split() == ["lo"]  # the sandbox's network namespace: no interface but loopback


def test_a_denied_and_an_unlisted_host_get_a_403_naming_the_config_line(
        proxied: Callable[..., ThreadedToolService], web: Origin) -> None:
    svc = proxied()
    out, data = bash(svc, f"curl -sS http://denied.test:{web.port}/hello")
    assert f"denied by `denied.test:{web.port}` in tools.sandbox.deny_domains" in out
    assert data["egress"][0]["verdict"] == "denied"
    out, data = bash(svc, "curl -sS -i http://unlisted.test/hello; curl -sS https://unlisted.test/ 2>&1")
    assert "HTTP/1.1 403 Forbidden" in out
    assert "add `- unlisted.test` under tools.sandbox.allow_domains" in out  # the body and the model's note
    assert "[sandbox network] refused unlisted.test" in out
    assert {r["method"] for r in data["egress"]} == {"GET", "CONNECT"}
    assert web.paths() == []


@pytest.mark.parametrize("name", ["loop.test", "meta.test", "corp.test", "mixed.test"])
def test_an_allowed_name_resolving_to_a_non_public_address_is_refused_before_connecting(
        proxied: Callable[..., ThreadedToolService], web: Origin, name: str) -> None:
    svc = proxied()
    out, data = bash(svc, f"curl -sS http://{name}:{web.port}/hello; curl -sS https://{name}:{web.port}/ 2>&1")
    assert "refused before connecting" in out and SECRET_PAGE.decode() not in out, out
    assert [r["verdict"] for r in data["egress"]] == ["refused", "refused"]
    assert web.paths() == []


def test_ip_literals_bad_ports_and_header_smuggling_are_refused(
        proxied: Callable[..., ThreadedToolService], web: Origin) -> None:
    svc = proxied()
    proxy = "--proxy http://127.0.0.1:3128 --noproxy ''"
    out, _ = bash(svc, f"curl -sS {proxy} http://93.184.216.34/")
    assert "93.184.216.34:80 is not in tools.sandbox.allow_domains" in out, out
    # Listed as a literal, an address is still checked: loopback is refused before connecting.
    listed = proxied(allow_domains=[f"127.0.0.1:{web.port}"])
    out, _ = bash(listed, f"curl -sS {proxy} http://127.0.0.1:{web.port}/hello")
    assert "a loopback address" in out and "refused before connecting" in out, out
    out = raw(svc, "CONNECT web.test:22 HTTP/1.1\\r\\nHost: web.test:22\\r\\n\\r\\n")
    assert "403 Forbidden" in out and "web.test:22 is not in tools.sandbox.allow_domains" in out
    out = raw(svc, f"GET http://web.test:{web.port}/hello HTTP/1.1\\r\\nHost: web.test:{web.port}\\r\\n"
                   "Host: evil.test\\r\\n\\r\\n")
    assert "400 Bad Request" in out and "more than one Host header" in out
    out = raw(svc, f"GET http://web.test:{web.port}/hello HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n")
    assert "400 Bad Request" in out and "does not name the URL's host" in out
    out = raw(svc, f"POST http://web.test:{web.port}/hello HTTP/1.1\\r\\nHost: web.test:{web.port}\\r\\n"
                   "Transfer-Encoding: chunked\\r\\nContent-Length: 4\\r\\n\\r\\n")
    assert "400 Bad Request" in out
    assert web.paths() == []


def test_a_connect_tunnel_carries_one_tls_connection_to_its_host_and_nothing_else(
        proxied: Callable[..., ThreadedToolService], web: Origin, secure: tuple[Origin, Path]) -> None:
    svc = proxied()
    port, sport = web.port, secure[0].port
    # CONNECT inside CONNECT: the inner request is not TLS, so the tunnel closes before any byte goes on.
    out, records = raw_with_records(svc, f"CONNECT secure.test:{sport} HTTP/1.1\\r\\n\\r\\n",
                                    f"CONNECT web.test:{port} HTTP/1.1\\r\\n\\r\\n")
    assert "200 Connection established" in out and SECRET_PAGE.decode() not in out
    assert "does not start with TLS" in records[0]["reason"] and records[0]["verdict"] == "refused"
    # Plain HTTP through a tunnel to an allowed host: refused the same way.
    out, records = raw_with_records(svc, f"CONNECT web.test:{port} HTTP/1.1\\r\\n\\r\\n",
                                    "GET /hello HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    assert SECRET_PAGE.decode() not in out and "does not start with TLS" in records[0]["reason"]
    # TLS naming another host than the one CONNECT named (fronting at the SNI level): closed unsent.
    out, data = bash(svc, f"/usr/bin/python3 -c {shlex.quote(SNI_CLIENT)} secure.test {sport} evil.test")
    assert "ANSWER 16" not in out, out  # no TLS answer: nothing reached a TLS server
    assert "the TLS server name evil.test is not the host CONNECT named (secure.test)" in data["egress"][0]["reason"]
    assert secure[0].paths() == [] and web.paths() == []
    out, _ = bash(svc, f"/usr/bin/python3 -c {shlex.quote(SNI_CLIENT)} secure.test {sport} secure.test")
    assert "ANSWER 16" in out, out  # the same client with the right name gets the server's ServerHello


def test_a_job_reaches_an_allowed_host_and_its_way_out_closes_when_it_ends(
        proxied: Callable[..., ThreadedToolService], web: Origin) -> None:
    import time

    svc = proxied()
    _, started = svc.call("s1", "job_start", json.dumps({"command": f"curl -sS http://web.test:{web.port}/hello"}))
    job = json.loads(started.data_json)["job_id"]
    gates = svc.runtime().egress
    assert gates is not None
    deadline = time.monotonic() + 30
    seen = ""  # job_output hands out each piece once: the page may come in a read before the exit
    while time.monotonic() < deadline:
        _, out = svc.call("s1", "job_output", json.dumps({"job_id": job}))
        seen += out.output
        if "exit code" in out.output:
            break
        time.sleep(0.2)
    assert SECRET_PAGE.decode() in seen, seen
    time.sleep(0.5)
    assert not svc.runtime()._gate_waits  # the job ended: its gate closed (socket and tasks gone)
