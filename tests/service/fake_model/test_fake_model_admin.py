"""The request log and the admin endpoints, over raw http.client (no SDK in between)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from services.fake_model import FakeModelServer

Start = Callable[..., FakeModelServer]


def call(server: FakeModelServer, method: str, path: str, body: Any = None, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request; returns status, lower-cased headers and the body bytes."""
    netloc = urlsplit(server.url)
    conn = http.client.HTTPConnection(netloc.hostname or "", netloc.port, timeout=10)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def chat(server: FakeModelServer, content: str, **extra: Any) -> tuple[int, dict[str, str], bytes]:
    return call(server, "POST", "/v1/chat/completions",
                {"model": "m", "messages": [{"role": "user", "content": content}], **extra})


def test_every_request_is_logged_with_its_body_and_timings_in_process_and_over_http(fake_model: Start) -> None:
    server = fake_model([{"text": "one"}, {"text": "two"}])
    chat(server, "first prompt")
    chat(server, "second prompt", stream=True)
    in_process = server.chat_requests
    assert [r.last_message for r in in_process] == ["first prompt", "second prompt"]
    assert [r.step for r in in_process] == [0, 1]
    assert all(r.handling_ms >= r.overhead_ms > 0 for r in in_process)
    assert in_process[0].time <= in_process[1].time
    status, _, body = call(server, "GET", "/_admin/requests")
    listed = json.loads(body)["requests"]
    assert status == 200
    assert [r["body"]["messages"][0]["content"] for r in listed] == ["first prompt", "second prompt"]
    assert [r["method"] for r in listed] == ["POST", "POST"] and listed[1]["body"]["stream"] is True


def test_a_stream_is_server_sent_events_ending_with_done(fake_model: Start) -> None:
    server = fake_model([{"text": "hi there", "chunk_chars": 3}])
    status, headers, body = chat(server, "x", stream=True)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = [line for line in body.decode().split("\n\n") if line]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    contents = [json.loads(e[6:])["choices"][0]["delta"].get("content") or "" for e in events[:-1]]
    assert "".join(contents) == "hi there"


def test_posting_a_script_replaces_it_and_rewinds(fake_model: Start) -> None:
    server = fake_model([{"text": "old"}])
    status, _, body = call(server, "POST", "/_admin/script", raw=b"- text: new one\n- text: new two\n")
    assert (status, json.loads(body)) == (200, {"ok": True, "steps": 2})
    replies = [json.loads(chat(server, "x")[2])["choices"][0]["message"]["content"] for _ in range(2)]
    assert replies == ["new one", "new two"]


def test_posting_an_invalid_script_is_refused_and_keeps_the_old_one(fake_model: Start) -> None:
    server = fake_model([{"text": "kept"}])
    status, _, body = call(server, "POST", "/_admin/script", body=[{"fault": "explode"}])
    assert status == 400
    assert "fault kind must be one of" in json.loads(body)["error"]["message"]
    assert json.loads(chat(server, "x")[2])["choices"][0]["message"]["content"] == "kept"


def test_reset_rewinds_the_script_and_clears_the_log(fake_model: Start) -> None:
    server = fake_model([{"text": "again"}])
    chat(server, "x")
    chat(server, "exhausted now")
    assert len(server.requests) == 2 and len(server.errors) == 1
    status, _, _ = call(server, "POST", "/_admin/reset")
    assert status == 200
    assert server.requests == [] and server.errors == []
    assert json.loads(chat(server, "x")[2])["choices"][0]["message"]["content"] == "again"


def test_the_state_endpoint_reports_position_and_refusals(fake_model: Start) -> None:
    server = fake_model([{"text": "a", "repeat": 2}, {"match": "nope", "text": "b"}])
    chat(server, "x")
    chat(server, "x")
    chat(server, "wrong")
    state = json.loads(call(server, "GET", "/_admin/state")[2])
    assert (state["step"], state["remaining"], state["requests"]) == (1, 1, 3)
    assert "'nope'" in state["errors"][0]


def test_a_body_that_is_not_json_gets_a_400_and_is_still_logged(fake_model: Start) -> None:
    server = fake_model([{"text": "unused"}])
    status, _, body = call(server, "POST", "/v1/chat/completions", raw=b"{not json")
    assert status == 400 and "messages" in json.loads(body)["error"]["message"]
    (record,) = server.requests
    assert record.body == "{not json" and record.status == 400
    assert server.remaining() == 1


def test_an_unknown_path_is_a_404_with_an_error_body(fake_model: Start) -> None:
    server = fake_model([])
    status, _, body = call(server, "POST", "/v1/embeddings", body={"input": "x"})
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found"


def test_loading_a_script_in_process_keeps_the_log(fake_model: Start) -> None:
    server = fake_model([{"text": "first"}])
    chat(server, "x")
    server.load_script([{"text": "second"}])
    assert json.loads(chat(server, "x")[2])["choices"][0]["message"]["content"] == "second"
    assert len(server.requests) == 2


def test_scripted_delays_count_in_handling_time_but_not_in_the_servers_own_overhead(fake_model: Start) -> None:
    server = fake_model([{"text": "abcdef", "chunk_chars": 2, "delay_ms": 150, "chunk_delay_ms": 50}])
    status, _, _ = chat(server, "x", stream=True)
    (record,) = server.requests
    assert status == 200
    # 150 ms before the first byte plus 50 ms between each of the later chunks (role, 3 text, finish).
    assert record.handling_ms >= 150 + 4 * 50
    assert record.overhead_ms <= record.handling_ms - 340
