"""Slash commands the loop answers (/status, /model, /todo, /config, ...): text + JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.kernel.errors import AiCodingError
from services.loop.policy.permissions import MODES

if TYPE_CHECKING:
    from services.loop.runtime import SessionRuntime

LATER: dict[str, str] = {}


def run_command(rt: SessionRuntime, command: str, args: str) -> tuple[str, str]:
    """``(text to print, JSON for programs)`` for one loop-handled slash command."""
    name = command.strip().lstrip("/").lower()
    if name == "status":
        data: dict[str, Any] = {"session": rt.session.id, "workspace": rt.session.workspace,
                                "model": rt.model.model_name, "messages": len(rt.session.messages),
                                "turns": rt.session.turns, "running": not rt.idle, "queued": len(rt.queue),
                                "usage": rt.session.usage}
        text = (f"session {rt.session.id} · model {rt.model.model_name} · {len(rt.session.messages)} messages · "
                f"{rt.session.turns} turns · {'running' if not rt.idle else 'idle'}")
        return text, json.dumps(data)
    if name == "model":
        wanted = args.strip()
        if wanted and rt.idle:
            try:
                rt.model = rt.deps.model_for(wanted)
            except AiCodingError as err:
                return f"cannot switch model: {err}", json.dumps({"error": err.reason})
            rt.session.model = rt.model.model_name
        elif wanted:
            return "cannot switch model while a turn runs; try again when it ends", json.dumps({"error": "busy"})
        configured = sorted(str(name) for name in (rt.deps.config_data.get("models") or {}))
        text = f"model: {rt.model.model_name}" + (f" · configured: {', '.join(configured)}" if configured else "")
        return text, json.dumps({"model": rt.model.model_name, "configured": configured})
    if name == "todo":
        items = rt.session.task_state.get("items") or []
        if not items:
            return "no tasks", json.dumps({"items": []})
        lines = [f"[{i.get('status')}] {i.get('id')}. {i.get('content')}" for i in items]
        return "\n".join(lines), json.dumps({"items": items})
    if name == "budget":
        usage = rt.session.usage
        limit = rt.settings.turn_token_budget
        fill = rt.context.fill()
        text = (f"session tokens: {usage.get('totalTokens', 0)} · turn budget: {limit or 'unlimited'}\n"
                f"context: ~{fill.used} tokens used / {fill.ceiling} compaction threshold / {fill.window} window"
                f" · {rt.context.state.compactions} compactions")
        return text, json.dumps({"usage": usage, "turn_token_budget": limit, "context": asdict(fill),
                                 "compactions": rt.context.state.compactions})
    if name == "permissions":
        wanted = args.strip().lower()
        if wanted:
            if wanted not in MODES:
                return f"unknown mode {wanted!r}; use one of: {', '.join(MODES)}", json.dumps({"error": "bad_mode"})
            rt.permission_mode = wanted
        allowed = rt.session.allowed_tools
        text = f"permissions: {rt.permission_mode} · always allowed: " + (", ".join(allowed) or "none")
        return text, json.dumps({"mode": rt.permission_mode, "allowed_always": allowed})
    if name == "config":
        values = {f"ai.{k}": v for k, v in asdict(rt.settings).items()}
        values.update({f"compaction.{k}": v for k, v in asdict(rt.context.settings).items()})
        values.update({k: v for k, v in flatten(rt.deps.config_data).items()
                       if not k.startswith(("ai.", "compaction."))})
        values = {k: mask(k, v) for k, v in sorted(values.items())}
        sources = {key: rt.deps.source_of(key) for key in values}
        lines = [f"{key}: {value}  ({sources[key]})" for key, value in values.items()]
        return "\n".join(lines), json.dumps({"values": values, "sources": sources}, default=str)
    if name == "trace":
        return _trace(rt)
    if name in LATER:
        return LATER[name], "{}"
    return f"unknown command /{name}", json.dumps({"error": "unknown_command"})


def _trace(rt: SessionRuntime) -> tuple[str, str]:
    """Where this session's traces are and one line per finished turn."""
    trace_dir = Path(rt.session.workspace) / ".ai-coding" / "traces" / rt.session.id
    try:
        turns = json.loads((trace_dir / "summary.json").read_text()).get("turns", [])
    except (OSError, ValueError):
        turns = []
    lines = [f"traces: {trace_dir}"]
    for t in turns[-10:]:
        usage = t.get("usage") or {}
        lines.append(f"turn {t.get('turn')}: {t.get('status')} · {t.get('iterations')} steps · "
                     f"{(t.get('duration_ms') or 0) / 1000:.1f}s · {usage.get('total_tokens', 0)} tokens")
    return "\n".join(lines), json.dumps({"dir": str(trace_dir), "turns": turns}, default=str)


_SECRET_KEYS = ("api_key", "token", "secret", "password")


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists stay values)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out.update(flatten(value, dotted))
        else:
            out[dotted] = value
    return out


def mask(key: str, value: Any) -> Any:
    """Secrets shown as their ${VAR} reference or masked; everything else as is."""
    if not any(part in key.rsplit(".", 1)[-1] for part in _SECRET_KEYS) or not value:
        return value
    text = str(value)
    return text if text.startswith("${") else "***"
