"""The optional semantic layer: cosine similarity from an OpenAI-compatible /embeddings endpoint.

Off by default. Vectors are computed at read time only (the write path never
touches the network). Any failure makes recall fall back to the lexical path,
whose results are then byte-identical to a store without embeddings.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from typing import Protocol

from services.memory.errors import MemoryServiceError
from services.memory.model import Note
from services.memory.settings import EmbeddingSettings


class EmbeddingFailed(MemoryServiceError):
    """The embeddings endpoint failed or answered something unusable."""

    reason = "embeddings_failed"


class EndpointUnsupported(EmbeddingFailed):
    """The endpoint has no /embeddings (HTTP 404)."""

    reason = "embeddings_unsupported"


class Embedder(Protocol):
    """Turns texts into vectors (one per text, same order)."""

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class HttpEmbedder:
    """POST ``{base_url}/embeddings`` with ``{"model", "input"}`` (the OpenAI shape)."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self._settings = settings

    def embed(self, texts: list[str]) -> list[list[float]]:
        s = self._settings
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(s.api_key_env, "") if s.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps({"model": s.model, "input": texts}).encode()
        request = urllib.request.Request(s.base_url.rstrip("/") + "/embeddings", body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=s.timeout_seconds) as response:
                data = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise EndpointUnsupported("the endpoint has no /embeddings") from None
            raise EmbeddingFailed(f"embeddings HTTP {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise EmbeddingFailed(f"embeddings call failed: {exc}") from None
        try:
            rows = sorted(data["data"], key=lambda r: r.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError):
            raise EmbeddingFailed("embeddings answer has no data[].embedding") from None
        if len(vectors) != len(texts):
            raise EmbeddingFailed("embeddings answer has the wrong number of vectors")
        return vectors


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity (0.0 for a zero vector or a length mismatch)."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm > 0 else 0.0


class SemanticLayer:
    """Caches note vectors by (id, text) and reports its state as ``status``.

    status: "off" (not configured), "endpoint_unsupported" (404, latched for the
    process), "on" (worked), "error" (this call failed).
    """

    def __init__(self, settings: EmbeddingSettings, embedder: Embedder | None = None) -> None:
        configured = settings.enabled and bool(settings.base_url) and bool(settings.model)
        self._embedder: Embedder | None = (embedder or HttpEmbedder(settings)) if configured else None
        if settings.enabled and embedder is not None:
            self._embedder = embedder
        self._cache: dict[tuple[str, str], list[float]] = {}
        self._unsupported = False
        self.status = "off"

    def cosines(self, query: str, notes: dict[int, Note]) -> dict[int, float] | None:
        """Cosine of ``query`` against each note, or None when the layer is off or failing."""
        if self._embedder is None:
            self.status = "off"
            return None
        if self._unsupported:
            self.status = "endpoint_unsupported"
            return None
        missing = [n for n in notes.values() if (n.id, n.text) not in self._cache]
        try:
            vectors = self._embedder.embed([query, *(n.text for n in missing)])
        except EndpointUnsupported:
            self._unsupported = True
            self.status = "endpoint_unsupported"
            return None
        except Exception:
            self.status = "error"
            return None
        for note, vector in zip(missing, vectors[1:], strict=True):
            self._cache[(note.id, note.text)] = vector
        self.status = "on"
        q = vectors[0]
        return {doc: cosine(q, self._cache[(n.id, n.text)]) for doc, n in notes.items()}
