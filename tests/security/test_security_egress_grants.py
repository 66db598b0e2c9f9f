"""The user's grants for hosts the sandbox's allow-list does not name, through a running tool service
with real bwrap: a held connection is asked on the call's stream (EgressAsk) and answered with
GrantEgress. "Once" opens the host for that command, "session" for the session until it closes,
deny keeps the 403; and no grant ever opens a denied host or an address the policy refuses (the
metadata address, loopback, a private one: those are refused before anyone is asked). Servers
listen on 127.0.0.1 only, reached through user pins; other names resolve through a stub."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ai_coding.v1 import tools_pb2

from services.kernel.config import Config
from tests.support.egress_sites import SECRET_PAGE, Origin, served, tls_origin
from tests.support.tools_harness import ThreadedToolService

Answer = Callable[[tools_pb2.EgressAsk], "tools_pb2.EgressGrantScope.ValueType"]
ONCE, SESSION, DENY = (tools_pb2.EGRESS_GRANT_SCOPE_ONCE, tools_pb2.EGRESS_GRANT_SCOPE_SESSION,
                       tools_pb2.EGRESS_GRANT_SCOPE_DENY)


@pytest.fixture
def web() -> Iterator[Origin]:
    yield from served("/a", "/b", "/c", "/x", "/1", "/2", "/3", "/4", "/5")


@pytest.fixture
def secure(tmp_path: Path, workspace: Path) -> Iterator[Origin]:
    """An HTTPS origin for tls.test; its certificate is the workspace's ca.pem (curl --cacert)."""
    origin, cert = tls_origin(tmp_path, "tls.test")
    (workspace / "ca.pem").write_bytes(cert.read_bytes())
    yield origin
    origin.stop()


@pytest.fixture
def svc(short_dir: Path, workspace: Path, web: Origin, secure: Origin, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Iterator[ThreadedToolService]:
    """Proxy mode with an empty allow-list: asked.test (and denied.test, on the deny list) are pinned
    to the origin; meta.test and loop.test resolve to 169.254.169.254 and 127.0.0.1 (stub)."""
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"meta.test": ["169.254.169.254"], "loop.test": ["127.0.0.1"],
                                 "corp.test": ["10.1.2.3"]}))
    monkeypatch.setenv("AI_CODING_TEST_HOSTS", str(hosts))
    pins = {name: f"127.0.0.1:{web.port}" for name in ("asked.test", "other.test", "denied.test")}
    pins["tls.test"] = f"127.0.0.1:{secure.port}"
    config = Config(data={"tools": {"sandbox": {"network": "proxy", "allow_domains": [],
                                                "deny_domains": [f"denied.test:{web.port}"]}},
                          "net": {"pinned_hosts": pins}})
    service = ThreadedToolService(config, str(short_dir / "g.sock")).start()
    service.open("s1", str(workspace))
    yield service
    service.stop()


def bash(svc: ThreadedToolService, command: str, answer: Answer | None, session: str = "s1",
         reason: str = "") -> tuple[str, list[dict[str, Any]], list[tools_pb2.EgressAsk]]:
    """One bash call whose asks ``answer`` answers (None: the caller answers none); (output, egress
    records, the asks that came)."""
    stream = svc.stub.CallTool(tools_pb2.CallToolRequest(
        session_id=session, call_id="c1", tool="bash", egress_asks=answer is not None,
        arguments_json=json.dumps({"command": command, "timeout_seconds": 60})), timeout=120)
    asks: list[tools_pb2.EgressAsk] = []
    for item in stream:
        if item.HasField("egress_ask"):
            asks.append(item.egress_ask)
            assert answer is not None
            svc.stub.GrantEgress(tools_pb2.GrantEgressRequest(session_id=session, ask_id=item.egress_ask.ask_id,
                                                              scope=answer(item.egress_ask), reason=reason),
                                 timeout=10)
        elif item.HasField("result"):
            data = json.loads(item.result.data_json or "{}")
            return item.result.output, data.get("egress", []), asks
    raise AssertionError("the call ended without a result")


def curl(host: str, port: int, path: str = "/hello") -> str:
    return f"curl -sS --max-time 20 http://{host}:{port}{path}"


def test_allow_once_lets_that_command_through_and_the_next_command_is_asked_again(
        svc: ThreadedToolService, web: Origin) -> None:
    twice = f"{curl('asked.test', web.port, '/a')}; echo; {curl('asked.test', web.port, '/b')}"
    out, records, asks = bash(svc, twice, lambda ask: ONCE)
    assert out.count(SECRET_PAGE.decode()) == 2, out
    assert [(a.host, a.port, a.method) for a in asks] == [("asked.test", web.port, "GET")]  # one ask per command
    assert "tools.sandbox.allow_domains" in asks[0].reason and asks[0].allow_line == f"asked.test:{web.port}"
    assert [(r["verdict"], r["granted"]) for r in records] == [("allowed", "once"), ("allowed", "once")]
    out, records, asks = bash(svc, curl("asked.test", web.port, "/c"), lambda ask: DENY)
    assert len(asks) == 1 and SECRET_PAGE.decode() not in out
    assert "403" in out or "refused asked.test" in out
    assert web.paths() == ["/a", "/b"]


def test_allow_for_the_session_holds_until_the_session_closes(svc: ThreadedToolService, web: Origin,
                                                              workspace: Path) -> None:
    out, _, asks = bash(svc, curl("asked.test", web.port, "/1"), lambda ask: SESSION)
    assert SECRET_PAGE.decode() in out and len(asks) == 1
    out, records, asks = bash(svc, curl("asked.test", web.port, "/2"), None)  # nobody to ask: the grant holds
    assert SECRET_PAGE.decode() in out and asks == [] and records[0]["granted"] == "session"
    out, _, _ = bash(svc, curl("other.test", web.port, "/3"), None)  # only that host
    assert "refused other.test" in out
    svc.open("s2", str(workspace))  # another session has no grant
    out, _, _ = bash(svc, curl("asked.test", web.port, "/4"), None, session="s2")
    assert "refused asked.test" in out
    svc.stub.CloseSession(tools_pb2.CloseSessionRequest(session_id="s1"), timeout=10)
    svc.open("s1", str(workspace))
    out, _, _ = bash(svc, curl("asked.test", web.port, "/5"), None)
    assert "refused asked.test" in out
    assert web.paths() == ["/1", "/2"]


def test_a_refusal_says_which_host_why_and_the_config_line(svc: ThreadedToolService, web: Origin) -> None:
    out, records, asks = bash(svc, f"curl -sS -i --max-time 20 http://asked.test:{web.port}/x", lambda ask: DENY,
                              reason="the user refused it")
    assert len(asks) == 1 and "HTTP/1.1 403 Forbidden" in out
    assert f"asked.test:{web.port} is not in tools.sandbox.allow_domains (the user refused it)" in out
    assert f"add `- asked.test:{web.port}` under tools.sandbox.allow_domains" in out
    assert records[0]["verdict"] == "denied" and not records[0]["granted"]
    out, _, asks = bash(svc, curl("asked.test", web.port), None)  # no one to ask: refused at once, same hint
    assert asks == [] and f"add `- asked.test:{web.port}` under tools.sandbox.allow_domains" in out
    assert "(nobody can be asked to allow it here" in out
    assert web.paths() == []


@pytest.mark.parametrize("name", ["meta.test", "loop.test", "corp.test", "169.254.169.254", "127.0.0.1"])
def test_no_grant_opens_the_metadata_service_loopback_or_a_private_address(
        svc: ThreadedToolService, web: Origin, name: str) -> None:
    via = "curl -sS --max-time 20 --noproxy ''"  # through the proxy even for 127.0.0.1 (NO_PROXY names it)
    command = f"{via} http://{name}:{web.port}/hello; {via} https://{name}:{web.port}/ 2>&1; {via} {name}/"
    out, records, asks = bash(svc, command, lambda ask: SESSION)
    assert asks == [], "a refused address is never put to the user"
    assert SECRET_PAGE.decode() not in out
    assert records and all(r["verdict"] == "refused" and not r["granted"] for r in records), records
    assert web.paths() == []


def test_no_grant_opens_a_denied_host(svc: ThreadedToolService, web: Origin) -> None:
    out, records, asks = bash(svc, curl("denied.test", web.port), lambda ask: SESSION)
    assert asks == [] and f"denied by `denied.test:{web.port}` in tools.sandbox.deny_domains" in out
    assert records[0]["verdict"] == "denied" and web.paths() == []


def test_a_session_cannot_answer_another_sessions_ask(svc: ThreadedToolService, web: Origin,
                                                      workspace: Path) -> None:
    svc.open("s2", str(workspace))
    stolen: list[bool] = []

    def answer_from_s2(ask: tools_pb2.EgressAsk) -> tools_pb2.EgressGrantScope.ValueType:
        response = svc.stub.GrantEgress(tools_pb2.GrantEgressRequest(session_id="s2", ask_id=ask.ask_id,
                                                                     scope=SESSION), timeout=10)
        stolen.append(response.applied)
        return DENY

    out, _, asks = bash(svc, curl("asked.test", web.port), answer_from_s2)
    assert stolen == [False] and len(asks) == 1 and SECRET_PAGE.decode() not in out
    assert web.paths() == []


def test_a_granted_https_host_is_tunnelled_to_it_and_nothing_else(svc: ThreadedToolService, secure: Origin) -> None:
    command = f"curl -sS --max-time 20 --cacert ca.pem https://tls.test:{secure.port}/hello"
    out, records, asks = bash(svc, command, lambda ask: ONCE)
    assert SECRET_PAGE.decode() in out, out
    assert [(a.host, a.method) for a in asks] == [("tls.test", "CONNECT")]
    assert records[0]["method"] == "CONNECT" and records[0]["granted"] == "once" and records[0]["bytes_down"] > 0
    assert secure.paths() == ["/hello"]
