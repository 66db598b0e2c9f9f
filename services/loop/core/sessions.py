"""Crash-safe session persistence: a JSON snapshot plus an append-only journal.

Files under ``<workspace>/.ai-coding/sessions/``:

- ``<id>.json``: the snapshot, camelCase (the spec's session shape), written
  atomically (temporary file + ``os.replace``);
- ``<id>.journal``: JSON lines appended after every model step and tool batch.
  The first line names the snapshot generation it extends; each record says at
  which message index its messages start (``at``), so replaying is idempotent.

Saving a step appends only the new messages, so its cost does not grow with
the session; the journal is folded into the snapshot at turn end when it gets
long. A kill -9 at any instant loses at most the record being written: a torn
last line (never reported saved) is dropped on load. Otherwise loading never
destroys bytes it could not use: a snapshot that does not parse is moved aside
as ``<id>.json.corrupt-<time>``, the messages that can still be decoded are
kept and the journal records that continue them are replayed; a journal with
records that could not be applied (unreadable, beyond a gap, of another
generation) is moved aside as ``<id>.journal.corrupt-<time>`` before the next
compaction replaces it. Warnings name every file set aside.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from services.kernel.ids import new_id
from services.kernel.statedir import ensure_state_dir
from services.loop.core.errors import SessionNotFound, SessionUnreadable
from services.loop.core.pairing import repair_pairing
from services.loop.core.record import (
    JOURNALED_WHEN_CHANGED,
    Message,
    Session,
    SessionSummary,
    UnreadableSession,
    message_from_disk,
    message_to_disk,
    preview_text,
)
from services.loop.core.session_files import (
    aside_path,
    atomic_write,
    check_writable,
    owner_name,
    storage_error,
)

__all__ = ["Message", "Session", "SessionStore", "SessionSummary", "UnreadableSession", "message_from_disk",
           "message_to_disk", "preview_text", "salvage_messages", "storage_error"]

SESSIONS_DIR = Path(".ai-coding") / "sessions"
# Fold the journal into the snapshot at turn end past this size: replaying a
# few MB of JSON lines on load stays well under a second.
COMPACT_JOURNAL_BYTES = 2 * 1024 * 1024
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
BOTH_CORRUPT = "its snapshot and its journal are both corrupt and no message could be recovered"


# ---- the store ----


@dataclass
class _JournalState:
    generation: int = 0
    saved_count: int = 0
    journal_bytes: int = 0
    # Kept open between saves (an open() per step costs more than the write); unbuffered, so
    # every record is in the kernel the moment save() returns and survives a kill -9.
    handle: BinaryIO | None = None
    # The bulky meta values last written (snapshot or journal): a record repeats them only when they
    # changed (replay keeps a key a record leaves out), not the compaction state on every step.
    written: dict[str, Any] = field(default_factory=dict)




class SessionStore:
    """Sessions of one workspace on disk."""

    def __init__(self, workspace: str | Path, *, fsync: bool = False) -> None:
        self.workspace = str(workspace)
        self.dir = Path(workspace) / SESSIONS_DIR
        self.fsync = fsync
        self._state: dict[str, _JournalState] = {}
        self._unwritten: set[str] = set()
        """Sessions from :meth:`new` not saved yet."""

    def snapshot_path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.json"

    def journal_path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.journal"

    def summary_path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.meta.json"

    def _make_dir(self) -> None:
        ensure_state_dir(self.workspace)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)

    def seq_path(self, session_id: str) -> Path:
        return self.dir / f"{session_id}.seq"

    def reserve_seq(self, session_id: str, mark: int) -> None:
        """Record that event numbers up to ``mark`` may be issued (before the first of them is)."""
        self._make_dir()
        atomic_write(self.seq_path(session_id), f"{mark}\n".encode(), self.fsync)

    def reserved_seq(self, session_id: str) -> int | None:
        """The last reserved event number, or None when there is none or it cannot be read."""
        try:
            return int(self.seq_path(session_id).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return None

    def write_summary(self, session: Session) -> None:
        """Write the small list-view file (at turn end and with every snapshot)."""
        summary = session.summary()
        doc = {"id": summary.id, "createdAt": summary.created, "updatedAt": summary.updated,
               "preview": summary.preview, "messageCount": summary.message_count}
        atomic_write(self.summary_path(session.id), json.dumps(doc, ensure_ascii=False).encode(), False)

    def summary(self, session_id: str) -> SessionSummary:
        """A session's list view: from its summary file when that is newer than the data,
        otherwise by reading the session (never writes)."""
        meta = self.summary_path(session_id)
        try:
            fresh = meta.stat().st_mtime_ns
            data = [p.stat().st_mtime_ns for p in (self.snapshot_path(session_id), self.journal_path(session_id))
                    if p.exists()]
            if all(fresh >= t for t in data):
                doc = json.loads(meta.read_bytes())
                return SessionSummary(str(doc["id"]), float(doc["createdAt"]), float(doc["updatedAt"]),
                                      str(doc["preview"]), int(doc["messageCount"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return self.read(session_id)[0].summary()

    def list_entry(self, session_id: str) -> SessionSummary | UnreadableSession | None:
        """A session's list view, or what stops it from being read (None: it is gone meanwhile).
        A session that cannot be read is listed as such, never left out silently."""
        try:
            return self.summary(session_id)
        except SessionNotFound:
            return None
        except SessionUnreadable as err:
            return UnreadableSession(session_id, str(self._data_file(session_id)), BOTH_CORRUPT, err.hint)
        except OSError as err:
            path = err.filename or str(self._data_file(session_id))
            hint = (f"Make it readable by the loop service (user {owner_name()})" if err.errno in (errno.EACCES, errno.EPERM)
                    else "Restore it from a backup")
            return UnreadableSession(session_id, str(path), str(err.strerror or err).lower(),
                                     f"{hint}, or move it out of {self.dir}.")

    def _data_file(self, session_id: str) -> Path:
        snap = self.snapshot_path(session_id)
        return snap if snap.exists() else self.journal_path(session_id)

    def new(self, model: str = "") -> Session:
        """A new empty session, not on disk until its first :meth:`save` (a turn reaching the model),
        so a run refused before that leaves no file; a folder it could not be written to is refused now."""
        check_writable(self.dir)
        session = Session(id=new_id(), workspace=self.workspace, model=model)
        self._unwritten.add(session.id)
        return session

    def create(self, model: str = "") -> Session:
        """A new empty session, written to disk at once."""
        session = self.new(model)
        try:
            self.compact(session)
        except OSError as err:
            raise storage_error(err, self.dir) from None
        return session

    def written(self, session_id: str) -> bool:
        """Whether this store has written the session (or loaded it from disk)."""
        return session_id in self._state

    def ids(self) -> list[str]:
        """Every session id with a snapshot or a journal."""
        if not self.dir.is_dir():
            return []
        names = {p.name.split(".")[0] for p in self.dir.iterdir()
                 if p.suffix in (".json", ".journal") and not p.name.endswith(".meta.json")}
        return sorted(n for n in names if _ID_RE.match(n))

    def resolve(self, id_or_prefix: str) -> str:
        """The one session id equal to or starting with ``id_or_prefix``."""
        known = self.ids()
        if id_or_prefix in known:
            return id_or_prefix
        matches = [i for i in known if i.startswith(id_or_prefix)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SessionNotFound(
                f"no session {id_or_prefix!r} in {self.workspace}",
                hint="List them with `ai-coding sessions list`.",
            )
        raise SessionNotFound(
            f"session prefix {id_or_prefix!r} matches {len(matches)} sessions",
            hint="Type more characters of the id.",
            reason="ambiguous_session",
        )

    # -- saving --

    def save(self, session: Session) -> None:
        """Persist what changed since the last save (appends one journal record)."""
        if session.id in self._unwritten:
            # As create() would have: an empty snapshot first, so every message is in the journal
            # (a corrupt first snapshot then loses nothing the journal holds).
            self._unwritten.discard(session.id)
            self.compact(session, with_messages=False)
        state = self._state.get(session.id)
        if state is None or len(session.messages) < state.saved_count:
            self.compact(session)
            return
        session.updated = time.time()
        new = session.messages[state.saved_count :]
        meta = session.meta()
        for key in JOURNALED_WHEN_CHANGED:
            if key in meta and key in state.written and state.written[key] == meta[key]:
                del meta[key]
        record = {"at": state.saved_count, "messages": [message_to_disk(m) for m in new], "meta": meta}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        try:
            if state.handle is None:
                state.handle = open(self.journal_path(session.id), "ab", buffering=0)  # noqa: SIM115
            state.handle.write(line)
            if self.fsync:
                os.fsync(state.handle.fileno())
        except OSError as err:
            self.close(session.id)  # reopen next time (the file may have been replaced)
            raise OSError(err.errno, err.strerror, str(self.journal_path(session.id))) from err
        state.saved_count = len(session.messages)
        state.journal_bytes += len(line)
        state.written.update({key: meta[key] for key in JOURNALED_WHEN_CHANGED if key in meta})

    def rewrite(self, session: Session) -> None:
        """Persist after history was rewritten in place (compaction, repair)."""
        self.compact(session)

    def maybe_compact(self, session: Session) -> None:
        """Fold the journal into the snapshot when it has grown long (call at turn end)."""
        state = self._state.get(session.id)
        if state is None or state.journal_bytes >= COMPACT_JOURNAL_BYTES:
            self.compact(session)
        else:
            self.write_summary(session)

    def close(self, session_id: str) -> None:
        """Close the session's journal handle (it reopens on the next save)."""
        state = self._state.get(session_id)
        if state is not None and state.handle is not None:
            with contextlib.suppress(OSError):
                state.handle.close()
            state.handle = None

    def forget(self, session_id: str) -> None:
        """Close the session's journal and drop what the store keeps of it in memory (it is
        evicted): its next load reads the generation from disk again."""
        self.close(session_id)
        self._state.pop(session_id, None)
        self._unwritten.discard(session_id)

    def compact(self, session: Session, *, with_messages: bool = True) -> None:
        """Write the full snapshot atomically and start a fresh journal (``with_messages=False``: a
        snapshot of the session's state without its messages, which the journal is to hold)."""
        self._make_dir()
        self.close(session.id)  # the journal file is about to be replaced
        self._unwritten.discard(session.id)
        state = self._state.setdefault(session.id, _JournalState())
        state.generation += 1
        messages = session.messages if with_messages else []
        doc = {**session.meta(), "generation": state.generation, "messages": [message_to_disk(m) for m in messages]}
        atomic_write(self.snapshot_path(session.id), json.dumps(doc, ensure_ascii=False).encode(), self.fsync)
        header = (json.dumps({"generation": state.generation}) + "\n").encode()
        atomic_write(self.journal_path(session.id), header, self.fsync)
        state.saved_count = len(messages)
        state.journal_bytes = len(header)
        state.written = {key: doc[key] for key in JOURNALED_WHEN_CHANGED if key in doc}
        self.write_summary(session)

    # -- loading --

    def load(self, session_id: str) -> tuple[Session, list[str]]:
        """Load a session (snapshot + journal) to continue it. Returns it with warnings
        about anything that had to be dropped, quarantined or repaired."""
        session, warnings, generation = self.read(session_id, quarantine=True)
        state = self._state.setdefault(session_id, _JournalState())
        state.generation = max(generation, 0)
        # Continue from a fresh snapshot so the journal matches memory exactly.
        try:
            self.compact(session)
        except OSError as err:
            raise storage_error(err, self.dir) from None
        return session, warnings

    def read(self, session_id: str, *, quarantine: bool = False) -> tuple[Session, list[str], int]:
        """Read a session without writing anything (unless ``quarantine`` moves damaged files aside).

        Returns the session, warnings, and the highest generation seen on disk (the
        next snapshot must be newer). Loading never destroys bytes it could not use:
        a corrupt snapshot, or a journal with records that could not be applied, is
        moved to ``<name>.corrupt-<time>`` before the next compaction replaces it.
        """
        warnings: list[str] = []
        snap = self.snapshot_path(session_id)
        journal = self.journal_path(session_id)
        if not snap.exists() and not journal.exists():
            raise SessionNotFound(f"no session {session_id!r} in {self.workspace}")
        session = Session(id=session_id, workspace=self.workspace)
        generation = 0
        if snap.exists():
            generation = self._read_snapshot(snap, session, warnings, quarantine)
        salvaged = len(session.messages)
        replay = self._replay_journal(journal, generation, session, warnings)
        journal_now = journal
        if replay.unused and quarantine:
            journal_now = aside_path(journal)
            os.replace(journal, journal_now)
            warnings.append(f"journal of {session_id}: kept the records it could not apply in {journal_now.name}")
        if not session.messages and (generation < 0 or not snap.exists()) and (replay.unused or not journal.exists()):
            raise _unreadable(session_id, self.dir, warnings, journal_now if journal_now != journal else None)
        elif replay.unused:
            warnings.append(f"journal of {session_id}: has records that could not be applied (left in place)")
        if generation < 0:
            warnings.append(
                f"session {session_id}: recovered {len(session.messages)} message(s) after the corrupt snapshot "
                f"({salvaged} from the snapshot, {replay.messages} from {replay.applied} journal record(s))"
            )
        session.messages, fixes = repair_pairing(session.messages)
        if fixes:
            warnings.append(f"session {session_id}: repaired {fixes} unpaired tool call(s)")
        return session, warnings, max(generation, replay.generation)

    def _read_snapshot(self, path: Path, session: Session, warnings: list[str], quarantine: bool) -> int:
        raw = path.read_bytes()
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                raise ValueError("not a session object")
        except ValueError as exc:
            aside = aside_path(path)
            if quarantine:
                os.replace(path, aside)
            messages = salvage_messages(raw.decode("utf-8", errors="replace"))
            session.messages = [message_from_disk(m) for m in messages]
            moved = f"moved it to {aside.name}" if quarantine else "left it in place"
            warnings.append(
                f"session file {path.name} is corrupt ({exc}); {moved} "
                f"and recovered {len(messages)} message(s) from it"
            )
            return -1  # unknown generation: replay whatever journal records continue the salvage
        session.apply_meta(doc)
        session.messages = [message_from_disk(m) for m in doc["messages"] if isinstance(m, dict)]
        return int(doc.get("generation", 0))

    def _replay_journal(self, path: Path, generation: int, session: Session, warnings: list[str]) -> _Replay:
        """Apply the journal's records to ``session``. ``generation`` is the snapshot's:
        0 when there is none, -1 when it was corrupt (records are placed by ``at`` alone)."""
        replay = _Replay()
        if not path.exists():
            return replay
        lines = path.read_bytes().split(b"\n")
        torn = lines[-1] != b""  # a complete journal ends with a newline
        records = [ln for ln in lines if ln]
        if not records:
            return replay
        try:
            header = json.loads(records[0])
            replay.generation = int(header["generation"])
        except (ValueError, TypeError, KeyError):
            warnings.append(f"journal of {session.id} has an unreadable header; did not replay it")
            replay.unused = True
            return replay
        if generation > 0 and replay.generation < generation:
            return replay  # written before the current snapshot: already folded in
        if generation > 0 and replay.generation > generation:
            warnings.append(f"journal of {session.id} extends a newer snapshot than the one on disk; "
                            "did not replay it")
            replay.unused = True
            return replay
        unplaced = 0
        for number, line in enumerate(records[1:], start=2):
            try:
                record = json.loads(line)
                at = int(record.get("at", 0))
                messages = [message_from_disk(m) for m in record.get("messages", []) if isinstance(m, dict)]
            except (ValueError, TypeError, AttributeError):
                if not (torn and number == len(records)):
                    # A torn last line is the step in flight, never reported saved: not worth keeping.
                    replay.unused = True
                    warnings.append(f"journal of {session.id}: could not read record {number}; skipped it")
                continue
            if at > len(session.messages):
                unplaced += 1
                replay.unused = True
                continue
            if generation < 0:
                # Salvaged messages may run past a stale journal's record: overwrite, never truncate.
                session.messages[at : at + len(messages)] = messages
            else:
                session.messages[at:] = messages
            session.apply_meta(record.get("meta") or {})
            replay.applied += 1
            replay.messages += len(messages)
        if unplaced:
            warnings.append(f"journal of {session.id}: {unplaced} record(s) start past message "
                            f"{len(session.messages)} (a gap); could not place them")
        if torn:
            warnings.append(f"journal of {session.id}: a torn last record (a step in flight) was not applied")
        return replay


@dataclass
class _Replay:
    """What replaying a journal did."""

    generation: int = 0
    """The generation named by the journal's header (0 when unreadable or absent)."""
    applied: int = 0
    messages: int = 0
    unused: bool = False
    """True when some bytes of the journal were not applied (they must be kept aside)."""


def salvage_messages(text: str) -> list[Message]:
    """Decode as many complete message objects as possible from a damaged snapshot."""
    start = text.find('"messages"')
    if start < 0:
        return []
    bracket = text.find("[", start)
    if bracket < 0:
        return []
    decoder = json.JSONDecoder()
    pos = bracket + 1
    out: list[Message] = []
    while pos < len(text):
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break
        if isinstance(value, dict):
            out.append(value)
    return out


def _unreadable(session_id: str, folder: Path, warnings: list[str], journal: Path | None) -> SessionUnreadable:
    """Nothing could be recovered: say where the damaged files are now (they were never deleted)."""
    kept = sorted(p.name for p in folder.glob(f"{session_id}.json.corrupt-*"))
    if journal is not None:
        kept.append(journal.name)
    names = ", ".join(kept) or ", ".join(p.name for p in (folder / f"{session_id}.json", folder / f"{session_id}.journal")
                                         if p.exists())
    where = f"{names} in {folder}"
    return SessionUnreadable(
        f"session {session_id} cannot be read: {BOTH_CORRUPT} ({where})",
        hint="Restore those files from a backup, or start a new session; `ai-coding sessions list` shows the others.",
    )
