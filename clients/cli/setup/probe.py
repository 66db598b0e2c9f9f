"""Two questions asked of an OpenAI-compatible endpoint before a config names it: which models
does ``GET /models`` list, and does one small chat request with this key and model succeed?

urllib only: the client never imports openai. Every failure is an :class:`EndpointProblem` whose
``line`` is the precise sentence a user needs (the HTTP status and the endpoint's own message).
"""

from __future__ import annotations

import enum
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from services.kernel.errors import AiCodingError

TEST_PROMPT = "Reply with the single word OK."


class Problem(enum.Enum):
    """What went wrong, as far as a user can act on it."""

    UNREACHABLE = "unreachable"
    KEY_REFUSED = "key_refused"
    MODEL_UNKNOWN = "model_unknown"
    REFUSED = "refused"


class EndpointProblem(AiCodingError):
    """The endpoint could not be reached or refused the request; ``kind`` says which."""

    reason = "endpoint_problem"

    def __init__(self, kind: Problem, message: str, *, status: int | None = None) -> None:
        super().__init__(message, reason=kind.value)
        self.kind = kind
        self.status = status


@dataclass(frozen=True)
class ChatCheck:
    """A test request that succeeded: what the model said and how long it took."""

    reply: str
    seconds: float


def _headers(api_key: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def error_message(body: bytes) -> str:
    """The endpoint's own sentence from an OpenAI-style error body, else the body's first line."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text.splitlines()[0][:200] if text else ""
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if data.get("message"):
            return str(data["message"])
    return text[:200]


def classify(status: int, message: str, url: str, model: str = "") -> EndpointProblem:
    """The problem an HTTP error status stands for, worded for the user."""
    said = f"HTTP {status}" + (f": {message}" if message else "")
    if status in (401, 403):
        return EndpointProblem(Problem.KEY_REFUSED, f"the endpoint refused the key ({said})", status=status)
    if status == 404 and model:
        return EndpointProblem(Problem.MODEL_UNKNOWN, f"{url} does not serve model {model!r} ({said})",
                               status=status)
    if status == 400 and model and "model" in message.lower():
        return EndpointProblem(Problem.MODEL_UNKNOWN, f"the endpoint refused model {model!r} ({said})",
                               status=status)
    return EndpointProblem(Problem.REFUSED, f"{url} answered {said}", status=status)


def _request(url: str, api_key: str, payload: dict[str, Any] | None, timeout: float, model: str = "") -> Any:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, headers=_headers(api_key),
                                     method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as err:
        raise classify(err.code, error_message(err.read()), url, model) from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        cause = getattr(err, "reason", err)
        raise EndpointProblem(Problem.UNREACHABLE, f"cannot reach {url}: {cause}") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise EndpointProblem(Problem.REFUSED, f"{url} did not answer JSON; is it an OpenAI-compatible "
                                               "endpoint (its URL usually ends in /v1)?") from None


def list_models(base_url: str, api_key: str, timeout: float = 5.0) -> list[str]:
    """The model ids ``GET {base_url}/models`` lists (sorted as the endpoint sent them)."""
    url = base_url.rstrip("/") + "/models"
    data = _request(url, api_key, None, timeout)
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        rows = data.get("models") if isinstance(data, dict) else None  # Ollama's native shape
    ids = [str(r.get("id") or r.get("name") or "") for r in rows or [] if isinstance(r, dict)]
    return [i for i in ids if i]


def check_chat(base_url: str, api_key: str, model: str, timeout: float = 60.0) -> ChatCheck:
    """One small non-streamed chat request: proves the endpoint, the key and the model together."""
    url = base_url.rstrip("/") + "/chat/completions"
    started = time.monotonic()
    payload = {"model": model, "messages": [{"role": "user", "content": TEST_PROMPT}], "stream": False}
    data = _request(url, api_key, payload, timeout, model)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise EndpointProblem(Problem.REFUSED, f"{url} answered without choices; it is not a Chat "
                                               "Completions endpoint")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    reply = str(message.get("content") or "") if isinstance(message, dict) else ""
    return ChatCheck(reply=reply.strip(), seconds=time.monotonic() - started)


def answers(base_url: str, timeout: float = 0.5) -> list[str] | None:
    """The models a keyless endpoint lists, or None when nothing answers there (quick: for the
    local-Ollama offer)."""
    try:
        return list_models(base_url, "", timeout=timeout)
    except EndpointProblem:
        return None
