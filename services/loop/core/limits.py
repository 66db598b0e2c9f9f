"""Input limits the loop enforces at its edge (a Start or QueueInput), before any work is done.

Each limit is documented in the README's "Limits" table; the tool service keeps its own
(services/tools/limits.py: read and write stop at 10 MB, so what the agent writes it can read).
"""

from __future__ import annotations

from pathlib import Path

from services.loop.core.errors import BadRequest

PROMPT_MAX_BYTES = 1024 * 1024
"""One prompt (a turn's input or queued input): 1 MiB of UTF-8, ~250k tokens, past every
common context window already. Larger material belongs in a workspace file the agent reads."""
SESSION_MAX_BYTES = 64 * 1024 * 1024
"""A session's files on disk (snapshot + journal): a new turn is refused beyond 64 MiB. The
largest sessions seen in use were a few MB; tool outputs are capped at 50,000 characters each."""


class InputTooLarge(BadRequest):
    """A prompt or a session is over its documented limit."""

    reason = "input_too_large"


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def check_prompt(text: str) -> None:
    """Refuse a prompt over :data:`PROMPT_MAX_BYTES`."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > PROMPT_MAX_BYTES:
        raise InputTooLarge(
            f"the prompt is {size:,} bytes; a prompt may be at most {PROMPT_MAX_BYTES:,} bytes (1 MiB)",
            hint="Put the material in a file in the workspace and ask the agent to read it.",
        )


def check_session_size(files: list[Path], session_id: str) -> None:
    """Refuse a new turn in a session whose files add up to more than :data:`SESSION_MAX_BYTES`."""
    size = sum(p.stat().st_size for p in files if p.exists())
    if size > SESSION_MAX_BYTES:
        raise InputTooLarge(
            f"session {session_id} holds {_mib(size)} on disk; a session may hold at most {_mib(SESSION_MAX_BYTES)}",
            hint="Start a new session (leave out --session); this one stays readable with `ai-coding sessions show`.",
        )
