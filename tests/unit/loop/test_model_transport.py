"""The model client's own HTTP layer: error bodies read as the openai package read them, and the
loop's model path imports no openai (its type tree was most of the loop's start)."""

from __future__ import annotations

import subprocess
import sys

from services.loop.model.failures import classify
from services.loop.model.retry import FailureKind
from services.loop.model.transport import (
    ConnectionFailed,
    ModelTransport,
    RequestTimedOut,
    StatusError,
    decoded_body,
    shared_tls_context,
    status_message,
)


def test_an_error_body_with_an_error_member_is_that_member() -> None:
    body = decoded_body(b'{"error": {"message": "bad tools", "code": "invalid"}}')
    assert body == {"message": "bad tools", "code": "invalid"}
    assert status_message(400, body) == "Error code: 400 - bad tools"


def test_an_error_body_that_is_not_json_is_its_text_and_the_message_only_the_code() -> None:
    body = decoded_body(b"  <html>502 Bad Gateway</html>\n")
    assert body == "<html>502 Bad Gateway</html>"
    assert status_message(502, body) == "Error code: 502"


def test_a_json_list_body_stays_a_list() -> None:
    assert decoded_body(b'[{"error": {"message": "quota"}}]') == [{"error": {"message": "quota"}}]


def test_classify_reads_status_timeout_and_connection_failures() -> None:
    body = {"message": "Rate limit reached", "type": "rate_limit"}
    limited = classify(StatusError(429, body, status_message(429, body), {"retry-after": "2"}), [])
    assert limited.failure.reason is FailureKind.RATE_LIMITED and "Rate limit reached" in limited.detail
    assert classify(RequestTimedOut("the request timed out"), []).failure.reason is FailureKind.TIMEOUT
    try:
        raise ConnectionFailed("x") from OSError("connection refused")
    except ConnectionFailed as exc:
        failed = classify(exc, [])
    assert failed.failure.reason is FailureKind.CONNECTION and failed.detail == "connection refused"


def test_the_loop_and_its_model_client_import_no_openai() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import services.loop.main, services.loop.model.client"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "httpx2" in imported  # the check sees the imports at all
    assert "openai" not in imported and "pydantic" not in imported, sorted(imported & {"openai", "pydantic"})


def test_every_model_transport_shares_one_verifying_tls_context() -> None:
    import ssl

    first, second = ModelTransport("https://a.example/v1", "k", 5), ModelTransport("https://b.example/v1", "k", 5)
    ctx = shared_tls_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname  # what httpx2 verifies by default
    assert ctx.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    pools = [t._http._transport._pool._ssl_context for t in (first, second)]  # type: ignore[attr-defined]
    assert pools == [ctx, ctx]


_FIRST_REQUEST = """
import asyncio, json, sys
import services.loop.model.client  # what the loop imports right after SERVING (services/loop/main.py)
from services.fake_model import FakeModelServer
from services.loop.model.transport import ModelTransport

async def first_request(url):
    transport = ModelTransport(url, "k", 30)
    before = set(sys.modules)
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode()
    response = await transport.post_stream("chat/completions", body, {"Content-Type": "application/json"}, 30)
    text = (await response.aread()).decode()
    await response.aclose()
    await transport.close()
    return text, sorted(set(sys.modules) - before)

with FakeModelServer([{"text": "hello"}]) as server:
    text, new = asyncio.run(first_request(server.url))
print(json.dumps({"answered": "hello" in text, "imported": new}))
"""


def test_a_loop_process_first_model_request_imports_nothing() -> None:
    """httpx2 connects through anyio, whose asyncio backend anyio imports at the first connection:
    it is loaded with the transport (right after the loop's SERVING), not in a turn."""
    import json

    done = subprocess.run([sys.executable, "-c", _FIRST_REQUEST], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"answered": True, "imported": []}
