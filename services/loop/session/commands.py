"""Slash commands the loop answers (/status, /model, /todo, /config, ...): text + JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.kernel.config import is_secret_key, mask_secret
from services.kernel.errors import AiCodingError
from services.loop.policy.permissions import MODES, PermissionMode

if TYPE_CHECKING:
    from services.loop.session.runtime import SessionRuntime
    from services.loop.tracing.report import TurnReport

async def run_command(rt: SessionRuntime, command: str, args: str) -> tuple[str, str]:
    """``(text to print, JSON for programs)`` for one loop-handled slash command: the session's own
    (this module's table) or one a feature adds."""
    name = command.strip().lstrip("/").lower()
    own = COMMANDS.get(name)
    if own is not None:
        return own(rt, args)
    feature_command = rt.commands().get(name)
    if feature_command is not None:
        return await feature_command(args)
    return f"unknown command /{name}", json.dumps({"error": "unknown_command"})


def _status(rt: SessionRuntime, args: str) -> tuple[str, str]:
    data: dict[str, Any] = {"session": rt.session.id, "workspace": rt.session.workspace,
                            "model": rt.model.model_name, "messages": len(rt.session.messages),
                            "turns": rt.session.turns, "running": not rt.idle, "queued": len(rt.queue),
                            "usage": rt.session.usage}
    text = (f"session {rt.session.id} · model {rt.model.model_name} · {len(rt.session.messages)} messages · "
            f"{rt.session.turns} turns · {'running' if not rt.idle else 'idle'}")
    return text, json.dumps(data)


def _model(rt: SessionRuntime, args: str) -> tuple[str, str]:
    wanted = args.strip()
    if wanted and rt.idle:
        try:
            model = rt.deps.model_for(wanted)
        except AiCodingError as err:
            return f"cannot switch model: {err}", json.dumps({"error": err.reason})
        rt.set_model(model)
    elif wanted:
        return "cannot switch model while a turn runs; try again when it ends", json.dumps({"error": "busy"})
    configured = sorted(rt.deps.model_names)
    text = f"model: {rt.model.model_name}" + (f" · configured: {', '.join(configured)}" if configured else "")
    return text, json.dumps({"model": rt.model.model_name, "configured": configured})


def _todo(rt: SessionRuntime, args: str) -> tuple[str, str]:
    items = rt.session.task_state.to_json()["items"]
    if not items:
        return "no tasks", json.dumps({"items": []})
    lines = [f"[{i.get('status')}] {i.get('id')}. {i.get('content')}" for i in items]
    return "\n".join(lines), json.dumps({"items": items})


def _permissions(rt: SessionRuntime, args: str) -> tuple[str, str]:
    wanted = args.strip().lower()
    if wanted:
        if wanted not in MODES:
            return f"unknown mode {wanted!r}; use one of: {', '.join(MODES)}", json.dumps({"error": "bad_mode"})
        rt.permission_mode = PermissionMode(wanted)
        rt.session.permission_mode = wanted
        rt.save()  # the session's choice: a restarted loop opens it in the same mode
    allowed = rt.session.allowed_tools
    text = f"permissions: {rt.permission_mode} · always allowed: " + (", ".join(allowed) or "none")
    return text, json.dumps({"mode": rt.permission_mode, "allowed_always": allowed})


def _config(rt: SessionRuntime, args: str) -> tuple[str, str]:
    """Every effective value with its layer: the session's typed ``ai`` and ``compaction`` settings
    (defaults included), the rest as the kernel's config report has it (secrets masked there)."""
    typed = {f"ai.{k}": v for k, v in asdict(rt.settings).items()}
    typed.update({f"compaction.{k}": v for k, v in asdict(rt.compaction_settings).items()})
    values = {k: mask_secret(v) if is_secret_key(k) else v for k, v in typed.items()}
    sources = {key: rt.deps.source_of(key) for key in values}
    for key, value, source in rt.deps.config_rows:
        if not key.startswith(("ai.", "compaction.")):
            values[key], sources[key] = value, source
    lines = [f"{key}: {values[key]}  ({sources[key]})" for key in sorted(values)]
    return "\n".join(lines), json.dumps({"values": dict(sorted(values.items())), "sources": sources}, default=str)


def _trace_command(rt: SessionRuntime, args: str) -> tuple[str, str]:
    return _trace(rt)


COMMANDS: dict[str, Callable[[SessionRuntime, str], tuple[str, str]]] = {
    "status": _status, "model": _model, "todo": _todo, "permissions": _permissions, "config": _config,
    "trace": _trace_command,
}
"""The session's own commands; the features add theirs (/compact, /budget, /skills, /hooks, /tasks, /accept)."""


TRACE_TURNS_SHOWN = 10


def _trace(rt: SessionRuntime) -> tuple[str, str]:
    """Where this session's traces are, one line per turn (queued turns included), and the
    last turn's detail: tokens, time, degradations, refusals, compaction layers."""
    from services.loop.tracing.report import session_reports
    from services.loop.tracing.store import session_ref, traces_root

    ref = session_ref(traces_root(Path(rt.session.workspace)) / rt.session.id)
    reports = session_reports(ref)
    if not rt.deps.traces:
        return "tracing is off (loop.traces: false)", json.dumps({"dir": str(ref.dir), "turns": []})
    lines = [f"traces: {ref.dir}"] + [_turn_line(r) for r in reports[-TRACE_TURNS_SHOWN:]]
    if len(reports) > TRACE_TURNS_SHOWN:
        lines.insert(1, f"... {len(reports) - TRACE_TURNS_SHOWN} earlier turns (`ai-coding trace export` has them all)")
    if not reports:
        lines.append("no turn traced yet")
    else:
        lines += _last_turn_detail(reports[-1])
    turns = [{"turn": r.turn, "status": r.status, "steps": r.iterations, "duration_ms": r.duration_ms,
              "prompt_tokens": r.tokens.prompt, "completion_tokens": r.tokens.completion,
              "cached_tokens": r.tokens.cached, "degraded": len(r.degraded),
              "refused": sum(1 for t in r.tools if t.refused)} for r in reports]
    return "\n".join(lines), json.dumps({"dir": str(ref.dir), "turns": turns})


def _turn_line(r: TurnReport) -> str:
    cached = "" if r.tokens.cached is None else f", {r.tokens.cached} cached"
    return (f"turn {r.turn}: {r.status} · {r.iterations} steps · {r.duration_ms / 1000:.1f}s · "
            f"{r.tokens.prompt + r.tokens.completion} tokens ({r.tokens.prompt} prompt{cached})")


def _last_turn_detail(r: TurnReport) -> list[str]:
    from services.loop.tracing.egress import egress_line

    out = [f"last turn {r.turn}: {len(r.tools)} tool call(s), "
           f"{sum(1 for t in r.tools if t.status == 'failed')} failed"]
    out += [f"  degraded {d.component}: {d.reason}" for d in r.degraded]
    out += [f"  refused {t.tool}: {t.error_code}" for t in r.tools if t.refused]
    out += [f"  network of {t.tool} {t.call_id}: {egress_line(t.egress)}" for t in r.tools if t.egress]
    for fact in r.compactions:
        out.append(f"  compaction: ~{fact.estimated_before} -> ~{fact.estimated_after} tokens")
        for name, layer in fact.rows():
            out.append(f"    {name} not triggered" if layer is None else
                       f"    {name}: removed {layer.removed} · rewritten {layer.rewritten} · skipped {layer.skipped}"
                       f" · {layer.before_tokens} -> {layer.after_tokens} tokens")
    return out
