"""Scenes: a stable key per topic, the spellings that fold to it, and its label per language.

A scene is a free-text topic label used for grouping and filtering only. The extractor
spells one topic several ways (and in the user's language); folding maps every known
spelling, and every label of a known topic, to the topic's key, which is what the store
keeps and what the model is shown (it copies it into ``scene=``). A label in the user's
language is only for display (:func:`scene_label`). A scene no topic knows is kept as
written (normalized). Folding is applied at four points, each needed: before the
governed-scenes gate, on both sides of a recall filter, when notes are read from the store
(a store written before keys holds translated labels: they fold to their key on read, and
the store writes the keys back, see store.py), and on the single write path (reconcile).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_SCENE_CHARS = 80
SCENE_SUPPORT = 3
"""A scene with at least this many notes is a governed group."""


@dataclass(frozen=True)
class Topic:
    """One known scene: its stored ``key``, its display ``labels`` by language (the key itself where
    a language has none), and other ``spellings`` that mean it."""

    key: str
    labels: Mapping[str, str] = field(default_factory=dict)
    spellings: tuple[str, ...] = ()


TOPICS = (
    Topic("memory", {"zh": "记忆模块"}, ("记忆系统", "记忆配置", "memory system")),
    Topic("build", {"zh": "构建"}, ("构建流程", "build system")),
    Topic("release", {"zh": "发布"}, ("发布流程",)),
    Topic("ci", {"en": "CI/CD", "zh": "CI/CD"}, ("ci/cd", "持续集成")),
    Topic("dependencies", {"zh": "依赖管理"}, ("依赖",)),
    Topic("testing", {"zh": "测试"}, ("测试流程", "tests")),
)
"""Keys are lowercase ASCII and never change (stores hold them); add a topic or a spelling freely."""

SCENE_SYNONYMS: dict[str, str] = {
    spelling.lower(): topic.key
    for topic in TOPICS
    for spelling in (*topic.spellings, *topic.labels.values())
    if spelling.lower() != topic.key
}
"""Every spelling and label (lowercased) -> its topic's key; no key is itself a spelling (idempotent)."""

_LABELS = {topic.key: topic.labels for topic in TOPICS}


def normalize_scene(scene: str) -> str:
    """Strip and truncate to 80 characters (no synonym lookup here)."""
    return " ".join(scene.split())[:MAX_SCENE_CHARS]


@functools.lru_cache(maxsize=4096)  # a store holds few distinct scenes; opening folds one per note
def fold_scene(scene: str) -> str:
    """Normalize, then map a known spelling or label to its topic's key. Idempotent."""
    normalized = normalize_scene(scene)
    lowered = normalized.lower()
    if lowered in _LABELS:
        return lowered
    return SCENE_SYNONYMS.get(lowered, normalized)


def scene_label(scene: str, language: str) -> str:
    """How ``scene`` (a stored key) reads in ``language`` (``en``, ``zh``, ...): the topic's label
    there, else its English label, else the key as stored (a scene no topic knows)."""
    labels = _LABELS.get(scene, {})
    return labels.get(language) or labels.get("en") or scene


def display_language(environ: Mapping[str, str]) -> str:
    """The language of the user's locale (``LC_ALL``, then ``LC_MESSAGES``, then ``LANG``, as POSIX
    orders them): ``zh`` for ``zh_CN.UTF-8``; ``en`` when none is set or it is ``C``/``POSIX``."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name, "")
        if value:
            language = value.split(".")[0].split("_")[0].lower()
            return "en" if language in ("c", "posix", "") else language
    return "en"


def governed_scenes(scenes: Iterable[str]) -> set[str]:
    """Folded scenes carried by at least SCENE_SUPPORT notes."""
    counts = Counter(fold_scene(s) for s in scenes if s)
    return {scene for scene, n in counts.items() if n >= SCENE_SUPPORT}


def top_scenes(pairs: Iterable[tuple[str, int]], limit: int = 5) -> list[tuple[str, int, int]]:
    """(scene, count, heat) for (scene, hits) pairs: heat = sum of hits; hottest first, name breaks ties."""
    count: Counter[str] = Counter()
    heat: Counter[str] = Counter()
    for scene, hits in pairs:
        if scene:
            folded = fold_scene(scene)
            count[folded] += 1
            heat[folded] += hits
    ranked = sorted(count, key=lambda s: (-heat[s], -count[s], s))
    return [(s, count[s], heat[s]) for s in ranked[:limit]]
