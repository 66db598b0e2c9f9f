"""The optional semantic layer against a real local /embeddings HTTP server.

Off, unconfigured, failing (HTTP 500, dead port) and unsupported (404) must
all give results byte-identical to lexical-only recall; "on" fuses cosine and
can recover a paraphrase the lexical path misses.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from services.memory.model import Note, RecallQuery
from services.memory.service import MemoryEngine
from services.memory.settings import EmbeddingSettings, MemorySettings
from services.memory.tokenizer import tokenize

NOW = 1_800_000_000.0
CONCEPTS = {"credentials": "secret", "secrets": "secret", "vault": "secret", "stored": "store", "put": "store"}
NOTES = [
    ("n1", "Secrets are stored in HashiCorp Vault", "fact"),
    ("n2", "The CI runs on GitHub Actions", "fact"),
    ("n3", "Releases are tagged from main", "decision"),
    ("n4", "Logs are stored for thirty days", "decision"),
]
QUERIES = ["where are secrets stored", "github actions", "release tags", "where do I put credentials", "nothing here"]


def vector(text: str) -> list[float]:
    v = [0.0] * 32
    for term in tokenize(text):
        concept = CONCEPTS.get(term, term)
        v[int(hashlib.sha256(concept.encode()).hexdigest(), 16) % 32] += 1.0
    return v


class Handler(BaseHTTPRequestHandler):
    mode = "ok"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.mode == "missing":  # type: ignore[attr-defined]
            self.send_error(404)
            return
        if self.server.mode == "broken":  # type: ignore[attr-defined]
            self.send_error(500)
            return
        data = {"data": [{"index": i, "embedding": vector(t)} for i, t in enumerate(body["input"])]}
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


def serve(mode: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.mode = mode  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    started = {mode: serve(mode) for mode in ("ok", "missing", "broken")}
    yield {mode: f"http://127.0.0.1:{s.server_address[1]}/v1" for mode, s in started.items()}
    for s in started.values():
        s.shutdown()
        s.server_close()


Hits = tuple[tuple[str, float, float, tuple[str, ...]], ...]


def run(settings: MemorySettings) -> tuple[list[Hits], list[str], list[str]]:
    """All queries on a fresh workspace with fixed notes; (hits, rendered texts, semantic statuses)."""
    with tempfile.TemporaryDirectory() as ws:
        engine = MemoryEngine(settings)
        engine.store(ws).insert_many(
            Note(id=i, text=t, kind=k, created=NOW - 86_400, updated=NOW - 86_400) for i, t, k in NOTES
        )
        hits: list[Hits] = []
        rendered, statuses = [], []
        for q in QUERIES:
            r = engine.recall(ws, RecallQuery(query=q), now=NOW)
            hits.append(tuple((h.note.id, h.score, h.relevance, tuple(h.matched_terms)) for h in r.hits))
            rendered.append(r.rendered)
            statuses.append(str(r.diagnostics["semantic_status"]))
        engine.close()
    return hits, rendered, statuses


def emb(**kw: object) -> MemorySettings:
    return MemorySettings(embeddings=EmbeddingSettings(**kw))  # type: ignore[arg-type]


def test_results_are_byte_identical_to_lexical_when_embeddings_are_off_unconfigured_or_failing(
    servers: dict[str, str],
) -> None:
    base_hits, base_text, base_status = run(MemorySettings())
    assert set(base_status) == {"off"}
    cases = {
        "unconfigured": (emb(enabled=True), "off"),
        "http 500": (emb(enabled=True, base_url=servers["broken"], model="m"), "error"),
        "no /embeddings": (emb(enabled=True, base_url=servers["missing"], model="m"), "endpoint_unsupported"),
        "dead port": (emb(enabled=True, base_url="http://127.0.0.1:9/v1", model="m", timeout_seconds=1.0), "error"),
    }
    for name, (settings, status) in cases.items():
        hits, text, statuses = run(settings)
        assert hits == base_hits, name
        assert text == base_text, name
        assert set(statuses) == {status}, name


def test_a_working_endpoint_fuses_cosine_and_recovers_a_paraphrase(servers: dict[str, str]) -> None:
    base_hits, _, _ = run(MemorySettings())
    hits, _, statuses = run(emb(enabled=True, base_url=servers["ok"], model="m"))
    paraphrase = QUERIES.index("where do I put credentials")
    assert base_hits[paraphrase] == ()
    assert [h[0] for h in hits[paraphrase]][:1] == ["n1"]
    assert set(statuses) == {"on"}
    rrf_hits, _, _ = run(MemorySettings(recall_fusion="rrf", embeddings=EmbeddingSettings(
        enabled=True, base_url=servers["ok"], model="m")))
    assert [h[0] for h in rrf_hits[paraphrase]][:1] == ["n1"]
