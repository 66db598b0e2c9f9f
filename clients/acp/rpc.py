"""JSON-RPC 2.0 over newline-delimited stdio, as ACP frames it: both sides send requests.

Stdlib only. Incoming requests run as tasks (a ``session/prompt`` lasts a whole turn while
``session/cancel`` and permission answers keep arriving); a handler's :class:`RpcError`
becomes the error response, any other exception an internal error. A line that is not JSON
gets ``-32700`` with ``id: null``, a message that is not a request ``-32600``; neither ends
the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
RESOURCE_NOT_FOUND = -32002

MAX_LINE_BYTES = 50 * 1024 * 1024
"""An embedded resource or image rides in one line: the stream reader's limit."""

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Notify = Callable[[dict[str, Any]], Awaitable[None]]


class RpcError(Exception):
    """An error response: ``code`` from the JSON-RPC / ACP table, one readable ``message``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


class PeerGone(Exception):
    """The other side closed the connection before answering."""


def classify(raw: bytes) -> tuple[dict[str, Any] | None, RpcError | None]:
    """A line as a message object, or the error to answer it with (pure)."""
    try:
        message = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, RpcError(PARSE_ERROR, f"the line is not JSON ({exc}); send one JSON-RPC message per line")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None, RpcError(INVALID_REQUEST, 'not a JSON-RPC 2.0 message; send an object with "jsonrpc": "2.0"')
    if "method" in message and not isinstance(message["method"], str):
        return None, RpcError(INVALID_REQUEST, "the method must be a string")
    if "method" in message and not isinstance(message.get("params", {}), dict | type(None)):
        return None, RpcError(INVALID_PARAMS, "params must be an object")
    return message, None


class Connection:
    """One JSON-RPC peer on a reader and a binary writer."""

    def __init__(self, reader: asyncio.StreamReader, writer: BinaryIO,
                 requests: dict[str, Handler], notifications: dict[str, Notify],
                 loader: Callable[[], None] | None = None) -> None:
        self._reader = reader
        self._loader = loader
        self._writer = writer
        self._requests = requests
        self._notifications = notifications
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.Event()

    def _write(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            self._writer.write(data)
            self._writer.flush()
        except (OSError, ValueError):  # the editor went away: stop as at the end of input
            self._close()

    def post(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification now (writing a line never waits)."""
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.post(method, params)

    async def request(self, method: str, params: dict[str, Any], on_sent: Callable[[int], None] | None = None) -> Any:
        """Call the peer; its result, or :class:`RpcError` / :class:`PeerGone`. ``on_sent`` gets the
        request's id (for :meth:`cancel_request`)."""
        if self.closed.is_set():
            raise PeerGone(method)
        self._next_id += 1
        ident = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        self._write({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        if on_sent is not None:
            on_sent(ident)
        try:
            return await future
        finally:
            self._pending.pop(ident, None)

    def cancel_request(self, ident: int) -> None:
        """Tell the peer its answer to request ``ident`` is no longer wanted (``$/cancel_request``);
        the request still ends when the peer answers it."""
        if ident in self._pending:
            self.post("$/cancel_request", {"requestId": ident})

    async def serve(self) -> None:
        """Read until end of input; then fail what waits on the peer and let handlers finish."""
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:  # a line over the limit: skip what is left of it
                    self._write({"jsonrpc": "2.0", "id": None, "error": RpcError(
                        INVALID_REQUEST, f"a message over {MAX_LINE_BYTES} bytes was dropped").payload()})
                    continue
                if not line:
                    break
                if line.strip():
                    self._receive(line)
        finally:
            self._close()

    def _close(self) -> None:
        self.closed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerGone("the editor closed the connection"))

    def load(self) -> None:
        """Import and register the rest of the handlers (once): after ``initialize`` was answered,
        or on the first method it does not know yet."""
        loader, self._loader = self._loader, None
        if loader is not None:
            loader()

    def _receive(self, line: bytes) -> None:
        message, error = classify(line)
        if message is None:
            assert error is not None
            self._write({"jsonrpc": "2.0", "id": None, "error": error.payload()})
            return
        if "method" not in message:
            self._answer(message)
            return
        params = message.get("params") or {}
        if message["method"] not in self._requests and message["method"] not in self._notifications:
            self.load()
        if "id" in message:
            self._spawn(self._handle(message["id"], message["method"], params))
        elif message["method"] in self._notifications:
            self._spawn(self._notifications[message["method"]](params))
        # an unknown notification is ignored, as JSON-RPC says

    def _answer(self, message: dict[str, Any]) -> None:
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", ""))))
        else:
            future.set_result(message.get("result"))

    async def _handle(self, ident: Any, method: str, params: dict[str, Any]) -> None:
        handler = self._requests.get(method)
        try:
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}; this agent speaks ACP v1 "
                               f"({', '.join(sorted(self._requests))})")
            result = await handler(params)
        except RpcError as err:
            self._write({"jsonrpc": "2.0", "id": ident, "error": err.payload()})
        except PeerGone:
            return
        except Exception as exc:  # a bug: say it in one line, keep serving
            print(f"ai-coding acp: {method} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._write({"jsonrpc": "2.0", "id": ident, "error": RpcError(
                INTERNAL_ERROR, f"{method} failed: {type(exc).__name__}: {exc}").payload()})
        else:
            self._write({"jsonrpc": "2.0", "id": ident, "result": {} if result is None else result})

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout: float) -> None:
        """Give running handlers ``timeout`` seconds to finish, then cancel them."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
