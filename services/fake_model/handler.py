"""The fake model's request handler: routing, the chat reply, faults and provider quirks.

``FakeModelServer`` (server.py) owns the HTTP server; each request runs here on its own
thread, asks the owner for a step (under its lock) and writes the reply ``replies`` and
``wire`` build. Waits are cut short when the server stops or the client goes away.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from services.fake_model import replies, wire
from services.fake_model.cursor import Refused, Selected
from services.fake_model.errors import ScriptError
from services.fake_model.records import RecordedRequest
from services.fake_model.script import Fault, Step, parse_script


class ServerOwner(Protocol):
    """What a request handler needs of the server that owns it (services/fake_model/server.py)."""

    api_key: str | None
    _stopping: threading.Event

    @property
    def models(self) -> tuple[str, ...]: ...
    @property
    def requests(self) -> list[RecordedRequest]: ...
    @property
    def context_window(self) -> int: ...
    @property
    def window_style(self) -> str: ...
    def state(self) -> dict[str, Any]: ...
    def reset(self) -> None: ...
    def load_script(self, script: Any) -> None: ...
    def _refuse_over_window(self, request_bytes: int) -> int: ...
    def _select(self, body: dict[str, Any], request_bytes: int) -> tuple[Selected | Refused, dict[str, Any], int]: ...
    def _give_back(self, index: int) -> None: ...
    def _record(self, record: RecordedRequest) -> None: ...
    def _track(self, conn: socket.socket, open_: bool) -> None: ...

# How often a wait checks whether the server is stopping or the client left.
_POLL_SECONDS = 0.05

_log = logging.getLogger(__name__)


class _Aborted(Exception):
    """The reply was cut short on purpose (a dropped stream) or the client went away."""


@dataclass
class _InFlight:
    """The request a handler is answering: its log entry, start time and scripted waiting so far."""

    record: RecordedRequest
    started: float
    waited: float = 0.0


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: ServerOwner

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is normal here (timeouts, dropped streams): log it, never print a traceback."""
        _log.debug("fake model: connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer
    server_version = "ai-coding-fake-model/1"
    _in_flight: _InFlight | None = None
    _arrived = 0.0

    def parse_request(self) -> bool:
        # The server's time starts when the request line has arrived: parsing the headers and
        # reading the body are the server's work, not the client's (benchmarks subtract it).
        self._arrived = time.perf_counter()
        return super().parse_request()

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; with Nagle's algorithm the
        # second waits for the client's delayed ACK (measured: ~45 ms per reply).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr lines; the request log is the record."""

    # -- routing ---------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        owner = self.server.owner
        if path == "/_admin/requests":
            self._send_json(200, {"requests": [r.to_json() for r in owner.requests]})
        elif path == "/_admin/state":
            self._send_json(200, owner.state())
        elif path.startswith("/v1/models"):
            self._models(path)
        else:
            self._not_found()

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_admin/script":
            self._admin_script()
        elif path == "/_admin/reset":
            self._read_body()
            self.server.owner.reset()
            self._send_json(200, {"ok": True})
        elif path == "/v1/chat/completions":
            self._chat()
        else:
            self._read_body()
            self._not_found()

    # -- endpoints -------------------------------------------------------------------------------------------

    def _models(self, path: str) -> None:
        record = self._begin(None)
        models = [{"id": m, "object": "model", "created": 0, "owned_by": "ai-coding-fake"}
                  for m in self.server.owner.models]
        if path == "/v1/models":
            record.status = 200
            self._send_json(200, {"object": "list", "data": models})
        else:
            wanted = path.removeprefix("/v1/models/")
            found = [m for m in models if m["id"] == wanted]
            record.status = 200 if found else 404
            if found:
                self._send_json(200, found[0])
            else:
                self._send_json(404, replies.error_body(f"The model {wanted!r} does not exist.",
                                                        type_="invalid_request_error", code="model_not_found"))
        record.done = True

    def _admin_script(self) -> None:
        raw = self._read_body()
        try:
            data = _parse_script_payload(raw)
            script = parse_script(data)
        except ScriptError as err:
            self._send_json(400, replies.error_body(str(err), type_="invalid_request_error",
                                                    code="fake_script_invalid"))
            return
        self.server.owner.load_script(script)
        self._send_json(200, {"ok": True, "steps": len(script.steps)})

    def _chat(self) -> None:
        raw = self._read_body()
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        record = self._begin(body if body is not None else raw.decode("utf-8", "replace"))
        try:
            self._answer_chat(raw, body, record)
        except (_Aborted, OSError):
            self.close_connection = True
            if not record.error:
                record.error = "client disconnected"
        finally:
            self._settle()
            record.done = True

    def _answer_chat(self, raw: bytes, body: Any, record: RecordedRequest) -> None:
        owner = self.server.owner
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return self._error(record, 400, "the request body must be a JSON object with a 'messages' list.",
                               type_="invalid_request_error", code="invalid_request")
        if owner.api_key is not None and self.headers.get("Authorization", "") != f"Bearer {owner.api_key}":
            return self._error(record, 401, "Incorrect API key provided.", type_="invalid_request_error",
                               code="invalid_api_key")
        over = owner._refuse_over_window(len(raw))
        if over:
            return self._payload(record, *replies.context_length_reply(owner.window_style, over, owner.context_window))
        outcome, usage, number = owner._select(body, len(raw))
        if isinstance(outcome, Refused):
            return self._error(record, 400, outcome.message, type_="invalid_request_error", code=outcome.code)
        step = outcome.step
        refused = next((p for p in step.reject_params if p in body), "")
        if refused:  # the server does not know this field: no step is consumed
            owner._give_back(outcome.index)
            return self._payload(record, *replies.param_refusal(step.reject_style, refused, body[refused]))
        record.step = outcome.index
        if step.require_reasoning_echo and (refusal := wire.reasoning_echo_refusal(body["messages"])):
            return self._error(record, 400, refusal, type_="invalid_request_error", code="invalid_request_error")
        self._wait(step.delay_ms / 1000)
        if step.fault is not None and step.fault.kind not in ("stall", "drop"):
            return self._fault_reply(record, step.fault, usage)
        model = str(body.get("model") or owner.models[0])
        ids = replies.tool_call_ids(step, number)
        completion_id = f"chatcmpl-fake-{number}"
        created = int(time.time())
        if step.wire in ("anthropic", "anthropic_json"):
            streamed = body.get("stream") is True and step.wire == "anthropic"
            return self._anthropic(record, step, model, streamed, completion_id)
        if body.get("stream") and step.wire != "json_parts":
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            chunks = replies.stream_chunks(step, completion_id=completion_id, model=model, created=created,
                                           ids=ids, include_usage=include_usage, usage=usage or None)
            return self._stream(record, step, chunks)
        if step.fault is not None:  # stall or drop without streaming: before any byte of the reply
            self._interrupt(record, step.fault)
        reply = replies.completion_body(step, completion_id=completion_id, model=model, created=created,
                                        ids=ids, usage=usage or None)
        if step.wire == "json_parts":
            reply = wire.parts_completion(reply)
        record.status = 200
        self._send_json(200, reply)
        return None

    def _fault_reply(self, record: RecordedRequest, fault: Fault, usage: dict[str, Any]) -> None:
        if fault.kind == "rate_limit":
            seconds = f"{fault.retry_after:g}"
            headers = {"Retry-After": seconds, "retry-after-ms": str(int(fault.retry_after * 1000))}
            return self._error(record, 429, fault.message or "Rate limit reached; please retry after "
                               f"{seconds} s.", type_="requests", code=fault.code or "rate_limit_exceeded",
                               headers=headers)
        if fault.kind == "server_error":
            return self._error(record, 500, fault.message or "The server had an error while processing "
                               "your request.", type_="server_error", code=fault.code or None)
        if fault.kind == "context_length" and fault.style != "openai":
            return self._payload(record, *replies.context_length_reply(
                fault.style, int(usage.get("prompt_tokens", 0)), fault.window or 128000))
        if fault.kind == "context_length":
            message = fault.message or replies.context_length_message(int(usage.get("prompt_tokens", 0)),
                                                                      fault.window or 128000)
            return self._error(record, 400, message, type_="invalid_request_error",
                               code=fault.code or "context_length_exceeded", param="messages")
        if fault.kind == "auth_error":
            return self._error(record, 401, fault.message or "Incorrect API key provided.",
                               type_="invalid_request_error", code=fault.code or "invalid_api_key")
        if fault.body != "openai":
            message = fault.message or f"Injected HTTP {fault.status}."
            record.status, record.error = fault.status, message
            content_type, data = replies.shaped_error(fault.body, fault.status, message)
            return self._send_bytes(fault.status, content_type, data)
        return self._error(record, fault.status, fault.message or f"Injected HTTP {fault.status}.",
                           type_="invalid_request_error" if fault.status < 500 else "server_error",
                           code=fault.code or None)

    def _payload(self, record: RecordedRequest, status: int, payload: Any) -> None:
        """An error reply with a body of any shape (a list, a top-level message)."""
        record.status = status
        record.error = json.dumps(payload)[:300]
        self._send_json(status, payload)

    def _anthropic(self, record: RecordedRequest, step: Step, model: str, stream: bool, message_id: str) -> None:
        """Answer as an Anthropic Messages server would: event stream or one ``type: message`` body."""
        record.status = 200
        if not stream:
            return self._send_json(200, wire.anthropic_message(step.text, model, message_id))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for name, data in wire.anthropic_events(step.text, model, message_id):
            self._write_chunk(f"event: {name}\n".encode() + b"data: " + wire.encode_chunk(data) + b"\n\n")
        self._settle()
        self.wfile.write(b"0\r\n\r\n")
        return None

    def _stream(self, record: RecordedRequest, step: Step, chunks: list[dict[str, Any]]) -> None:
        record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for sent, chunk in enumerate(chunks):
            if step.fault is not None and sent == step.fault.after_chunks:
                self._interrupt(record, step.fault)
            if sent and step.chunk_delay_ms:
                self._wait(step.chunk_delay_ms / 1000)
            self._write_chunk(b"data: " + wire.encode_chunk(chunk) + b"\n\n")
        if step.fault is not None and step.fault.after_chunks >= len(chunks):
            self._interrupt(record, step.fault)
        self._settle()
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _interrupt(self, record: RecordedRequest, fault: Fault) -> None:
        """Stall (then continue) or drop the connection, as the fault says."""
        if fault.kind == "drop":
            record.error = "dropped by script"
            with contextlib.suppress(OSError):
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            raise _Aborted(record.error)
        seconds = fault.seconds
        self._wait(seconds if seconds is not None else float("inf"))
        if seconds is None or self.server.owner._stopping.is_set():
            record.error = record.error or "stalled until the client left"
            raise _Aborted(record.error)

    # -- helpers ---------------------------------------------------------------------------------------------

    def _begin(self, body: Any) -> RecordedRequest:
        """Log the request at once (status 0 until answered), so it is visible before the reply ends."""
        record = RecordedRequest(self.command, self.path, body, time.time(), headers=dict(self.headers.items()),
                                 client_port=int(self.client_address[1]))
        self._in_flight = _InFlight(record, self._arrived or time.perf_counter())
        self.server.owner._record(record)
        return record

    def _count_wait(self, seconds: float) -> None:
        if self._in_flight is not None:
            self._in_flight.waited += seconds

    def _settle(self) -> None:
        """Fill in the timings just before the last byte goes out (once per request)."""
        in_flight = self._in_flight
        if in_flight is None:
            return
        self._in_flight = None
        record = in_flight.record
        record.handling_ms = (time.perf_counter() - in_flight.started) * 1000
        record.overhead_ms = max(0.0, record.handling_ms - in_flight.waited * 1000)

    def _wait(self, seconds: float) -> float:
        """Sleep up to ``seconds``; stop early when the server stops or the client hangs up. Returns seconds slept."""
        if seconds <= 0:
            return 0.0
        started = time.perf_counter()
        deadline = started + seconds
        stopping = self.server.owner._stopping
        while not stopping.is_set():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            if self._client_gone(min(remaining, _POLL_SECONDS)):
                self._count_wait(time.perf_counter() - started)
                raise _Aborted("client disconnected")
        self._count_wait(time.perf_counter() - started)
        return time.perf_counter() - started

    def _client_gone(self, timeout: float) -> bool:
        readable, _, _ = select.select([self.connection], [], [], timeout)
        if not readable:
            return False
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        if peeked:  # a pipelined request is waiting: not a hang-up, so pace the poll instead
            time.sleep(timeout)
        return peeked == b""

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _error(self, record: RecordedRequest, status: int, message: str, *, type_: str, code: str | None,
               param: str | None = None, headers: dict[str, str] | None = None) -> None:
        record.status = status
        record.error = message
        self._send_json(status, replies.error_body(message, type_=type_, code=code, param=param), headers)

    def _send_bytes(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self._settle()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self._settle()
        self.wfile.write(data)

    def _not_found(self) -> None:
        self._send_json(404, replies.error_body(f"no route for {self.command} {self.path} on the fake model.",
                                                type_="invalid_request_error", code="not_found"))

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""


def _parse_script_payload(raw: bytes) -> Any:
    """An admin script upload: JSON, or YAML text; a syntax error is a ``ScriptError``."""
    import yaml

    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ScriptError(f"the uploaded script is neither JSON nor YAML: {' '.join(str(err).split())}") from err
