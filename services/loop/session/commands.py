"""Slash commands the loop answers (/status, /model, /todo, /config, ...): text + JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.kernel.errors import AiCodingError
from services.loop.compaction.keeper import fixed_tokens
from services.loop.plans.command import accept_command
from services.loop.policy.permissions import MODES

if TYPE_CHECKING:
    from services.loop.session.runtime import SessionRuntime
    from services.loop.tracing.report import TurnReport

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
            rt.context.set_model(rt.model)  # its window sets the compaction budget from now on
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
        return _budget(rt)
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
    if name == "skills":
        return rt.skills.command(args)
    if name == "hooks":
        text, rows = rt.hooks.report()
        return text, json.dumps({"hooks": rows})
    if name == "tasks":
        return rt.subagents.command(args)
    if name == "accept":
        return accept_command(rt.acceptance, args)
    if name in LATER:
        return LATER[name], "{}"
    return f"unknown command /{name}", json.dumps({"error": "unknown_command"})


TRACE_TURNS_SHOWN = 10


def _budget(rt: SessionRuntime) -> tuple[str, str]:
    """The session's token ledger, saying which of four states it is in."""
    usage, limit = rt.session.usage, rt.settings.turn_token_budget
    total = int(usage.get("totalTokens", 0) or 0)
    if not rt.deps.traces:
        state, text = "tracing_off", f"tracing is off (loop.traces: false); tokens counted anyway: {total}"
    elif rt.session.turns == 0:
        state, text = "no_turn", "no turn has run in this session yet"
    elif total == 0:
        state, text = "no_usage", (f"{rt.session.turns} turn(s) ran but the model reported no token usage "
                                   "(its endpoint sends none)")
    else:
        state, text = "usage", (f"session tokens: {total} (prompt {usage.get('promptTokens', 0)} · "
                                f"completion {usage.get('completionTokens', 0)})")
    if state in ("no_usage", "usage"):
        text += f" · turn budget: {limit or 'unlimited'}"
    if rt.idle:  # between turns: the next request's size from the record (a resumed session has no step yet)
        rt.context.estimates(rt.session.messages, fixed_tokens(rt.instructions, [t.spec for t in rt.tools.visible()], 0))
    fill = rt.context.fill()
    text += (f"\ncontext: ~{fill.used} tokens used / {fill.ceiling} compaction threshold / {fill.window} window"
             f" · {rt.context.state.compactions} compactions")
    return text, json.dumps({"state": state, "usage": usage, "turns": rt.session.turns, "turn_token_budget": limit,
                             "context": asdict(fill), "compactions": rt.context.state.compactions})


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
    out = [f"last turn {r.turn}: {len(r.tools)} tool call(s), "
           f"{sum(1 for t in r.tools if t.status == 'failed')} failed"]
    out += [f"  degraded {d.component}: {d.reason}" for d in r.degraded]
    out += [f"  refused {t.tool}: {t.error_code}" for t in r.tools if t.refused]
    for fact in r.compactions:
        out.append(f"  compaction: ~{fact.estimated_before} -> ~{fact.estimated_after} tokens")
        for name, layer in fact.rows():
            out.append(f"    {name} not triggered" if layer is None else
                       f"    {name}: removed {layer.removed} · rewritten {layer.rewritten} · skipped {layer.skipped}"
                       f" · {layer.before_tokens} -> {layer.after_tokens} tokens")
    return out


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
