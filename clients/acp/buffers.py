"""The loop's buffer requests answered with the editor's ``fs/read_text_file``.

The loop asks only after its sandboxed read tool read the same path from disk (inside the
workspace, through the permission gate); this side checks the path again against the session's
workspace, so an editor is never asked for a file outside it. Whatever the editor answers only
replaces the text the model sees: nothing is written through the editor (docs/editors.md says why).
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from clients.acp.rpc import Connection, PeerGone, RpcError
from clients.acp.state import Session

if TYPE_CHECKING:
    from clients.cli.connection.loop import TurnStream

ANSWER_SECONDS = 4.5
"""The editor's time to answer (the loop waits 5 s, then keeps the disk text)."""


def inside(workspace: str, path: str) -> bool:
    """``path`` (absolute) names a file under ``workspace``, links resolved."""
    if not os.path.isabs(path):
        return False
    root, real = os.path.realpath(workspace), os.path.realpath(path)
    return real != root and os.path.commonpath([root, real]) == root


async def answer(conn: Connection, session: Session, stream: TurnStream, request_id: str, path: str) -> None:
    """Ask the editor for ``path``'s text and send it up ``stream`` (None: the disk text stands)."""
    text: str | None = None
    if inside(session.workspace, path):
        try:
            result = await asyncio.wait_for(
                conn.request("fs/read_text_file", {"sessionId": session.id, "path": path}), ANSWER_SECONDS)
        except (RpcError, TimeoutError):
            result = None
        except PeerGone:
            return  # the editor left; the loop's wait ends on its own
        content = result.get("content") if isinstance(result, dict) else None
        text = content if isinstance(content, str) else None
    stream.buffer(request_id, text)
