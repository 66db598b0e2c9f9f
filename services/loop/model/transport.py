"""The model client's HTTP: one streamed POST over ``httpx2``, errors as our own exceptions.

The loop used the openai package only for ``AsyncOpenAI.post``: its HTTP client (``httpx2``),
the bearer header and turning an error status into an exception with the decoded body. That
package's import is its whole pydantic type tree (~0.5 s of the loop's start on 2 cores, and
~20 MB of its idle RSS: bench/startup.py, bench/footprint.py), so the same few steps live here.
What the openai package did, and this does the same way: ``base_url`` with a trailing slash
joined with the relative path; ``Authorization: Bearer KEY``; a 4xx/5xx body read to its end and
decoded as JSON when it is JSON, its ``error`` member (when a mapping holds one) as the body;
the message ``Error code: N - MESSAGE``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import ssl
import threading
from collections.abc import Mapping
from typing import Any

import httpx2

from services.kernel import __version__


class TransportError(Exception):
    """An attempt that got no usable response (the root of this module's errors)."""


class RequestTimedOut(TransportError):
    """No response within the attempt's timeout."""


class ConnectionFailed(TransportError):
    """The endpoint could not be reached, or the connection broke before a response; ``str`` says why."""


class StatusError(TransportError):
    """The endpoint answered 4xx or 5xx."""

    def __init__(self, status_code: int, body: object, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body
        self.message = message
        self.headers = dict(headers)


def decoded_body(raw: bytes) -> object:
    """An error response's body: its JSON value (the ``error`` member of a mapping that has one), else its text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body: Any = json.loads(text)
    except ValueError:
        return text
    return body.get("error", body) if isinstance(body, Mapping) else body


def status_message(status_code: int, body: object) -> str:
    """``Error code: N`` plus `` - MESSAGE`` when the body carries a message."""
    message = body.get("message") if isinstance(body, Mapping) else None
    return f"Error code: {status_code}" + (f" - {message}" if isinstance(message, str) and message else "")


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


CONNECTION_BACKEND = "anyio._backends._asyncio"
"""What httpx2 opens its connections through (anyio's asyncio backend), a module anyio imports at
the first connection: ~25 ms of CPU on 2 cores, which was the first model step of every loop
process (the first turn after ``ai-coding up``, the cold run's turn). Imported with this module
instead, which the loop loads in a thread right after SERVING (services/loop/main.py)."""

with contextlib.suppress(ImportError):  # another HTTP stack underneath: it imports what it needs itself
    importlib.import_module(CONNECTION_BACKEND)

_TLS: list[ssl.SSLContext] = []
_TLS_LOCK = threading.Lock()


def shared_tls_context() -> ssl.SSLContext:
    """The TLS context of every model connection, the one httpx2 makes by default (the CA bundle,
    SSL_CERT_FILE / SSL_CERT_DIR of this process), built once per process: each client built its
    own, 25-50 ms of CPU at the first turn of every workspace. The loop builds it right after
    SERVING (services/loop/main.py)."""
    with _TLS_LOCK:
        if not _TLS:
            _TLS.append(httpx2.create_ssl_context())
        return _TLS[0]


class ModelTransport:
    """An HTTP connection pool to one OpenAI-compatible endpoint."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._http = httpx2.AsyncClient(
            base_url=base_url if base_url.endswith("/") else base_url + "/",
            timeout=httpx2.Timeout(timeout),
            verify=shared_tls_context(),
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json",
                     "User-Agent": f"ai-coding/{__version__}"},
        )

    async def post_stream(self, path: str, body: bytes, headers: Mapping[str, str], timeout: float) -> httpx2.Response:
        """POST ``body`` to ``path`` and return the open response (the caller closes it)."""
        request = self._http.build_request("POST", path.lstrip("/"), content=body, headers=dict(headers),
                                           timeout=httpx2.Timeout(timeout))
        try:
            response = await self._http.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise RequestTimedOut("the request timed out") from exc
        except httpx2.HTTPError as exc:
            raise ConnectionFailed(_reason(exc)) from exc
        if response.status_code < 400:
            return response
        try:
            raw = await response.aread()
        except httpx2.HTTPError as exc:
            raise ConnectionFailed(_reason(exc)) from exc
        finally:
            await response.aclose()
        decoded = decoded_body(raw)
        raise StatusError(response.status_code, decoded, status_message(response.status_code, decoded),
                          response.headers)

    async def close(self) -> None:
        await self._http.aclose()
