"""Recall output: miss diagnostics, the bounded index summary, and the text the model reads.

Every sentence of the miss text states something measured in this call: the
index summary is only mentioned when there is one, "the index knows every
query word" only when words were measured and all were known, and an empty
store is said to be empty instead of suggesting a rephrase.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from services.memory.model import Hit, Note

if TYPE_CHECKING:
    from services.memory.ranking import Ranked, Ranking

PREVIEW_NOTES = 3
PREVIEW_CHARS = 60
TOP_SCENES = 5


def index_summary(
    count: int, kinds: Mapping[str, int], scenes: Mapping[str, int], heat: Mapping[str, int], newest: list[Note]
) -> dict[str, Any]:
    """Counts by kind, three previews, and scene maps when any note has a scene (bounded; no scan)."""
    summary: dict[str, Any] = {
        "count": count,
        "by_kind": {k: v for k, v in sorted(kinds.items()) if v > 0},
        "preview": [{"id": n.id, "kind": n.kind, "text": n.text[:PREVIEW_CHARS]} for n in newest[:PREVIEW_NOTES]],
    }
    live = {s: c for s, c in scenes.items() if c > 0}
    if live:
        summary["by_scene"] = dict(sorted(live.items()))
        ranked = sorted(live, key=lambda s: (-heat.get(s, 0), -live[s], s))[:TOP_SCENES]
        summary["top_scenes"] = [[s, live[s], heat.get(s, 0)] for s in ranked]
    return summary


def _miss(r: Ranked) -> dict[str, Any]:
    return {
        "id": r.note.id, "kind": r.note.kind, "text": r.note.text[:PREVIEW_CHARS],
        "relevance": round(r.relevance, 3), "score": round(r.score, 3), "why": r.why,
    }


def diagnostics(
    ranking: Ranking,
    *,
    summary: dict[str, Any] | None,
    filtered: dict[str, int],
    semantic_status: str,
    timed_out: bool,
    elapsed_ms: float,
    include_near_misses: bool,
) -> dict[str, Any]:
    """The diagnostics object of one recall (``diagnostics_json`` on the wire)."""
    no_match = not ranking.hits
    diag: dict[str, Any] = {
        "no_match": no_match,
        "terms_known": ranking.terms_known,
        "terms_unknown": ranking.terms_unknown,
        "no_vocabulary_match": bool(ranking.terms_unknown) and not ranking.terms_known,
        "candidates": ranking.candidates,
        "semantic_status": semantic_status,
        "semantic_unavailable": semantic_status == "error",
        "timed_out": timed_out,
        "elapsed_ms": round(elapsed_ms, 3),
    }
    if no_match or include_near_misses:
        diag["near_misses"] = [_miss(r) for r in ranking.near_misses]
    if filtered:
        diag["filtered_out"] = filtered
    if summary is not None:
        diag["index"] = {k: v for k, v in summary.items() if k != "top_scenes"}
        if "top_scenes" in summary:
            diag["top_scenes"] = summary["top_scenes"]
    return diag


def hit_line(hit: Hit) -> str:
    """One hit as the model reads it."""
    n = hit.note
    scene = f", scene {n.scene}" if n.scene else ""
    terms = ", ".join(hit.matched_terms) or "-"
    refs = f"; refs: {','.join(n.source_message_ids)}" if n.source_message_ids else ""
    return (
        f"- [{n.id}] ({n.kind}{scene}; score {hit.score:.2f}, relevance {hit.relevance:.2f}; "
        f"matched: {terms}{refs}) {n.text}"
    )


def render(query: str, hits: list[Hit], diag: dict[str, Any]) -> str:
    """The memory_search result text."""
    if hits:
        lines = [f"{len(hits)} memory note(s) for {query!r}:", *(hit_line(h) for h in hits)]
        if diag.get("timed_out"):
            lines.append("(recall ran over its time budget; these hits are still valid)")
        return "\n".join(lines)
    return "\n".join(_miss_lines(query, diag))


def _miss_lines(query: str, diag: dict[str, Any]) -> list[str]:
    index = diag.get("index")
    if isinstance(index, dict) and index.get("count") == 0:
        return ["Memory holds no notes at all; searching again with other words cannot find anything."]
    lines = [f"No memory note passed the relevance gates for {query!r}."]
    known, unknown = diag.get("terms_known") or [], diag.get("terms_unknown") or []
    if known and not unknown:
        lines.append(f"The index knows every query word ({', '.join(known)}), but no note is about them together.")
    elif unknown:
        lines.append(f"Words the index has never seen: {', '.join(unknown)}. Rephrase with words a note would use.")
    for param, count in sorted((diag.get("filtered_out") or {}).items()):
        lines.append(f"{count} note(s) passed the relevance gate but the {param} filter excluded them.")
    for miss in diag.get("near_misses") or []:
        lines.append(f"Near miss [{miss['id']}] ({miss['kind']}, relevance {miss['relevance']}): {miss['text']}")
    if isinstance(index, dict):
        kinds = ", ".join(f"{k}={v}" for k, v in index.get("by_kind", {}).items())
        lines.append(f"Memory holds {index.get('count')} note(s): {kinds}.")
    scenes = diag.get("top_scenes")
    if scenes:
        names = ", ".join(str(s[0]) for s in scenes)
        lines.append(f"Scenes in memory: {names} (scene= narrows candidates; the query words are still yours).")
    return lines
