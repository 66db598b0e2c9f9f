"""Scene labels: normalization and the one synonym table.

A scene is a free-text topic label used for grouping and filtering only. The
extractor spells one topic several ways; folding maps the spellings to one
label. It is applied at four points, each needed: before the governed-scenes
gate, on both sides of a recall filter, when notes are read from the store,
and on the single write path (reconcile).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable

MAX_SCENE_CHARS = 80
SCENE_SUPPORT = 3
"""A scene with at least this many notes is a governed group."""

SCENE_SYNONYMS: dict[str, str] = {
    "记忆系统": "记忆模块",
    "记忆配置": "记忆模块",
    "memory": "记忆模块",
    "memory system": "记忆模块",
    "构建流程": "构建",
    "build": "构建",
    "build system": "构建",
    "发布流程": "发布",
    "release": "发布",
    "ci": "CI/CD",
    "ci/cd": "CI/CD",
    "持续集成": "CI/CD",
    "依赖": "依赖管理",
    "dependencies": "依赖管理",
    "测试流程": "测试",
    "testing": "测试",
    "tests": "测试",
}


def normalize_scene(scene: str) -> str:
    """Strip and truncate to 80 characters (no synonym lookup here)."""
    return " ".join(scene.split())[:MAX_SCENE_CHARS]


@functools.lru_cache(maxsize=4096)  # a store holds few distinct scenes; opening folds one per note
def fold_scene(scene: str) -> str:
    """Normalize, then map a known spelling to its canonical label. Idempotent."""
    normalized = normalize_scene(scene)
    return SCENE_SYNONYMS.get(normalized, SCENE_SYNONYMS.get(normalized.lower(), normalized))


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
