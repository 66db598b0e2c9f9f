"""``ai-coding skill install | list | remove``: the user's skill library (no service needed).

A skill is instructions the model will follow, so ``install`` shows what it is about to add
(name, description, files) and asks first unless ``--yes``; it refuses symbolic links, a
SKILL.md without a description, and a name the library already has unless ``--force``.
"""

from __future__ import annotations

import json
import sys

import typer

from clients.cli import exit_codes
from clients.cli.commands.common import cli_errors

app = typer.Typer(name="skill", help="The skill library: install, list, remove.", no_args_is_help=True)


@app.command("install")
def install(
    source: str = typer.Argument(..., help="A skill folder, a folder of skills, a git URL, or owner/repo (GitHub)."),
    force: bool = typer.Option(False, "--force", help="Replace a skill of the same name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before installing."),
) -> None:
    """Install skills into ~/.local/share/ai-coding/skills (after showing them and asking)."""
    from services.loop.skills import library
    from services.loop.skills.registry import library_dir

    with cli_errors("skill install"):
        target = library_dir()
        with library.fetched(source) as root:
            found = library.candidates(root, target, force)
            for item in found:
                skill = item.skill
                print(f"{skill.name}{skill.badges()}: {skill.description}")
                print(f"  files: {', '.join(('SKILL.md', *skill.files))}")
                if item.replaces:
                    print(f"  replaces the installed {skill.name} (--force)")
            if not yes and not _confirm(len(found)):
                print("nothing installed", file=sys.stderr)
                raise typer.Exit(exit_codes.FAILED)
            for item in found:
                print(f"installed {item.skill.name} -> {library.install(item, target)}")


def _confirm(count: int) -> bool:
    if not sys.stdin.isatty():
        print("ai-coding skill install: not a terminal; pass --yes to install without asking", file=sys.stderr)
        return False
    return typer.confirm(f"Install {count} skill(s)? The model will follow their instructions", default=False)


@app.command("list")
def list_skills(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text.")) -> None:
    """Skills in the library, and those pending review."""
    from services.loop.skills import library
    from services.loop.skills.registry import library_dir

    target = library_dir()
    rows = library.installed(target)
    waiting = library.pending(target)
    if as_json:
        print(json.dumps({"library": str(target), "skills": [_row(s) for s in rows],
                          "pending": [_row(s) for s in waiting]}))
        return
    for skill in rows:
        print(f"{skill.name}{skill.badges()}: {skill.description or skill.problem}")
    if waiting:
        print(f"pending review ({len(waiting)}): {', '.join(s.name for s in waiting)} (approve in /skills)")
    if not rows and not waiting:
        print(f"no skills in {target}")


def _row(skill: object) -> dict[str, object]:
    from services.loop.skills.skill import Skill

    assert isinstance(skill, Skill)
    return {"name": skill.name, "description": skill.description, "version": skill.version, "status": skill.status,
            "files": list(skill.files), "problem": skill.problem}


@app.command("remove")
def remove(name: str = typer.Argument(..., help="The skill's name.")) -> None:
    """Delete a skill from the library."""
    from services.loop.skills import library
    from services.loop.skills.registry import library_dir

    with cli_errors("skill remove"):
        print(f"removed {name} ({library.remove(name, library_dir())})")
