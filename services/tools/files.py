"""read, write and edit: blocking file work (the runtime runs it in a thread)."""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.tools import limits
from services.tools.domain import ToolOutput
from services.tools.editing import replace_exact, unified_diff, with_line_endings_of
from services.tools.errors import ToolError
from services.tools.filestate import FileStateTracker, snapshot_of
from services.tools.paths import (
    check_not_protected,
    display_path,
    read_inside,
    resolve_path,
    verify_fd_inside,
)


def _existing_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError("not_found", f"{shown} does not exist", "Check the path with glob.")
    if not path.is_file():
        raise ToolError("not_a_file", f"{shown} is not a regular file", "Use glob to list a directory.")


def decode_text(data: bytes, shown: str) -> str:
    """The file as text, or ``binary_file`` when it holds NUL bytes or is not UTF-8."""
    if b"\0" in data[: limits.BINARY_SNIFF_BYTES]:
        raise ToolError("binary_file", f"{shown} is a binary file",
                        "Inspect it with bash (e.g. `file`, `xxd | head`) instead of read.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError("binary_file", f"{shown} is not UTF-8 text",
                        "Inspect it with bash (e.g. `iconv` or `xxd | head`) instead of read.") from None


def number_lines(lines: Sequence[str], first: int) -> str:
    """``cat -n`` style: right-aligned number, a tab, the line (long lines cut with a marker)."""
    out = []
    for i, line in enumerate(lines, start=first):
        if len(line) > limits.READ_LINE_MAX_CHARS:
            line = line[: limits.READ_LINE_MAX_CHARS] + f" [... {len(line) - limits.READ_LINE_MAX_CHARS} chars cut]"
        out.append(f"{i:>6}\t{line}")
    return "\n".join(out)


def read_file(args: dict[str, Any], roots: Sequence[Path], tracker: FileStateTracker) -> ToolOutput:
    """Line-numbered page of a text file; records the file's snapshot."""
    path = resolve_path(args["path"], roots)
    shown = display_path(path, roots)
    _existing_file(path, shown)
    size = path.stat().st_size
    if size > limits.READ_MAX_BYTES:
        raise ToolError("file_too_large", f"{shown} is {size:,} bytes; read stops at {limits.READ_MAX_BYTES:,}",
                        "Search it with grep, or look at parts with bash (`head`, `sed -n 'A,Bp'`).")
    data = read_inside(path, shown, roots)
    text = decode_text(data, shown)
    tracker.record(path, snapshot_of(path, data))
    lines = text.splitlines()
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", limits.READ_DEFAULT_LIMIT))
    page = lines[offset - 1 : offset - 1 + limit]
    last = offset - 1 + len(page)
    more = last < len(lines)
    output = number_lines(page, offset)
    if not lines:
        output = f"({shown} is empty)"
    elif not page:
        output = f"({shown} has {len(lines)} lines; offset {offset} is past the end)"
    elif more:
        output += f"\n[{len(lines) - last} more lines: read again with offset={last + 1}]"
    data_out = {"path": shown, "total_lines": len(lines), "offset": offset, "lines_returned": len(page),
                "truncated": more}
    return ToolOutput(output, data_out)


def _atomic_write(path: Path, content: str, shown: str, roots: Sequence[Path]) -> None:
    """Write through a temp file and rename, keeping the file's mode. The temp file is checked to be
    inside the roots once created, so a parent directory swapped for a symlink is caught."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # An existing file keeps its mode; a new one gets what open() would give it (mkstemp's is 0600).
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~process_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        verify_fd_inside(fd, shown, roots)
    except ToolError:
        os.unlink(tmp)
        raise
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@functools.cache
def process_umask() -> int:
    """This process's umask, read without changing it (os.umask would, process-wide, for a moment)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def write_file(args: dict[str, Any], roots: Sequence[Path], tracker: FileStateTracker,
               dry_run: bool = False) -> ToolOutput:
    """Create or replace a file (replacing needs a fresh read in this session); ``dry_run`` runs every
    check and returns the diff without writing."""
    with tracker.write_lock:
        return _write_file(args, roots, tracker, dry_run)


def _write_file(args: dict[str, Any], roots: Sequence[Path], tracker: FileStateTracker,
                dry_run: bool) -> ToolOutput:
    path = resolve_path(args["path"], roots)
    check_not_protected(path, roots)
    shown = display_path(path, roots)
    content: str = args["content"]
    before = ""
    existed = path.exists()
    if existed:
        if not path.is_file():
            raise ToolError("not_a_file", f"{shown} exists and is not a regular file", "Pick another path.")
        tracker.check_writable(path, shown)
        before = decode_text(read_inside(path, shown, roots), shown)
        content = with_line_endings_of(before, content)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if dry_run:
        diff = unified_diff(before, content, shown)
        return ToolOutput(diff or f"{shown} unchanged.",
                          {"path": shown, "created": not existed, "lines": lines, "diff": diff, "dry_run": True})
    _atomic_write(path, content, shown, roots)
    tracker.record(path, snapshot_of(path))
    if existed:
        diff = unified_diff(before, content, shown)
        output = f"Replaced {shown} ({lines} lines).\n{diff}" if diff else f"{shown} unchanged."
    else:
        diff = ""
        output = f"Created {shown} ({lines} lines)."
    return ToolOutput(output, {"path": shown, "created": not existed, "lines": lines, "diff": diff})


def edit_file(args: dict[str, Any], roots: Sequence[Path], tracker: FileStateTracker,
              dry_run: bool = False) -> ToolOutput:
    """Exact string replacement with the stale-read guard; returns a unified diff (and only that
    when ``dry_run``)."""
    with tracker.write_lock:
        return _edit_file(args, roots, tracker, dry_run)


def _edit_file(args: dict[str, Any], roots: Sequence[Path], tracker: FileStateTracker,
               dry_run: bool) -> ToolOutput:
    path = resolve_path(args["path"], roots)
    check_not_protected(path, roots)
    shown = display_path(path, roots)
    _existing_file(path, shown)
    tracker.check_writable(path, shown)
    before = decode_text(read_inside(path, shown, roots), shown)
    after, count = replace_exact(before, args["old_string"], args["new_string"],
                                 bool(args.get("replace_all", False)), shown)
    if dry_run:
        diff = unified_diff(before, after, shown)
        return ToolOutput(diff, {"path": shown, "replacements": count, "diff": diff, "dry_run": True})
    _atomic_write(path, after, shown, roots)
    tracker.record(path, snapshot_of(path))
    diff = unified_diff(before, after, shown)
    return ToolOutput(f"Edited {shown}: {count} replacement{'s' if count != 1 else ''}.\n{diff}",
                      {"path": shown, "replacements": count, "diff": diff})
