"""The fake model's HTTP server: a real OpenAI-compatible endpoint driven by a script.

``FakeModelServer`` owns a ``ThreadingHTTPServer`` on a background thread; the
request handler reads the request, asks the ``ScriptCursor`` for a step (under
one lock), and writes the reply built by ``replies``. Waiting (``delay_ms``,
``chunk_delay_ms``, stalls) is cut short when the server stops or the client
goes away, so a test never leaves a thread hanging.
"""
from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from services.fake_model import replies
from services.fake_model.cursor import Refused, ScriptCursor, Selected
from services.fake_model.errors import FakeModelError
from services.fake_model.handler import _Handler, _HttpServer
from services.fake_model.records import RecordedRequest
from services.fake_model.script import Script, coerce_script

ScriptSource = Script | str | Path | list[Any] | dict[str, Any] | None

__all__ = ["FakeModelServer", "RecordedRequest", "ScriptSource"]


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

    def _give_back(self, index: int) -> None:
        with self._lock:
            self._cursor.give_back(index)

    @property
    def window_style(self) -> str:
        """How the over-window error is worded (the script's ``window_style``)."""
        return self._cursor.script.window_style

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(record)

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
