"""When the harness may run the L2 static check itself, and which argv it may run (pure).

The commands come from ``ai.static_check.commands`` (default ``["ruff check ."]``)
but configuration alone is not permission to run code: a tracked
``config.yaml`` in a cloned repository could set it. The operator opts in with
``AI_CODING_STATIC_CHECK=1`` (a channel a repository cannot reach). Even then
each command is an argv (``shlex`` split, no shell: ``;``, ``&&``, ``|``,
``$(...)``, globs and ``$VAR`` stay literal) whose program must be a linter on
the allow-list; build tools that execute repository code (cargo, go, eslint,
pylint, ...) are deliberately absent. It runs at most once per turn, never on
the turn's last step (nobody would read it), with a 20 s timeout and its
output cut to 2,000 characters. Without the opt-in, the L2 nudge names the
commands for the model to run through bash, behind the permission gate.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

ENV_OPT_IN = "AI_CODING_STATIC_CHECK"
DEFAULT_COMMANDS = ("ruff check .",)
ALLOWED_PROGRAMS = frozenset({
    "ruff", "mypy", "pyright", "flake8", "black", "isort", "tsc", "gofmt", "staticcheck", "shellcheck",
})
TIMEOUT_SECONDS = 20.0
MAX_OUTPUT_CHARS = 2000


@dataclass(frozen=True)
class StaticCheckPlan:
    """What the harness will run (``argvs``) and what it refused, with reasons."""

    argvs: list[list[str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def plan_static_check(commands: list[str] | tuple[str, ...] | None, env: Mapping[str, str]) -> StaticCheckPlan:
    """The argvs allowed to run now; empty without the operator's opt-in."""
    wanted = list(commands) if commands else list(DEFAULT_COMMANDS)
    if env.get(ENV_OPT_IN, "") not in ("1", "true", "yes"):
        return StaticCheckPlan(refused=[f"{c}: not run ({ENV_OPT_IN}=1 not set)" for c in wanted])
    plan = StaticCheckPlan()
    for command in wanted:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            plan.refused.append(f"{command}: cannot be split ({exc})")
            continue
        if not argv:
            continue
        program = argv[0].rsplit("/", 1)[-1]
        if "/" in argv[0] or program not in ALLOWED_PROGRAMS:
            plan.refused.append(f"{command}: {argv[0]} is not an allowed linter")
            continue
        plan.argvs.append(argv)
    return plan


def should_run_static_check(level: int, iteration: int, max_iterations: int, already_ran: bool) -> bool:
    """Only for an L2 signal, once per turn, and not on the last step of the round."""
    return level == 2 and not already_ran and iteration < max_iterations


def trim_output(text: str) -> str:
    """Cut the combined output to MAX_OUTPUT_CHARS, saying how much was left out."""
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n[... {len(text) - MAX_OUTPUT_CHARS} more characters]"
