"""Config keys: how they are spelled (case and camelCase folded) and which ones we know."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DECLARATION_KEY = "ai_coding"
"""The top-level key by which a generic-named file (``config.yaml``) declares itself ours."""
# Top-level keys of our files; anything else warns with a did-you-mean (add a section here when
# a component starts reading one).
KNOWN_TOP_LEVEL_KEYS = frozenset({
    DECLARATION_KEY, "ai", "compaction", "default_model", "endpoints", "hooks", "loop", "mcp", "memory",
    "models", "net", "plans", "sessions", "skills", "subagents", "supervisor", "tools", "tracing", "traces",
})
# Children of these keys are names the user chose (variables, headers, model
# entries), kept as written; keys below them are normalized again.
CASE_SENSITIVE_PARENTS = frozenset({"environment", "env", "headers", "models", "pinned_hosts"})

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def normalize_key(key: str) -> str:
    """``maxToolIterations`` -> ``max_tool_iterations``; ``MCP`` -> ``mcp``."""
    return _CAMEL.sub(r"_\1", key).replace("-", "_").lower()


def normalize(value: Any, parent: str = "") -> Any:
    """Every key of ``value`` (nested mappings and lists included) through :func:`normalize_key`,
    except the names directly below a ``CASE_SENSITIVE_PARENTS`` key."""
    if isinstance(value, Mapping):
        if parent in CASE_SENSITIVE_PARENTS:
            return {str(k): normalize(v, "") for k, v in value.items()}
        out: dict[str, Any] = {}
        for k, v in value.items():
            nk = normalize_key(str(k))
            out[nk] = normalize(v, nk)
        return out
    if isinstance(value, list):
        return [normalize(v, parent) for v in value]
    return value


def unknown_key_warnings(layer: Mapping[str, Any], known: frozenset[str] | set[str], source: str,
                         prefix: str = "") -> list[str]:
    """One warning per key of ``layer`` not in ``known``, with the closest known key if any."""
    import difflib

    out = []
    for key in layer:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
        hint = f" (did you mean `{prefix}{close[0]}`?)" if close else ""
        out.append(f"{source}: unknown key `{prefix}{key}`{hint}; it is ignored")
    return out

