"""read, write and edit: blocking file work (the runtime runs it in a thread)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from services.tools import limits
from services.tools.domain import ToolOutput
from services.tools.editing import replace_exact, unified_diff, with_line_endings_of
from services.tools.errors import ToolError
from services.tools.filestate import FileStateTracker, Snapshot, snapshot_of
from services.tools.paths import (
    check_not_protected,
    display_path,
    open_parent_dir,
    read_inside,
    resolve_path,
)
from services.tools.schemas import EditArgs, ReadArgs, WriteArgs


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


def read_file(args: ReadArgs, roots: Sequence[Path], tracker: FileStateTracker) -> ToolOutput:
    """Line-numbered page of a text file; records the file's snapshot."""
    path = resolve_path(args.path, roots)
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
    offset, limit = args.offset, args.limit
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


def _atomic_write(path: Path, content: str, shown: str, roots: Sequence[Path]) -> Snapshot:
    """Write through a temp file and rename, keeping the file's mode; returns the new snapshot.

    Every step (creating missing directories, creating the temp file, reading the old mode, the
    rename) is relative to a descriptor of the parent directory reached without following links
    (:func:`open_parent_dir`), so a directory swapped for a symlink after the path check cannot
    move any of it outside the workspace."""
    data = content.encode("utf-8")
    parent, name = open_parent_dir(path, roots, shown, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            mode = 0o666 & ~process_umask()  # what open() would give a new file (mkstemp's is 0600)
        else:
            if not stat.S_ISREG(st.st_mode):
                raise ToolError("not_a_file", f"{shown} is not a regular file (it may have just changed)",
                                "Pick another path.")
            mode = st.st_mode & 0o7777
        tmp = _create_temp(parent, name)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                written = os.fstat(handle.fileno())
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
    finally:
        os.close(parent)
    return Snapshot(written.st_mtime_ns, written.st_size, hashlib.sha256(data).hexdigest())


def _create_temp(parent: int, name: str) -> str:
    """A new empty temp file next to ``name`` (O_EXCL: never an existing file or link)."""
    for _ in range(100):
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=parent))
        except FileExistsError:
            continue
        return tmp
    raise ToolError("io_error", f"could not create a temporary file next to {name}", "Try again.")


@functools.cache
def process_umask() -> int:
    """This process's umask, read without changing it (os.umask would, process-wide, for a moment)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def write_file(args: WriteArgs, roots: Sequence[Path], tracker: FileStateTracker,
               dry_run: bool = False) -> ToolOutput:
    """Create or replace a file (replacing needs a fresh read in this session); ``dry_run`` runs every
    check and returns the diff without writing."""
    with tracker.write_lock:
        return _write_file(args, roots, tracker, dry_run)


def _write_file(args: WriteArgs, roots: Sequence[Path], tracker: FileStateTracker,
                dry_run: bool) -> ToolOutput:
    path = resolve_path(args.path, roots)
    check_not_protected(path, roots)
    shown = display_path(path, roots)
    content = args.content
    before = ""
    existed = path.exists()
    if existed:
        if not path.is_file():
            raise ToolError("not_a_file", f"{shown} exists and is not a regular file", "Pick another path.")
        tracker.check_writable(path, shown)
        before = decode_text(read_inside(path, shown, roots), shown)
        content = with_line_endings_of(before, content)
    _check_write_size(content, shown)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if dry_run:
        diff = unified_diff(before, content, shown)
        return ToolOutput(diff or f"{shown} unchanged.",
                          {"path": shown, "created": not existed, "lines": lines, "diff": diff, "dry_run": True})
    tracker.record(path, _atomic_write(path, content, shown, roots))
    if existed:
        diff = unified_diff(before, content, shown)
        output = f"Replaced {shown} ({lines} lines).\n{diff}" if diff else f"{shown} unchanged."
    else:
        diff = ""
        output = f"Created {shown} ({lines} lines)."
    return ToolOutput(output, {"path": shown, "created": not existed, "lines": lines, "diff": diff})


def _check_write_size(content: str, shown: str) -> None:
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > limits.WRITE_MAX_BYTES:
        raise ToolError("content_too_large", f"the new content of {shown} would be {size:,} bytes; write and edit "
                        f"stop at {limits.WRITE_MAX_BYTES:,} (what read accepts)",
                        "Split it into several smaller files, or generate it with a bash command.")


def edit_file(args: EditArgs, roots: Sequence[Path], tracker: FileStateTracker,
              dry_run: bool = False) -> ToolOutput:
    """Exact string replacement with the stale-read guard; returns a unified diff (and only that
    when ``dry_run``)."""
    with tracker.write_lock:
        return _edit_file(args, roots, tracker, dry_run)


def _edit_file(args: EditArgs, roots: Sequence[Path], tracker: FileStateTracker,
               dry_run: bool) -> ToolOutput:
    path = resolve_path(args.path, roots)
    check_not_protected(path, roots)
    shown = display_path(path, roots)
    _existing_file(path, shown)
    tracker.check_writable(path, shown)
    before = decode_text(read_inside(path, shown, roots), shown)
    after, count = replace_exact(before, args.old_string, args.new_string, args.replace_all, shown)
    _check_write_size(after, shown)
    if dry_run:
        diff = unified_diff(before, after, shown)
        return ToolOutput(diff, {"path": shown, "replacements": count, "diff": diff, "dry_run": True})
    tracker.record(path, _atomic_write(path, after, shown, roots))
    diff = unified_diff(before, after, shown)
    return ToolOutput(f"Edited {shown}: {count} replacement{'s' if count != 1 else ''}.\n{diff}",
                      {"path": shown, "replacements": count, "diff": diff})
