"""The ``memory`` config section and the one extraction-switch predicate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EmbeddingSettings:
    """Optional semantic layer (``memory.embeddings``); off by default."""

    enabled: bool = False
    """Turn cosine scoring on. Off: results are byte-identical to lexical-only recall."""
    base_url: str = ""
    """OpenAI-compatible base URL serving ``/embeddings`` (e.g. ``https://host/v1``)."""
    model: str = ""
    """Embedding model name sent with each request."""
    api_key_env: str = ""
    """Name of the environment variable holding the API key (never the key itself)."""
    min_cosine: float = 0.60
    """A candidate passes the absolute gate when lexical relevance >= min_relevance OR cosine >= this."""
    timeout_seconds: float = 3.0
    """Per-request timeout of the embeddings call; a failure falls back to lexical-only."""


@dataclass
class MemorySettings:
    """Typed view of the ``memory`` section of the config."""

    enabled: bool = True
    """Master switch: off means no recall, no constraints block and no writes."""
    extraction_enabled: bool = True
    """Off = read-only memory: harvest, memory_write and consolidate's eviction all stop; recall works."""
    extraction_extractors: Any = None
    """Which producers may write: a list of "harvest" / "memory_write". null, missing or not a list = all."""
    recall_timeout_seconds: float = 2.0
    """Wall-clock budget of one recall (0 or negative = none); over it, hits still return with timed_out."""
    min_relevance: float = 0.25
    """Absolute gate: idf-weighted share of the known query terms a note must contain."""
    relative_band: float = 0.55
    """Relative gate: a hit's mixed score must be at least this share of the best mixed score."""
    max_index_entries: int = 200
    """Consolidate evicts lowest-value notes above this count (pinned notes and decisions are kept)."""
    constraints_max_chars: int = 600
    """Budget of the <memory-constraints> tail block."""
    default_k: int = 5
    """How many hits a recall returns when the caller does not say."""
    open_thread_ttl_days: float = 14.0
    """Consolidate expires open_thread notes not updated or used for this many days."""
    embeddings: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    """Optional semantic layer; see EmbeddingSettings."""
    recall_fusion: str = "blend"
    """How lexical and cosine ranks combine when embeddings are on: "blend" (min-max mean) or "rrf"."""
    rrf_k: int = 60
    """The k of Reciprocal Rank Fusion (only used with recall_fusion: rrf)."""
    busy_timeout_ms: int = 10_000
    """How long a write waits for another process's write lock before failing."""


EXTRACTORS: tuple[str, ...] = ("harvest", "memory_write")


def is_extraction_allowed(settings: MemorySettings, extractor: str) -> bool:
    """The single predicate for the two extraction switches.

    A missing or malformed ``extraction_extractors`` allows every producer: only
    an explicit switch-off stops writes (a broken yaml must not silently stop them).
    """
    if not settings.enabled or not settings.extraction_enabled:
        return False
    allowed = settings.extraction_extractors
    if not isinstance(allowed, list):
        return True
    return extractor in [str(x) for x in allowed]


def writes_allowed(settings: MemorySettings) -> bool:
    """Whether housekeeping writes (consolidate merge/evict) may touch the store."""
    return settings.enabled and settings.extraction_enabled
