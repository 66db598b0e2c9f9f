"""Bring a workspace to a snapshot: a plan (pure) and its application (idempotent, so a journal
can finish it after a kill)."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from services.tools.checkpoints.objects import DIR, FILE, LINK, Entry, ObjectStore
from services.tools.checkpoints.snapshot import StatKey, stat_key


@dataclass(frozen=True)
class Change:
    """A path that differs between two snapshots: added, modified or deleted (in ``after``)."""

    path: str
    kind: str


@dataclass
class Plan:
    """What a restore does: paths to remove (deepest first), then to write (shallowest first)."""

    remove: list[str] = field(default_factory=list)
    write: list[tuple[str, Entry]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def same(a: Entry, b: Entry) -> bool:
    """Equal for a restore: kind, bits and content (a file's mtime alone is no change)."""
    return a.kind == b.kind and a.mode == b.mode and (a.kind == DIR or a.ref == b.ref)


def _parents(paths: dict[str, Entry]) -> set[str]:
    return {path.rsplit("/", 1)[0] for path in paths if "/" in path}


def changes(before: dict[str, Entry], after: dict[str, Entry]) -> list[Change]:
    """Files and symlinks (and empty-dir adds/deletes) that differ, sorted by path."""
    out: list[Change] = []
    after_parents, before_parents = _parents(after), _parents(before)
    for path, entry in after.items():
        old = before.get(path)
        if old is None:
            if entry.kind != DIR or path not in after_parents:
                out.append(Change(path, "added"))
        elif not same(old, entry):
            out.append(Change(path, "modified"))
    for path, entry in before.items():
        if path not in after and (entry.kind != DIR or path not in before_parents):
            out.append(Change(path, "deleted"))
    return sorted(out, key=lambda c: c.path)


def _under(path: str, roots: set[str], holding: bool = False) -> bool:
    """``path`` is in ``roots`` or below one of them (``holding``: or holds one, so a kept file
    keeps the folders it is in)."""
    if not roots:
        return False
    return path in roots or any(path.startswith(f"{r}/") or (holding and r.startswith(f"{path}/")) for r in roots)


def plan(current: dict[str, Entry], target: dict[str, Entry], keep: set[str]) -> Plan:
    """From ``current`` to ``target``, leaving every path in (or below) ``keep`` as it is."""
    result = Plan()
    for path in sorted(current, key=lambda p: (-p.count("/"), p)):
        entry, wanted = current[path], target.get(path)
        if wanted is not None and wanted.kind == entry.kind and (entry.kind == DIR or same(entry, wanted)):
            continue
        if _under(path, keep, holding=True):
            if path in keep or entry.kind != DIR:
                result.kept.append(path)
            continue
        if wanted is None or wanted.kind != entry.kind:
            result.remove.append(path)
    for path in sorted(target, key=lambda p: (p.count("/"), p)):
        wanted, now = target[path], current.get(path)
        if now is not None and same(now, wanted):
            continue
        if _under(path, keep):
            if path not in result.kept:
                result.kept.append(path)
            continue
        result.write.append((path, wanted))
    result.kept.sort()
    return result


def apply(root: Path, objects: ObjectStore, steps: Plan, written: dict[str, tuple[StatKey, str]] | None = None
          ) -> list[str]:
    """Carry out ``steps`` below ``root``; the paths it could not (with why). ``written`` gets the
    stat key and digest of each file written (the stat cache then need not read it again)."""
    problems: list[str] = []
    for rel in steps.remove:
        path = root / rel
        try:
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # its tracked contents went first; what is left (excluded names) stays
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            problems.append(f"{rel}: not removed ({exc.strerror}: it holds files checkpoints do not track)"
                            if path.is_dir() else f"{rel}: could not remove it ({exc.strerror})")
    dir_modes: list[tuple[Path, int]] = []
    for rel, entry in steps.write:
        path = root / rel
        try:
            _write(path, entry, objects)
            if entry.kind == FILE and written is not None:
                now = os.lstat(path)
                if stat.S_ISREG(now.st_mode) and (now.st_size, now.st_mtime_ns) == (entry.size, entry.mtime_ns):
                    written[rel] = (stat_key(now), entry.ref)  # else changed since by someone: read it again
        except OSError as exc:
            problems.append(f"{rel}: could not restore it ({exc.strerror})")
            continue
        if entry.kind == DIR:
            dir_modes.append((path, entry.mode))
    for path, mode in reversed(dir_modes):
        os.chmod(path, mode)
    return problems


def _write(path: Path, entry: Entry, objects: ObjectStore) -> None:
    if entry.kind == FILE and _overwrite(path, entry, objects):
        return
    if path.is_symlink() or (path.exists() and path.is_dir() != (entry.kind == DIR)):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if entry.kind == DIR:
        path.mkdir(exist_ok=True)
        os.chmod(path, entry.mode | 0o700)  # writable while its contents are written; final mode after
        return
    tmp = path.with_name(f".{path.name}.ai-coding-restore")
    tmp.unlink(missing_ok=True)
    if entry.kind == LINK:
        os.symlink(entry.ref, tmp)
    elif entry.kind == FILE:
        with open(tmp, "wb") as handle:
            handle.write(objects.get(entry.ref))
        os.chmod(tmp, entry.mode)
        os.utime(tmp, ns=(entry.mtime_ns, entry.mtime_ns))
    os.replace(tmp, path)


def _overwrite(path: Path, entry: Entry, objects: ObjectStore) -> bool:
    """Write a file's bytes over the regular file already at ``path``, in the same inode: replacing
    or truncating a file frees its blocks, which takes milliseconds a file on a disk mounted with
    ``discard``. Only a file with one name (a hard link elsewhere keeps its bytes) that is open for
    writing (not a running program); a kill midway is finished from the journal. False: the caller
    replaces the path instead."""
    data = objects.get(entry.ref)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_nlink != 1:
            return False
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
        os.fchmod(fd, entry.mode)
        os.utime(fd, ns=(entry.mtime_ns, entry.mtime_ns))
    finally:
        os.close(fd)
    return True
