"""What a project layer may set: execution keys only as the user approved them (services/kernel/
trust.py), user-only keys never, model entries only tuned, and safety settings only tightened."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from services.kernel import config_rules
from services.kernel.trust import Admission

# What a project may do with each key is declared once, in services/kernel/config_rules.py (a test
# fails for a key without a rule); these views of that table are what the loader applies.
#   EXECUTION_KEYS        a project's value is used only as the user approved it (trust.py)
#   MODEL_BEHAVIOUR_KEYS  what a project may tune in a model entry the user already has
#   TIGHTEN_RULES         union / true_wins / false_wins / lower (LOWER_DEFAULTS: the ceilings)
# A key no rule covers but that looks like a safety setting (SAFETY_WORDS) is dropped.
EXECUTION_KEYS: tuple[str, ...] = config_rules.keys_with(config_rules.Rule.EXECUTION)
MODEL_BEHAVIOUR_KEYS = config_rules.model_behaviour_keys()
TIGHTEN_RULES: tuple[tuple[str, str], ...] = config_rules.tighten_rules()
LOWER_DEFAULTS: dict[str, float] = config_rules.LOWER_DEFAULTS
NAME_RULES: dict[str, str] = {
    "deny": "union", "confirm": "union", "denied_tools": "union", "enabled": "false_wins",
    "auto_approve": "false_wins", "disabled": "true_wins", "readonly": "true_wins", "read_only": "true_wins",
}
SAFETY_WORDS = re.compile(
    r"deny|allow|confirm|approv|permission|sandbox|network|trust|strict|plugin|hook|guard|enabled|"
    r"unsafe|dangerous|bypass|yolo|policy|secret", re.IGNORECASE)



def _matches(path: tuple[str, ...], pattern: str) -> bool:
    parts = pattern.split(".")
    if len(path) < len(parts):
        return False
    return all(p == "*" or p == k for p, k in zip(parts, path, strict=False))


def drop_execution_keys(
    layer: dict[str, Any], user_models: Mapping[str, Any], source: str, warnings: list[str],
    admission: Admission | None = None,
) -> dict[str, Any]:
    """Remove keys a project layer may not set, with one warning each; an execution key is kept
    only as far as ``admission`` (the user's trust record for the workspace) approved its items."""

    def drop(path: tuple[str, ...], why: str) -> None:
        warnings.append(f"{source}: ignored `{'.'.join(path)}` ({why})")

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in node.items():
            path = (*prefix, k)
            if config_rules.exact(path, config_rules.Rule.USER_ONLY):
                drop(path, "it comes only from the user config, whoever approved the project")
                continue
            if any(_matches(path, pat) and len(path) == len(pat.split(".")) for pat in EXECUTION_KEYS):
                if isinstance(v, Mapping):  # user-only keys inside an execution section (hooks.plugin_dir)
                    v = walk(v, path) if any(config_rules.exact((*path, c), config_rules.Rule.USER_ONLY)
                                             for c in v) else v
                if admission is None:
                    drop(path, "execution keys come only from the user config")
                    continue
                keep, admitted = admission.admit(source, path, v, warnings)
                if keep:
                    out[k] = admitted
                continue
            if path == ("models",) and not isinstance(v, Mapping):
                drop(path, "a project may tune model entries, not replace the section")
                continue
            if path[:1] == ("models",) and len(path) == 2:
                if k not in user_models:
                    drop(path, "a project may tune, not add, models")
                    continue
                if not isinstance(v, Mapping):
                    drop(path, "a project may tune a model entry, not replace it")
                    continue
            if path[:1] == ("models",) and len(path) == 3 and k not in MODEL_BEHAVIOUR_KEYS:
                drop(path, "only behaviour keys of a model entry come from a project")
                continue
            out[k] = walk(v, path) if isinstance(v, Mapping) else v
        return out

    return walk(layer, ())


def _tighten_rule(path: tuple[str, ...]) -> str:
    dotted = ".".join(path)
    if config_rules.exact(path, config_rules.Rule.HARMLESS):
        return ""
    for pattern, rule in TIGHTEN_RULES:
        if len(path) == len(pattern.split(".")) and _matches(path, pattern):
            return rule
    last = path[-1]
    if last in NAME_RULES:
        return NAME_RULES[last]
    if last.endswith("_enabled"):
        return "false_wins"
    if last.startswith(("strict_", "enforce_")):
        return "true_wins"
    return "drop" if SAFETY_WORDS.search(dotted) else ""


def _get_path(node: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _tightened(rule: str, path: tuple[str, ...], mine: Any, theirs: Any) -> tuple[bool, Any, str]:
    """(keep, value, why-not) for a project value ``theirs`` over the value so far ``mine``."""
    if rule == "union":
        if not isinstance(theirs, list):
            return False, None, "a project may only add entries to this list"
        base = list(mine) if isinstance(mine, list) else []
        return True, base + [v for v in theirs if v not in base], ""
    if rule in ("true_wins", "false_wins"):
        if not isinstance(theirs, bool):
            return False, None, "expected true or false"
        stricter = rule == "true_wins"
        if theirs == stricter or mine == theirs:
            return True, theirs, ""
        return False, None, f"a project may only set it to {str(stricter).lower()}"
    if rule == "lower":
        dotted = ".".join(path)
        ceiling = mine if isinstance(mine, (int, float)) and not isinstance(mine, bool) else LOWER_DEFAULTS.get(dotted)
        if not isinstance(theirs, (int, float)) or isinstance(theirs, bool) or ceiling is None:
            return False, None, "a project may only lower this limit"
        if theirs > 0 and (ceiling == 0 or theirs <= ceiling):
            return True, theirs, ""
        return False, None, f"a project may only lower this limit (yours: {ceiling:g}, 0 = none)"
    return False, None, "a safety setting with no rule for tightening it comes only from the user config"


def tighten_layer(layer: dict[str, Any], below: Mapping[str, Any], source: str,
                   warnings: list[str]) -> dict[str, Any]:
    """A project layer whose safety settings can only tighten what is ``below`` it (the user layer
    and the project layers merged so far): lists add up, booleans take the stricter value, limits
    only go down; anything else safety-like is dropped. One warning per key refused."""

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in node.items():
            path = (*prefix, k)
            if path[:1] == ("models",) or any(_matches(path, pat) for pat in EXECUTION_KEYS):
                out[k] = v  # model entries are filtered above; execution keys here are trusted
                continue
            if isinstance(v, Mapping):
                out[k] = walk(v, path)
                continue
            rule = _tighten_rule(path)
            if not rule:
                out[k] = v
                continue
            mine = _get_path(below, path)
            keep, value, why = _tightened(rule, path, mine, v)
            if keep:
                out[k] = value
                if rule == "union" and isinstance(mine, list) and any(m not in v for m in mine):
                    warnings.append(f"{source}: `{'.'.join(path)}` cannot drop entries of your config "
                                    "(lists add up: a project may only tighten safety settings)")
            else:
                warnings.append(f"{source}: ignored `{'.'.join(path)}` = {v!r:.60} ({why}; a project may "
                                "only tighten safety settings)")
        return out

    return walk(layer, ())

