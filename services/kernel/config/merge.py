"""Merging layers: mappings merge per key, every other value replaces; and where each key came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive per-key merge: mappings merge, everything else replaces."""
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def record_sources(node: Mapping[str, Any], prefix: str, source: str, out: dict[str, str]) -> None:
    """Note ``source`` as the layer of every key of ``node`` (dotted below ``prefix``) in ``out``."""
    for k, v in node.items():
        path = f"{prefix}.{k}" if prefix else k
        out[path] = source
        if isinstance(v, Mapping):
            record_sources(v, path, source, out)

