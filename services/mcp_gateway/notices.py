"""What a connected server tells the gateway unasked: its tool list changed, a log message.

``notifications/tools/list_changed`` sets :attr:`ServerNotices.tools_changed`; the server's owner
task (services/mcp_gateway/supervisor.py) lists the tools again, so the next catalog has them
(the loop sees a changed catalog: one declared cache break). ``notifications/message`` goes to the
gateway's log (``ai-coding logs mcp_gateway``) and the newest :data:`KEEP` per server are kept
for the gateway's run, across reconnects, with a local server's stderr lines
(``ai-coding mcp status --logs N`` shows them).
The level the gateway asks for (``logging/setLevel``) is the server's ``log_level`` setting.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from typing import Any

from services.mcp_gateway.domain import LogLine

log = logging.getLogger("ai_coding.mcp_gateway.server_log")

KEEP = 100
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL = "info"
# MCP's syslog levels onto Python's.
_PYTHON_LEVEL = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
                 "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
                 "emergency": logging.CRITICAL}


def kept_lines() -> deque[LogLine]:
    """A server's kept log lines (its supervisor holds them for the gateway's run)."""
    return deque(maxlen=KEEP)


def log_text(data: Any) -> str:
    """A log message's data on one line (strings as is, anything else as JSON)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return " ".join(text.split())[:2000]


class ServerNotices:
    """One connection's notifications (made before the SDK client, handed to it as callbacks)."""

    def __init__(self, server: str, lines: deque[LogLine] | None = None) -> None:
        self.server = server
        self.tools_changed = asyncio.Event()
        self.lines: deque[LogLine] = lines if lines is not None else kept_lines()

    async def on_message(self, message: Any) -> None:
        """The SDK's ``message_handler``: server notifications (and transport exceptions, ignored here)."""
        if getattr(message, "method", "") == "notifications/tools/list_changed":
            log.info("mcp server %s: its tool list changed; listing again", self.server)
            self.tools_changed.set()

    async def on_log(self, params: Any) -> None:
        """The SDK's ``logging_callback``: one ``notifications/message``."""
        level = str(getattr(params, "level", "info"))
        line = LogLine(level, str(getattr(params, "logger", None) or ""), log_text(getattr(params, "data", "")))
        self.lines.append(line)
        where = f"{self.server}/{line.logger}" if line.logger else self.server
        log.log(_PYTHON_LEVEL.get(level, logging.INFO), "mcp server %s [%s] %s", where, level, line.text)
