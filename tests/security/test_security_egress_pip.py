"""A real `pip install` inside the sandbox, through the egress proxy, from a PyPI-style simple
index on 127.0.0.1 (pinned as pypi.test), of a wheel this test builds; and the credential rule:
the proxy adds the Authorization header the index checks, and the token is nowhere the command
or the model can see."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.kernel.config import Config
from tests.support.egress_sites import Origin, serve, simple_index, tls_origin, wheel
from tests.support.tools_harness import ThreadedToolService

TOKEN = "tok-4f1d9e-never-in-the-sandbox"
MARK = "EGRESS-WHEEL-IMPORTED"


@pytest.fixture
def index() -> Iterator[Origin]:
    origin = serve(Origin(token=TOKEN))
    name, data = wheel("egress_probe", "1.0", f"MARK = {MARK!r}\n")
    simple_index(origin, "egress-probe", name, data)
    yield origin
    origin.stop()


@pytest.fixture
def tls_index(tmp_path: Path) -> Iterator[tuple[Origin, Path]]:
    origin, cert = tls_origin(tmp_path, "pypi.test")
    origin.token = TOKEN
    name, data = wheel("egress_probe", "1.0", f"MARK = {MARK!r}\n")
    simple_index(origin, "egress-probe", name, data)
    yield origin, cert
    origin.stop()


@pytest.fixture
def pip_service(short_dir: Path, workspace: Path, index: Origin, monkeypatch: pytest.MonkeyPatch,
                isolated_home: Path) -> Iterator[Callable[..., ThreadedToolService]]:
    monkeypatch.setenv("EGRESS_PIP_INDEX_BEARER", TOKEN)  # the services' environment, not the sandbox's
    started: list[ThreadedToolService] = []

    def make(**sandbox: Any) -> ThreadedToolService:
        section = {"network": "proxy", "allow_domains": [f"pypi.test:{index.port}"],
                   "env_allow": ["EGRESS_PIP_INDEX_BEARER"],  # even listed, a credential's variable stays out
                   "credentials": [{"host": f"pypi.test:{index.port}",
                                    "headers": {"Authorization": "Bearer ${EGRESS_PIP_INDEX_BEARER}"}}],
                   **sandbox}
        config = Config(data={"tools": {"sandbox": section},
                              "net": {"pinned_hosts": {"pypi.test": f"127.0.0.1:{index.port}"}}})
        svc = ThreadedToolService(config, str(short_dir / f"p{len(started)}.sock")).start()
        started.append(svc)
        svc.open("s1", str(workspace))
        return svc

    yield make
    for svc in started:
        svc.stop()


def pip_install(svc: ThreadedToolService, port: int, scheme: str = "http") -> tuple[str, str]:
    trusted = "--trusted-host pypi.test " if scheme == "http" else ""
    command = (f"/usr/bin/python3 -m pip install --disable-pip-version-check --no-cache-dir --no-input "
               f"--retries 0 --timeout 20 --target /tmp/site --index-url {scheme}://pypi.test:{port}/simple/ "
               f"{trusted}egress-probe 2>&1; "
               "/usr/bin/python3 -c \"import sys; sys.path.insert(0, '/tmp/site'); import egress_probe; "
               "print(egress_probe.MARK)\" 2>&1; "
               "env; cat /proc/self/environ | tr '\\0' '\\n'; grep -rl " + TOKEN + " /tmp /run . 2>/dev/null; true")
    _, result = svc.call("s1", "bash", json.dumps({"command": command, "timeout_seconds": 120}))
    return result.output, result.data_json


def test_pip_installs_a_wheel_through_the_proxy_with_the_token_added_outside_the_sandbox(
        pip_service: Callable[..., ThreadedToolService], index: Origin) -> None:
    svc = pip_service()
    output, data_json = pip_install(svc, index.port)
    assert MARK in output, output
    assert "Successfully installed egress-probe-1.0" in output
    auth = {headers.get("authorization") for _, headers in index.hits}
    assert auth == {f"Bearer {TOKEN}"}, "the index did not get the token on every request"
    assert TOKEN not in output and TOKEN not in data_json  # command output, env, files, the model's records
    records = json.loads(data_json)["egress"]
    assert records and all(r["host"] == "pypi.test" and r["verdict"] == "allowed" for r in records)


def test_pip_from_a_denied_index_fails_with_the_config_hint_and_sends_nothing(
        pip_service: Callable[..., ThreadedToolService], index: Origin) -> None:
    svc = pip_service(deny_domains=[f"pypi.test:{index.port}"])
    output, _ = pip_install(svc, index.port)
    assert MARK not in output and index.hits == []
    assert f"pypi.test:{index.port} is denied by `pypi.test:{index.port}` in tools.sandbox.deny_domains" in output
    assert "Remove `pypi.test:" in output


def test_pip_over_https_gets_the_token_added_by_the_proxy_and_the_ca_key_stays_outside(
        short_dir: Path, workspace: Path, tls_index: tuple[Origin, Path], isolated_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    origin, cert = tls_index
    monkeypatch.setenv("EGRESS_PIP_INDEX_BEARER", TOKEN)
    section = {"network": "proxy", "allow_domains": [f"pypi.test:{origin.port}"],
               "credentials": [{"host": f"pypi.test:{origin.port}", "ca_file": str(cert),
                                "headers": {"Authorization": "Bearer ${EGRESS_PIP_INDEX_BEARER}"}}]}
    config = Config(data={"tools": {"sandbox": section},
                          "net": {"pinned_hosts": {"pypi.test": f"127.0.0.1:{origin.port}"}}})
    with ThreadedToolService(config, str(short_dir / "tls.sock")) as svc:
        svc.open("s1", str(workspace))
        output, data_json = pip_install(svc, origin.port, "https")
        ca_key = (isolated_home / ".local" / "share" / "ai-coding" / "egress-ca" / "ca.key").read_text()
        _, probe = svc.call("s1", "bash", json.dumps({"command": "cat /run/ai-coding/ca.pem; ls -a /run/ai-coding; "
                                                                 "grep -rl 'PRIVATE KEY' /run /tmp . 2>/dev/null; true"}))
    assert MARK in output, output
    assert {headers.get("authorization") for _, headers in origin.hits} == {f"Bearer {TOKEN}"}
    assert TOKEN not in output and TOKEN not in data_json
    assert "BEGIN CERTIFICATE" in probe.output and "PRIVATE KEY" not in probe.output  # the CA cert only
    assert ca_key.splitlines()[1] not in probe.output
    records = json.loads(data_json)["egress"]
    assert records and all(r["method"].startswith("CONNECT") for r in records)
    assert any("credential headers added" in r["reason"] for r in records)
