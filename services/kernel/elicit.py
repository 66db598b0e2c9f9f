"""An MCP server's question to the user and the user's answer: plain data the gateway and the
loop both speak (the gateway's broker carries them; the loop's ports name them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["accept", "decline", "cancel"]
ACTIONS: dict[str, Action] = {"accept": "accept", "decline": "decline", "cancel": "cancel"}

Value = str | int | float | bool | list[str] | None


@dataclass(frozen=True)
class ElicitAsk:
    """One elicitation request as the server sent it."""

    request_id: str
    server: str
    message: str
    mode: str = "form"
    """"form": fill ``schema``; "url": open ``url`` out of band, then say whether you did."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str = ""


@dataclass(frozen=True)
class ElicitReply:
    """The user's answer: accept (with content in form mode), decline or cancel."""

    action: Action
    content: Mapping[str, Value] = field(default_factory=dict)
