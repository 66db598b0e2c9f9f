"""``history_search``: the memory service's index of what compaction archived, the local archive
when the memory service is off or down.

The local archive (transcripts/archive/) is written first, before the state that hides the
messages exists (that is what makes them never lost); the memory service indexes them
afterwards (``ArchiveMessages``, in the background, in batches) and answers the searches
(``SearchHistory``, ranked by its full-text index). A search first sends what is still
unsent, so it sees every archived message. A session loaded from disk sends its earlier
archive once (the memory service ignores messages it already has). When the memory
service fails, the search reads the local archive and says so in its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from services.kernel.tool_args import arg
from services.loop.compaction.transcripts import Transcripts
from services.loop.core.domain import ToolOutcome
from services.loop.core.errors import AuxiliaryError
from services.loop.core.ports import ArchivedRecord, MemoryClient
from services.loop.policy.codes import ErrorCode

log = logging.getLogger("ai_coding.loop")

# A history_search hit longer than this is cut in the result (the archive keeps it whole).
SEARCH_HIT_CHARS = 4000
# ArchiveMessages batches (well under the 64 MB gRPC limit), and the memory service's time per call.
PUSH_BATCH_BYTES = 2_000_000
MEMORY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class HistorySearchArgs:
    """``history_search``'s arguments (their schema is what the model is sent)."""

    query: str = arg("Words the message contains.")
    k: int = arg("At most this many (3).", 3, minimum=1, maximum=10)


def hits_outcome(call_id: str, hits: list[ArchivedRecord], note: str = "") -> ToolOutcome:
    """The tool result for ``hits`` (best first), ``note`` on its first line when given."""
    lead = f"{note}\n" if note else ""
    if not hits:
        return ToolOutcome(call_id, "history_search", True,
                           lead + "no archived message matches (nothing compacted yet, or other words)",
                           data={"hits": []})
    parts = [f"[message {h.index}, {h.role}]\n{h.text[:SEARCH_HIT_CHARS]}" +
             (f"\n[... {len(h.text) - SEARCH_HIT_CHARS} more chars]" if len(h.text) > SEARCH_HIT_CHARS else "")
             for h in hits]
    return ToolOutcome(call_id, "history_search", True, lead + "\n\n".join(parts), data={"hits": [h.index for h in hits]})


def empty_query(call_id: str) -> ToolOutcome:
    return ToolOutcome(call_id, "history_search", False, "invalid_arguments: send {\"query\": \"words\"}",
                       error_code=ErrorCode.INVALID_ARGUMENTS, error_message="query is empty")


def local_search(transcripts: Transcripts, session_id: str, call_id: str, args: HistorySearchArgs,
                 note: str = "") -> ToolOutcome:
    """history_search over the local archive."""
    query, k = args.query.strip(), args.k
    if not query:
        return empty_query(call_id)
    found = transcripts.search(session_id, query, k)
    return hits_outcome(call_id, [ArchivedRecord(f.index, f.role, f.text) for f in found], note)


@dataclass
class HistoryIndex:
    """One session's archived messages as the memory service indexes them."""

    memory: MemoryClient | None
    transcripts: Transcripts
    session_id: str
    _seeded: bool = False
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def _workspace(self) -> str:
        return str(self.transcripts.workspace)

    def archived(self) -> None:
        """Compaction archived messages: send them to the memory service in the background."""
        if self.memory is None or (self._task is not None and not self._task.done()):
            return
        if self._seeded and not self.transcripts.unsent.get(self.session_id):
            return
        with contextlib.suppress(RuntimeError):  # no running loop (a unit test): the next search sends
            self._task = asyncio.get_running_loop().create_task(self._send_quietly())

    async def _send_quietly(self) -> None:
        try:
            await self._send()
        except Exception as exc:  # kept for the next try; a search then falls back to the local archive
            log.info("history for session %s not indexed yet: %s", self.session_id, exc)

    async def _send(self) -> None:
        assert self.memory is not None
        pending = self.transcripts.unsent.setdefault(self.session_id, [])
        if not self._seeded:  # a session loaded from disk: its earlier archive too (duplicates are ignored)
            self._seeded = True
            queued = {r.index for r in pending}
            pending[:0] = [ArchivedRecord(r["index"], r["role"], r["text"])
                           for r in self.transcripts.records(self.session_id) if r["index"] not in queued]
        while pending:
            size, end = 0, 0
            while end < len(pending) and (end == 0 or size + len(pending[end].text) <= PUSH_BATCH_BYTES):
                size += len(pending[end].text)
                end += 1
            await self.memory.archive_messages(self._workspace, self.session_id, pending[:end], MEMORY_TIMEOUT_S)
            del pending[:end]

    async def search(self, call_id: str, args: HistorySearchArgs) -> ToolOutcome:
        """history_search: the memory service's index, else the local archive (said in the result)."""
        if self.memory is None:
            return local_search(self.transcripts, self.session_id, call_id, args)
        query, k = args.query.strip(), args.k
        if not query:
            return empty_query(call_id)
        try:
            if self._task is not None and not self._task.done():
                await asyncio.wait_for(asyncio.shield(self._task), MEMORY_TIMEOUT_S)
            await asyncio.wait_for(self._send(), MEMORY_TIMEOUT_S)
            hits = await self.memory.search_history(self._workspace, self.session_id, query, k, MEMORY_TIMEOUT_S)
        except (AuxiliaryError, TimeoutError) as err:
            why = err.detail if isinstance(err, AuxiliaryError) else "it did not answer in time"
            return local_search(self.transcripts, self.session_id, call_id, args,
                                note=f"(the memory service is unavailable ({why}); searched this session's "
                                     "local archive instead)")
        return hits_outcome(call_id, hits)
