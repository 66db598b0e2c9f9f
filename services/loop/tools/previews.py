"""Human previews for approval requests and tool titles (pure functions).

A write or edit is previewed by the tools service's dry run: the real diff
against the file on disk (hunk line numbers, context), or the error the call
would meet. Without an answer, the preview falls back to a diff of the call's
own arguments and says so.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from typing import Any

from services.loop.core.ports import ToolOutcome

MAX_PREVIEW_LINES = 80
# A dry run's error can carry a long hint (the closest passages of the file); the
# preview keeps its head so the diff of the intended change stays on screen.
MAX_WARNING_LINES = 16
DRY_RUN_TOOLS = frozenset({"write", "edit"})
# Tools that run commands: a file they run before a write/edit may be anything afterwards.
COMMAND_TOOLS = frozenset({"bash", "job_start"})
WARNING_MARK = "⚠ "
EARLIER_NOTE = "({what} the file as it is now: an earlier call of this batch runs first and may change it)"


def wants_dry_run(tool: str) -> bool:
    """Whether an approval preview of ``tool`` asks the tools service for a dry run."""
    return tool in DRY_RUN_TOOLS


def changed_first(arguments: dict[str, Any], earlier: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether a call cleared earlier in the same batch (it runs first) may change this call's file:
    a write/edit of the same path, or a command, which may change anything."""
    path = posixpath.normpath(_path(arguments))
    return any(tool in COMMAND_TOOLS or (tool in DRY_RUN_TOOLS and posixpath.normpath(_path(args)) == path)
               for tool, args in earlier)


def checked_preview(tool: str, arguments: dict[str, Any], dry_run: ToolOutcome | None, no_answer: str = "",
                    changed_first: bool = False) -> str:
    """The approval preview of a write/edit given its dry run (None: none came, ``no_answer`` says why,
    e.g. "did not answer within 2 s").

    ``changed_first``: an earlier call of the batch may change the file before this one runs, so
    the dry run (against the file as it is now) is shown as such rather than as the outcome."""
    if dry_run is None:
        note = (f"(no file context: the tool service {no_answer or 'gave no preview'}; "
                "this diff shows only the call's own arguments)")
        return f"{note}\n{approval_preview(tool, arguments)}"
    if dry_run.ok:
        diff = str(dry_run.data.get("diff", dry_run.output))
        if not diff.strip():
            return f"{_path(arguments)}: no change (the new content equals the file)"
        lines = diff.rstrip("\n").split("\n")
        return _cap([EARLIER_NOTE.format(what="diff against"), *lines] if changed_first else lines)
    # The tools service words a failure as "Error: <message>" then its hint, one per line.
    detail = (dry_run.output.strip() or dry_run.error_message.strip()).split("\n")
    detail[0] = detail[0].removeprefix("Error: ")
    if len(detail) > MAX_WARNING_LINES:
        detail = [*detail[:MAX_WARNING_LINES], "..."]
    verdict = "would fail on the file as it is now" if changed_first else "will fail"
    warning = [f"{WARNING_MARK}this {tool} {verdict}: {dry_run.error_code or 'error'}: {detail[0]}", *detail[1:]]
    if changed_first:
        warning.append(EARLIER_NOTE.format(what="checked against"))
    intended = approval_preview(tool, arguments)
    return "\n".join([*warning, "(the intended change, from the call's arguments:)", intended])


def approval_preview(tool: str, arguments: dict[str, Any]) -> str:
    """What the user approves: the command, the path, or a unified diff for write/edit."""
    if tool == "bash":
        command = str(arguments.get("command", ""))
        return f"{command}\n{RESTORABLE_NOTE}" if DELETES.search(command) else command
    path = _path(arguments)
    if tool == "edit":
        old = str(arguments.get("old_string", "")).splitlines()
        new = str(arguments.get("new_string", "")).splitlines()
        return _cap(list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="")))
    if tool == "write":
        content = str(arguments.get("content", "")).splitlines()
        return _cap(list(difflib.unified_diff([], content, "/dev/null", f"b/{path}", lineterm="")))
    if path:
        return path
    return ", ".join(f"{k}={str(v)[:60]}" for k, v in arguments.items())


DELETES = re.compile(r"(^|[\s;&|(])(rm|rmdir|unlink|shred)\s|\s-delete\b|\bgit\s+clean\b|(^|[\s;&|])mv\s")
RESTORABLE_NOTE = ("(what it deletes or overwrites is restorable with /undo: a checkpoint is taken before it; "
                   "see docs/checkpoints.md for what is not tracked)")


def _path(arguments: dict[str, Any]) -> str:
    return str(arguments.get("path") or arguments.get("file_path") or "")


def _cap(lines: list[str]) -> str:
    if len(lines) > MAX_PREVIEW_LINES:
        cut = len(lines) - MAX_PREVIEW_LINES
        lines = [*lines[:MAX_PREVIEW_LINES], f"... {cut} more line(s)"]
    return "\n".join(lines)
