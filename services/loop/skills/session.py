"""One session's skills: the catalog it sends, the ``skill`` tools, and ``/skills``.

``refresh`` runs before every model step: it rescans the skill directories (cheap, see
registry.py) and, when the catalog text changed since the last request, reports one
``SkillCatalogChanged`` event: the system message changes, so the provider's prompt cache
restarts once, and is stable again from the next step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services.kernel.errors import AiCodingError
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import EventBody, SkillCatalogChanged
from services.loop.policy.codes import ErrorCode
from services.loop.policy.permissions import Level
from services.loop.skills import library
from services.loop.skills.registry import (
    SkillDir,
    SkillRegistry,
    build_catalog,
    catalog_lines,
    default_dirs,
    library_dir,
    override_dirs,
)
from services.loop.skills.skill import SKILL_FILE, Skill
from services.loop.tools.args import define, doc

Emit = Callable[[EventBody], None]
MAX_FILE_CHARS = 60_000



@dataclass(frozen=True)
class SkillArgs:
    """``skill``'s arguments."""

    name: str | None = doc("The skill's name from the catalog; omit it to list every skill.", None)
    file: str | None = doc("A file of the skill to read (as listed), instead of SKILL.md.", None)


@dataclass(frozen=True)
class ProposeArgs:
    """``skill_propose``'s arguments."""

    name: str = doc("Short name: letters, digits, '.', '_' or '-'.")
    description: str = doc("One line saying when to use it (the catalog shows it).")
    body: str = doc("The instructions, in Markdown.")


class SessionSkills:
    """The skill directories of one session and the catalog last sent."""

    def __init__(self, workspace: str, override: list[str] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.library = library_dir(env)
        dirs: list[SkillDir] = override_dirs(override) if override else default_dirs(workspace, env)
        self.registry = SkillRegistry(dirs)
        self.current = self.registry.scan()
        self._lines = catalog_lines(self.current)
        self.catalog, self.truncated = build_catalog(self._lines)
        self._rescanned = False
        """A scan outside ``refresh`` (``/skills``) saw a change the catalog has not taken yet."""

    def refresh(self, emit: Emit) -> bool:
        """Rescan; True (and one event) when the catalog text changed."""
        self.current = self.registry.scan()
        if not (self.current.changed or self._rescanned):
            return False
        self._rescanned = False
        lines = catalog_lines(self.current)
        if lines == self._lines:
            return False
        before, self._lines = self._lines, lines
        self.catalog, self.truncated = build_catalog(lines)
        emit(SkillCatalogChanged(
            skills=len(lines), catalog_chars=len(self.catalog),
            added=sorted(set(lines) - set(before)), removed=sorted(set(before) - set(lines)),
            changed=sorted(n for n in set(lines) & set(before) if lines[n] != before[n]), truncated=self.truncated))
        return True

    # -- tools --

    def tool_defs(self) -> list[ToolDef]:
        return [
            define("skill", "Read a skill from the catalog: its instructions (SKILL.md) and the list of its "
                            "files; pass `file` to read one of them. With no name, list every skill.",
                   SkillArgs, self._skill, permission=Level.ALLOW, parallel_safe=True, deferred=True),
            define("skill_propose", "Propose a new skill (reusable instructions for a kind of task) for the user "
                                    "to review; it enters the catalog only once they approve it (/skills).",
                   ProposeArgs, self._propose, permission=Level.ALLOW, deferred=True),
        ]

    async def _skill(self, ctx: ToolContext, call: ToolCall, args: SkillArgs) -> ToolOutcome:
        name = (args.name or "").strip()
        if not name:
            return self._list(call)
        skill = self.current.skills.get(name)
        if skill is None:
            known = ", ".join(sorted(self.current.skills)) or "none"
            return ToolOutcome.error(call.id, call.name, ErrorCode.UNKNOWN_SKILL, f"no skill named {name!r}; skills: {known}")
        data = {"name": skill.name, "version": skill.version, "status": skill.status, "source": skill.source,
                "files": list(skill.files)}
        wanted = (args.file or "").strip()
        if wanted:
            return self._file(call, skill, wanted, data)
        if skill.broken:
            return ToolOutcome.error(call.id, call.name, ErrorCode.BROKEN_SKILL, f"skill {name!r} cannot be read: {skill.problem}")
        files = "\n".join(f"  {f}" for f in skill.files) or "  (none)"
        text = (f"skill {skill.name}{skill.badges()} · {skill.source}\nfiles:\n{files}\n\n{skill.body}")
        return ToolOutcome(call.id, call.name, True, text, data=data)

    def _file(self, call: ToolCall, skill: Skill, wanted: str, data: dict[str, Any]) -> ToolOutcome:
        if wanted != SKILL_FILE and wanted not in skill.files:
            return ToolOutcome.error(call.id, call.name, ErrorCode.UNKNOWN_FILE,
                                 f"skill {skill.name!r} has no file {wanted!r}; files: {', '.join(skill.files) or 'none'}")
        path = skill.path / wanted
        try:
            if path.is_symlink() or not path.resolve().is_relative_to(skill.path.resolve()):
                raise OSError("not a plain file of the skill")
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            return ToolOutcome.error(call.id, call.name, ErrorCode.UNREADABLE_FILE, f"cannot read {wanted}: {err}")
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n[... cut at {MAX_FILE_CHARS} characters ...]"
        return ToolOutcome(call.id, call.name, True, f"skill {skill.name}{skill.badges()} · {wanted}\n\n{text}",
                           data={**data, "file": wanted})

    def _list(self, call: ToolCall) -> ToolOutcome:
        rows = [f"- {s.name}{s.badges()}: {s.description or s.problem}" for _, s in sorted(self.current.skills.items())]
        data = {"skills": [{"name": s.name, "version": s.version, "status": s.status, "broken": s.broken}
                           for s in self.current.skills.values()]}
        return ToolOutcome(call.id, call.name, True, "\n".join(rows) or "no skills installed", data=data)

    async def _propose(self, ctx: ToolContext, call: ToolCall, args: ProposeArgs) -> ToolOutcome:
        name = args.name.strip()
        if name in self.current.skills:
            raise ValueError(f"a skill named {name!r} exists already; propose another name")
        folder = library.propose(self.library, name, args.description, args.body)
        return ToolOutcome(call.id, call.name, True,
                           f"proposed skill {name!r}: it waits for the user's review (/skills) and is not usable "
                           "until approved", data={"name": name, "pending": str(folder)})

    # -- /skills --

    def command(self, args: str) -> tuple[str, str]:
        verb, _, rest = args.strip().partition(" ")
        name = rest.strip()
        if verb in ("approve", "a", "deny", "d"):
            try:
                if verb in ("approve", "a"):
                    library.approve(self.library, name)
                    done = f"approved {name}: it joins the catalog from the next request"
                else:
                    library.deny(self.library, name)
                    done = f"denied {name}: the proposal was deleted"
            except AiCodingError as err:
                return str(err), json.dumps({"error": err.reason, "message": err.message})
            text, data = self.listing()
            return f"{done}\n{text}", json.dumps({**data, "done": done})
        if verb:
            return (f"unknown /skills action {verb!r}: use /skills, /skills approve NAME or /skills deny NAME",
                    json.dumps({"error": "bad_action"}))
        text, data = self.listing()
        return text, json.dumps(data)

    def listing(self) -> tuple[str, dict[str, Any]]:
        self.current = self.registry.scan()
        self._rescanned = self._rescanned or self.current.changed
        skills = self.current
        lines = [f"  {s.name}{s.badges()} · {s.source}" + (f" · {s.problem}" if s.broken else "")
                 for _, s in sorted(skills.skills.items())] or ["  no skills"]
        out = ["skills:", *lines]
        if skills.shadowed:
            out.append("shadowed (a higher directory has the same name):")
            out += [f"  {lost.name} · {lost.source} (shadowed by {won.source})" for lost, won in skills.shadowed]
        waiting = library.pending(self.library)
        if waiting:
            out.append("pending review (approve: /skills approve NAME · deny: /skills deny NAME):")
            out += [f"  {p.name}: {p.description or p.problem} · files: {', '.join(p.files) or 'SKILL.md'}"
                    for p in waiting]
        if self.truncated:
            out.append(f"the catalog is truncated at its budget ({len(self.catalog)} characters)")
        data = {"skills": [_row(s) for s in skills.skills.values()],
                "shadowed": [{**_row(lost), "by": won.source} for lost, won in skills.shadowed],
                "pending": [_row(p) for p in waiting], "catalog_chars": len(self.catalog),
                "truncated": self.truncated}
        return "\n".join(out), data


def _row(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "version": skill.version,
            "status": skill.status, "source": skill.source, "path": str(skill.path), "problem": skill.problem}

