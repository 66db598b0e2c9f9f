"""One request the fake model received, as its log keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.fake_model import replies


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
