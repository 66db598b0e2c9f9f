"""The memory package's exception tree (one base, a few narrow subclasses)."""

from __future__ import annotations

from services.kernel.errors import AiCodingError


class MemoryServiceError(AiCodingError):
    """Base of every error the memory service raises on purpose."""

    reason = "memory_error"


class NoteNotFound(MemoryServiceError):
    """No note has the requested id."""

    reason = "note_not_found"


class StoreUnavailable(MemoryServiceError):
    """The SQLite store cannot be opened or written (locked too long, disk, corruption)."""

    reason = "memory_store_unavailable"


class InvalidRequest(MemoryServiceError):
    """A request is malformed (e.g. no workspace, a relative workspace path)."""

    reason = "invalid_argument"
