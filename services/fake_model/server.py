"""The fake model's HTTP server: a real OpenAI-compatible endpoint driven by a script.

``FakeModelServer`` owns a ``ThreadingHTTPServer`` on a background thread; the
request handler reads the request, asks the ``ScriptCursor`` for a step (under
one lock), and writes the reply built by ``replies``. Waiting (``delay_ms``,
``chunk_delay_ms``, stalls) is cut short when the server stops or the client
goes away, so a test never leaves a thread hanging.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from services.fake_model import replies, wire
from services.fake_model.cursor import Refused, ScriptCursor, Selected
from services.fake_model.errors import FakeModelError, ScriptError
from services.fake_model.script import Fault, Script, Step, coerce_script, parse_script

ScriptSource = Script | str | Path | list[Any] | dict[str, Any] | None

# How often a wait checks whether the server is stopping or the client left.
_POLL_SECONDS = 0.05

_log = logging.getLogger(__name__)


@dataclass
class RecordedRequest:
    """One request the server received under ``/v1`` (admin calls are not recorded).

    It is logged as soon as it arrives; ``status`` is set when the reply starts
    and ``done`` once the handler has finished with it (including an abort).

    ``handling_ms`` is the server-side time from the arrival of the request line to writing
    the last byte; ``overhead_ms`` is the same minus scripted waits (delays,
    chunk delays, stalls): the fake model's own cost, which benchmarks subtract.
    """

    method: str
    path: str
    body: Any
    time: float
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 0
    step: int | None = None
    error: str = ""
    handling_ms: float = 0.0
    overhead_ms: float = 0.0
    client_port: int = 0
    """The client's TCP port: equal ports on consecutive requests mean a reused connection."""
    done: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` list (empty when it has none)."""
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def last_message(self) -> str:
        """The text of the last message, as ``match`` sees it."""
        return replies.last_message_text(self.body) if isinstance(self.body, dict) else ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``GET /_admin/requests`` lists)."""
        return {
            "method": self.method, "path": self.path, "body": self.body, "time": self.time,
            "headers": self.headers, "status": self.status, "step": self.step, "error": self.error,
            "handling_ms": round(self.handling_ms, 3), "overhead_ms": round(self.overhead_ms, 3),
            "done": self.done,
        }


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
    owner: FakeModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is normal here (timeouts, dropped streams): log it, never print a traceback."""
        _log.debug("fake model: connection from %s ended with an error", client_address, exc_info=True)


class FakeModelServer:
    """A scripted OpenAI-compatible server for tests, the demo and ``ai-coding fake-model``.

    >>> with FakeModelServer([{"text": "hi"}]) as server:
    ...     client = AsyncOpenAI(base_url=server.url, api_key="x")
    """

    def __init__(self, script: ScriptSource = None, host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, context_window: int | None = None) -> None:
        self._cursor = ScriptCursor(coerce_script(script))
        self._window_override = context_window
        self._over_window: list[int] = []
        self._host = host
        self._port = port
        self.api_key = api_key
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._previous_prompt = ""
        self._request_count = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        """Bind and serve on a background thread; returns ``self``. Binding errors raise ``FakeModelError``."""
        if self._httpd is not None:
            return self
        try:
            httpd = _HttpServer((self._host, self._port), _Handler)
        except OSError as err:
            raise FakeModelError(f"fake model cannot listen on {self._host}:{self._port}: {err.strerror or err}.",
                                 hint="Pick a free port (or 0 for any).") from err
        httpd.owner = self
        self._httpd = httpd
        self._port = int(httpd.server_address[1])  # a restart after stop() reuses the same URL
        self._stopping.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fake-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut stalled replies and open connections, and release the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port (known once ``start`` has run, kept after ``stop``)."""
        if not self._port:
            raise FakeModelError("the fake model is not started.", hint="Call start() first.")
        return self._port

    @property
    def url(self) -> str:
        """The base URL clients use, ending in ``/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    # -- script and log --------------------------------------------------------------------------------------

    def load_script(self, script: ScriptSource) -> None:
        """Replace the script and rewind to its first step (the request log is kept)."""
        parsed = coerce_script(script)
        with self._lock:
            self._cursor = ScriptCursor(parsed)

    def reset(self) -> None:
        """Rewind the script and forget every recorded request, error and cached prefix."""
        with self._lock:
            self._cursor = ScriptCursor(self._cursor.script)
            self._requests.clear()
            self._errors.clear()
            self._over_window.clear()
            self._previous_prompt = ""

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every ``/v1`` request so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Only the ``POST /v1/chat/completions`` requests."""
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    @property
    def context_window(self) -> int:
        """The enforced window in tokens (0: none): the constructor's, else the script's."""
        if self._window_override is not None:
            return self._window_override
        return self._cursor.script.context_window

    @property
    def over_window(self) -> list[int]:
        """Prompt token counts of the requests refused for exceeding the window, in order."""
        with self._lock:
            return list(self._over_window)

    def _refuse_over_window(self, request_bytes: int) -> int:
        """The request's prompt tokens when they exceed the window (recorded), else 0."""
        window = self.context_window
        tokens = replies.token_estimate(request_bytes)
        if not window or tokens <= window:
            return 0
        with self._lock:
            self._over_window.append(tokens)
        return tokens

    @property
    def errors(self) -> list[str]:
        """Messages of requests the script refused (mismatch, exhausted): a passing test expects none."""
        with self._lock:
            return list(self._errors)

    def remaining(self) -> int | None:
        """How many more requests the script can answer (``None``: unbounded)."""
        with self._lock:
            return self._cursor.remaining()

    def state(self) -> dict[str, Any]:
        """Position in the script, requests left and refusals so far (``GET /_admin/state``)."""
        with self._lock:
            return {"step": self._cursor.index, "steps": len(self._cursor.script.steps),
                    "remaining": self._cursor.remaining(), "requests": len(self._requests),
                    "errors": list(self._errors)}

    @property
    def models(self) -> tuple[str, ...]:
        """The model ids ``GET /v1/models`` lists."""
        return self._cursor.script.models

    # -- used by the handler ---------------------------------------------------------------------------------

    def _select(self, body: dict[str, Any], request_bytes: int) -> tuple[Selected | Refused, dict[str, Any], int]:
        """Pick the step for a chat request and compute its usage, under the lock."""
        with self._lock:
            self._request_count += 1
            outcome = self._cursor.take(replies.Conversation.of(body))
            prompt = replies.serialize_prompt(body)
            usage: dict[str, Any] = {}
            if isinstance(outcome, Selected):
                usage = replies.compute_usage(outcome.step, request_bytes, prompt, self._previous_prompt) or {}
            else:
                self._errors.append(outcome.message)
            self._previous_prompt = prompt
            return outcome, usage, self._request_count

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(record)

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


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
            return self._error(record, 400, replies.context_length_message(over, owner.context_window),
                               type_="invalid_request_error", code="context_length_exceeded", param="messages")
        outcome, usage, number = owner._select(body, len(raw))
        if isinstance(outcome, Refused):
            return self._error(record, 400, outcome.message, type_="invalid_request_error", code=outcome.code)
        step = outcome.step
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
        if body.get("stream"):
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            chunks = replies.stream_chunks(step, completion_id=completion_id, model=model, created=created,
                                           ids=ids, include_usage=include_usage, usage=usage or None)
            return self._stream(record, step, chunks)
        if step.fault is not None:  # stall or drop without streaming: before any byte of the reply
            self._interrupt(record, step.fault)
        reply = replies.completion_body(step, completion_id=completion_id, model=model, created=created,
                                        ids=ids, usage=usage or None)
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
        if fault.kind == "context_length":
            message = fault.message or replies.context_length_message(int(usage.get("prompt_tokens", 0)))
            return self._error(record, 400, message, type_="invalid_request_error",
                               code=fault.code or "context_length_exceeded", param="messages")
        if fault.kind == "auth_error":
            return self._error(record, 401, fault.message or "Incorrect API key provided.",
                               type_="invalid_request_error", code=fault.code or "invalid_api_key")
        return self._error(record, fault.status, fault.message or f"Injected HTTP {fault.status}.",
                           type_="invalid_request_error" if fault.status < 500 else "server_error",
                           code=fault.code or None)

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
