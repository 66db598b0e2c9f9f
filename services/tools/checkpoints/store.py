"""One workspace's checkpoint store: refs (one JSON file per checkpoint), objects and the journal."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from services.tools.checkpoints.errors import UnknownCheckpoint
from services.tools.checkpoints.objects import Entry, ObjectStore
from services.tools.checkpoints.restore import Change, apply, changes, plan
from services.tools.checkpoints.snapshot import Rules, Scan, Skipped, StatCache, StatKey, scan
from services.tools.checkpoints.watcher import Watcher

log = logging.getLogger("ai_coding.tools.checkpoints")


@dataclass(frozen=True)
class Checkpoint:
    """A snapshot of the workspace taken for a session, before ``label`` (a tool call, a restore)."""

    checkpoint_id: str
    session_id: str
    label: str
    call_id: str
    created: float
    tree: str
    files: int
    read: int
    skipped: list[Skipped] = field(default_factory=list)


@dataclass
class RestoreReport:
    """What a restore did: the checkpoint taken just before it (restore to it = redo), the paths
    changed since the baseline (kept unless overwritten), and what it could not restore."""

    target: str
    redo_checkpoint_id: str
    changed_since: list[str]
    kept: list[str]
    not_restorable: list[str]
    written: int
    removed: int
    dry_run: bool


AFTER_RESTORE = "after restore to"
CAP_LOW = 0.9
"""A store over its cap is brought down to this fraction of it."""


def workspace_key(root: Path) -> str:
    return hashlib.sha256(str(root).encode()).hexdigest()[:16]


def _dump(path: Path, data: object, durable: bool = False) -> None:
    """Write ``path`` whole (temp file + rename: a kill leaves the old or the new). ``durable``
    also syncs it to disk first (the journal: it must be there before the workspace changes);
    a ref is not synced, so a power cut can lose the newest checkpoints, never the workspace."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as handle:
        handle.write(json.dumps(data))
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(tmp, path)


class CheckpointStore:
    """Checkpoints of the workspace at ``root``, kept in ``home`` (outside it)."""

    def __init__(self, home: Path, root: Path, rules: Rules, max_store_bytes: int, max_age_s: float = 0.0) -> None:
        self.home, self.root, self.rules, self.max_store_bytes = home, root, rules, max_store_bytes
        self.max_age_s = max_age_s
        self._oldest: float | None = None
        """When the oldest checkpoint was taken (None: not known; read again at the next one)."""
        self.objects = ObjectStore(home / "objects")
        self.refs = home / "refs"
        self.refs.mkdir(exist_ok=True)
        self.journal = home / "journal.json"
        self.cache = StatCache()
        self.watcher = Watcher()
        self.lock = threading.Lock()
        self._size: int | None = None
        self._loaded: dict[str, Checkpoint] = {}
        """Refs read so far (a ref never changes; a dropped one leaves this when it is deleted)."""
        self._last_id = ""
        self._warmed: set[str] = set()
        """The files the opening scan read: the next checkpoint counts them as its own."""
        meta = home / "meta.json"
        if not meta.exists():
            _dump(meta, {"root": str(root)})

    # ------------------------------------------------------------ refs

    def _load(self, path: Path) -> Checkpoint:
        raw = json.loads(path.read_text())
        raw["skipped"] = [Skipped(**s) for s in raw.get("skipped", [])]
        return Checkpoint(**raw)

    def checkpoints(self, session_id: str = "") -> list[Checkpoint]:
        """Oldest first; only ``session_id``'s when given (one listing; a ref is read once)."""
        names = sorted(n.removesuffix(".json") for n in os.listdir(self.refs)
                       if n.startswith("cp-") and n.endswith(".json"))
        loaded = self._loaded
        self._loaded = {}
        for name in names:
            found = loaded.get(name)
            self._loaded[name] = found if found is not None else self._load(self.refs / f"{name}.json")
        return [c for c in self._loaded.values() if not session_id or c.session_id == session_id]

    def get(self, checkpoint_id: str) -> Checkpoint:
        path = self.refs / f"{checkpoint_id}.json"
        if "/" in checkpoint_id or not checkpoint_id or not path.exists():
            raise UnknownCheckpoint(f"there is no checkpoint {checkpoint_id!r} for {self.root}",
                                    hint="List them with `ai-coding checkpoints list`; pruned ones are gone.")
        found = self._loaded.get(checkpoint_id)
        return found if found is not None else self._load(path)

    def _next_id(self) -> str:
        """One past the newest ref (the refs are listed once per process, then counted)."""
        last = self._last_id or max((p.stem for p in self.refs.glob("cp-*.json")), default="cp-000000")
        number = int(last.removeprefix("cp-")) + 1
        while (self.refs / f"cp-{number:06d}.json").exists():  # another process took it
            number += 1
        self._last_id = f"cp-{number:06d}"
        return self._last_id

    def _drop(self, checkpoint: Checkpoint) -> None:
        (self.refs / f"{checkpoint.checkpoint_id}.json").unlink(missing_ok=True)
        self._loaded.pop(checkpoint.checkpoint_id, None)

    # ------------------------------------------------------------ operations

    def create(self, session_id: str, label: str, call_id: str = "") -> Checkpoint:
        """Snapshot the workspace now (only changed files are read) and record it."""
        with self.lock:
            return self._create(session_id, label, call_id)

    def _create(self, session_id: str, label: str, call_id: str, durable: bool = False) -> Checkpoint:
        """``durable``: its new objects are synced to disk (a restore's starting point)."""
        before = self.objects.written
        result = scan(self.root, self.objects, self.cache, self.rules, self.watcher)
        self.objects.flush(durable)
        if self._warmed:  # what it read and is still there
            result.read_paths |= {path for path in self._warmed if path in self.cache.files}
            self._warmed = set()
        read = result.read
        checkpoint = Checkpoint(self._next_id(), session_id, label, call_id, time.time(), result.tree,
                                result.files, read, result.skipped)
        _dump(self.refs / f"{checkpoint.checkpoint_id}.json", asdict(checkpoint))
        self._loaded[checkpoint.checkpoint_id] = checkpoint
        self._size = None if self._size is None else self._size + self.objects.written - before
        self._enforce_cap(keep=checkpoint.checkpoint_id)
        return checkpoint

    def warm(self) -> None:
        """Scan the workspace into the stat cache and the objects, taking no checkpoint (a session
        opened: its first step's checkpoint then costs what that step changed)."""
        with self.lock:
            if not self.cache.dirs:
                self._warmed = self._scan().read_paths

    def _scan(self) -> Scan:
        """The workspace now, its new objects written (no ref)."""
        result = scan(self.root, self.objects, self.cache, self.rules, self.watcher)
        self.objects.flush()
        return result

    def diff(self, from_id: str, to_id: str = "") -> tuple[list[Change], dict[str, Entry], dict[str, Entry]]:
        """What changed from one checkpoint to another (``to_id`` empty: to the workspace now), with
        the entries of both sides where they differ."""
        with self.lock:
            start = self.get(from_id).tree
            before, after = self.objects.diff_trees(start, self.get(to_id).tree if to_id else self._scan().tree)
        return changes(before, after), before, after

    def restore(self, session_id: str, checkpoint_id: str, baseline_id: str = "", overwrite_changed: bool = False,
                dry_run: bool = False) -> RestoreReport:
        """Bring the workspace to ``checkpoint_id``. Paths changed since ``baseline_id`` (the state
        the caller last saw, e.g. its end-of-turn checkpoint; empty: no comparison) are kept unless
        ``overwrite_changed``. A checkpoint of the
        workspace is taken first (restoring it is the redo); a journal makes it all-or-nothing."""
        with self.lock:
            target = self.get(checkpoint_id)
            baseline = self._baseline(session_id, baseline_id)
            if dry_run:
                now = self._scan()
                redo_id, current_tree, skipped_now = "", now.tree, now.skipped
            else:
                redo = self._create(session_id, f"before restore to {checkpoint_id}", "", durable=True)
                redo_id, current_tree, skipped_now = redo.checkpoint_id, redo.tree, redo.skipped
            current, wanted = self.objects.diff_trees(current_tree, target.tree)
            changed = [] if baseline is None else [
                c.path for c in changes(*self.objects.diff_trees(baseline.tree, current_tree))]
            keep = {s.path for s in skipped_now} | (set() if overwrite_changed else set(changed))
            steps = plan(current, wanted, keep)
            problems: list[str] = []
            if not dry_run:
                _dump(self.journal, {"target": target.tree, "before": current_tree, "keep": sorted(keep),
                                     "checkpoint_id": checkpoint_id, "session_id": session_id}, durable=True)
                written: dict[str, tuple[StatKey, str]] = {}
                problems = apply(self.root, self.objects, steps, written)
                self.cache.files.update(written)
                self._create(session_id, f"{AFTER_RESTORE} {checkpoint_id}", "")
                self.journal.unlink()
            not_restorable = [f"{s.path}: {s.why}" for s in target.skipped] + problems
            return RestoreReport(checkpoint_id, redo_id, changed, steps.kept, not_restorable, len(steps.write),
                                 len(steps.remove), dry_run)

    def _baseline(self, session_id: str, baseline_id: str) -> Checkpoint | None:
        """The caller's baseline, or the session's last restore when that came later (a restore's
        own changes are not the user's, even when the caller never heard of it: it was killed)."""
        if not baseline_id:
            return None
        baseline = self.get(baseline_id)
        restores = [c for c in self.checkpoints(session_id)
                    if c.label.startswith(AFTER_RESTORE) and c.checkpoint_id > baseline_id]
        return restores[-1] if restores else baseline

    def recover(self) -> str:
        """Finish (or, when the target's objects are gone, roll back) a restore a kill interrupted;
        the one line saying which, or "" when there was none."""
        if not self.journal.exists():
            return ""
        with self.lock:
            entry = json.loads(self.journal.read_text())
            keep = set(entry["keep"])
            now = self._scan().tree
            try:
                (current, wanted), verb = self.objects.diff_trees(now, entry["target"]), "finished"
                missing = [p for p, e in wanted.items() if e.kind == "f" and not self.objects.has(e.ref)]
                if missing:
                    raise FileNotFoundError(missing[0])
            except (OSError, ValueError):
                (current, wanted), verb = self.objects.diff_trees(now, entry["before"]), "rolled back"
            problems = apply(self.root, self.objects, plan(current, wanted, keep))
            self._create(str(entry.get("session_id", "")), f"{AFTER_RESTORE} {entry['checkpoint_id']} ({verb})", "")
            self.journal.unlink()
        tail = f" ({len(problems)} paths could not be restored: {problems[0]})" if problems else ""
        return (f"checkpoints: the restore of {self.root} to {entry['checkpoint_id']} was interrupted; "
                f"{verb} it{tail}")

    def prune(self, session_id: str = "", keep_last: int = 0) -> tuple[int, int]:
        """Drop ``session_id``'s checkpoints (all when empty) but the last ``keep_last``, then the
        objects nothing references; (checkpoints dropped, bytes freed)."""
        with self.lock:
            doomed = self.checkpoints(session_id)
            doomed = doomed[:-keep_last] if keep_last else doomed
            for checkpoint in doomed:
                self._drop(checkpoint)
            return len(doomed), self._sweep()

    def prune_orphans(self, live_sessions: set[str]) -> tuple[int, int]:
        """Drop the checkpoints of sessions not in ``live_sessions`` (deleted or pruned ones), then
        the objects nothing references. (checkpoints dropped, bytes freed)."""
        with self.lock:
            doomed = [c for c in self.checkpoints() if c.session_id not in live_sessions]
            for checkpoint in doomed:
                self._drop(checkpoint)
            if doomed:
                log.info("checkpoints: dropped %d checkpoints of deleted sessions of %s", len(doomed), self.root)
            return len(doomed), self._sweep() if doomed else 0

    def size(self) -> int:
        if self._size is None:
            self._size = self.objects.size()
        return self._size

    def _sweep(self) -> int:
        keep: set[str] = set()
        for checkpoint in self.checkpoints():
            self.objects.reachable(checkpoint.tree, keep)
        freed = self.objects.sweep(keep)
        self.cache.files = {p: v for p, v in self.cache.files.items() if v[1] in keep}
        self.cache.dirs = {p: v for p, v in self.cache.dirs.items() if v[1] in keep}
        self.cache.skipped = {p: v for p, v in self.cache.skipped.items() if p in self.cache.dirs}
        self.cache.counts = {p: v for p, v in self.cache.counts.items() if p in self.cache.dirs}
        self.cache.own = {p: v for p, v in self.cache.own.items() if p in self.cache.dirs}
        self._size = None
        self._oldest = None
        return freed

    def _enforce_age(self, keep: str) -> None:
        """Drop checkpoints older than ``max_age_s`` (never ``keep``). The refs are read only when
        the oldest one's time is not known or is past the limit, so a checkpoint costs no listing."""
        if self.max_age_s <= 0:
            return
        cutoff = time.time() - self.max_age_s
        if self._oldest is None:
            self._oldest = min((c.created for c in self.checkpoints()), default=time.time())
        if self._oldest >= cutoff:
            return
        found = self.checkpoints()
        doomed = [c for c in found if c.created < cutoff and c.checkpoint_id != keep]
        for checkpoint in doomed:
            self._drop(checkpoint)
        gone = {c.checkpoint_id for c in doomed}
        self._oldest = min((c.created for c in found if c.checkpoint_id not in gone), default=time.time())
        if doomed:
            log.info("checkpoints: dropped %d checkpoints of %s older than the age limit", len(doomed), self.root)
            self._sweep()

    def _enforce_cap(self, keep: str) -> None:
        """Past the age limit, then over ``max_store_bytes``: drop the oldest checkpoints (never
        ``keep``), until none is too old and the store is under 90% of its cap (so the sweep, which
        reads every checkpoint's trees, runs once per tenth of the cap, not at every step)."""
        self._enforce_age(keep)
        if self.max_store_bytes <= 0 or self.size() <= self.max_store_bytes:
            return
        for checkpoint in self.checkpoints():
            if checkpoint.checkpoint_id == keep:
                break
            self._drop(checkpoint)
            log.info("checkpoints: the store of %s is over its cap; dropped %s", self.root, checkpoint.checkpoint_id)
            if self._sweep() and self.size() <= self.max_store_bytes * CAP_LOW:
                break
