"""The root ``-w/--workspace`` and ``--session`` options, applied to the subcommand they precede.

``ai-coding -w DIR run x`` means the same as ``ai-coding run -w DIR x``; a subcommand that takes
no such option refuses it with one line instead of ignoring it. Stdlib and click only: this runs
on every command line. Typer vendors its own click, so the types come from ``typer.core``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from typer.core import TyperGroup, TyperOption

# Root option name -> how the user spells it (for messages).
GLOBAL_FLAGS = {"workspace": "-w/--workspace", "session": "--session"}


@dataclass(frozen=True)
class Leaf:
    """The command a command line ends at: its path below the root, the parameter names it
    takes, and the flags each was given with explicitly after the command."""

    path: tuple[str, ...]
    params: frozenset[str]
    given: frozenset[str]


def global_problem(globals_given: dict[str, str], leaf: Leaf) -> str | None:
    """Why the root options cannot apply to ``leaf``, or None when they can."""
    command = " ".join(leaf.path)
    for name, value in globals_given.items():
        if not value:
            continue
        flag = GLOBAL_FLAGS[name]
        if name not in leaf.params:
            return f"{flag} does not apply to `ai-coding {command}`; leave it out"
        if name in leaf.given:
            return f"{flag} was given both before and after `{command}`; pass it once"
    return None


def default_map_for(globals_given: dict[str, str], leaf: Leaf) -> dict[str, Any]:
    """The click ``default_map`` that hands the root options to ``leaf``'s own parameters."""
    node: dict[str, Any] = {name: value for name, value in globals_given.items() if value}
    for part in reversed(leaf.path):
        node = {part: node}
    return node


def _explicit(params: Sequence[Any], args: Sequence[str]) -> frozenset[str]:
    """Names of the options among ``params`` that ``args`` spells out (``-w X``, ``--workspace=X``)."""
    found = set()
    for param in params:
        if not isinstance(param, TyperOption):
            continue
        for opt in param.opts:
            if any(a == opt or a.startswith(opt + "=") or (len(opt) == 2 and a.startswith(opt) and
                                                            not a.startswith("--")) for a in args):
                found.add(param.name or "")
    return frozenset(found)


def find_leaf(ctx: Any, name: str, cmd: Any, args: list[str]) -> Leaf:
    """Follow sub-groups (``sessions list``) to the command ``args`` name."""
    path = [name]
    rest = list(args)
    while isinstance(cmd, TyperGroup):
        words = [a for a in rest if not a.startswith("-")]
        sub = cmd.get_command(ctx, words[0]) if words else None
        if sub is None:
            break
        path.append(words[0])
        rest = rest[rest.index(words[0]) + 1:]
        cmd = sub
    params = cmd.params if not isinstance(cmd, TyperGroup) else []
    names = frozenset(p.name for p in params if p.name)
    return Leaf(tuple(path), names, _explicit(params, rest))


class RootGroup(TyperGroup):
    """The root group: hands ``-w``/``--session`` given before the command to that command, and
    reads ``-p PROMPT`` as ``run PROMPT`` (see :mod:`clients.cli.headless`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from clients.cli.headless import lift_prompt, rewrite_argv

        commands = self.list_commands(ctx)
        parsed: list[str] = super().parse_args(ctx, lift_prompt(rewrite_argv(args, commands), commands))
        return parsed

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        given = {key: str(ctx.params.get(key) or "") for key in GLOBAL_FLAGS}
        if name is None or cmd is None or not any(given.values()) or "--help" in rest:
            return name, cmd, rest
        leaf = find_leaf(ctx, name, cmd, rest)
        problem = global_problem(given, leaf)
        if problem:
            print(f"ai-coding: {problem}", file=sys.stderr)
            ctx.exit(2)
        ctx.default_map = {**(ctx.default_map or {}), **default_map_for(given, leaf)}
        return name, cmd, rest
