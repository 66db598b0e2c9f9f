"""Slash command parsing: pure, offline, no terminal state.

``parse_slash(line)`` says what a submitted line is: a known command (with its
canonical name and arguments), a near-miss of one ("did you mean"), a removed
command's tombstone, or ``None``: plain text for the model (including unknown
``/text`` such as ``/path/to/file``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Canonical name -> (argument hint, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "help": ("", "list the commands"),
    "status": ("", "session id, message count, memory notes"),
    "model": ("[name]", "list the configured models, or switch to one"),
    "resume": ("[id]", "pick a saved session, or resume one by id prefix"),
    "permissions": ("[auto|confirm]", "show or switch how approvals are answered"),
    "todo": ("", "the session's task list"),
    "tasks": ("[stop <id>]", "background subagent runs"),
    "jobs": ("", "background jobs (job_start): state, runtime, command"),
    "skills": ("[approve|deny <name>]", "the skills, shadowed ones, and pending ones to approve or deny"),
    "hooks": ("", "the configured hooks and what each did last"),
    "plan": ("<topic>", "plan a topic and run the plan step by step"),
    "accept": ('["stmt" -- cmd]',
               "acceptance items: proofs the gate runs whenever the model stops"),
    "review": ("", "ask the model to review the current git diff"),
    "config": ("", "the effective configuration"),
    "compact": ("", "compact the history now"),
    "rewind": ("[TURN[.STEP] --code|--conversation]", "pick a turn to go back to (arrow keys), or rewind files and/or conversation to TURN"),
    "undo": ("", "take back the last turn's changes to the files (shell commands' too)"),
    "redo": ("", "re-apply what the last rewind or undo took away"),
    "checkpoints": ("[prune]", "the checkpoints of this session's steps with the files each changed; prune drops them"),
    "memory": ("[search|show|pin|unpin|forget]", "long-term memory notes by kind; search, show, pin, forget one"),
    "trace": ("", "trace summary of the last turn"),
    "budget": ("", "token ledger of this session"),
    "cost": ("", "what the last turn and the session cost: USD (with prices), tokens, cache hit rate"),
    "last": ("", "full arguments and output of the last tool call (Ctrl-Y copies them)"),
    "diff": ("[session]", "the files this turn changed as one diff (session: every change of this session)"),
    "thinking": ("", "expand the last turn's folded reasoning"),
    "mcp": ("[retry <name>]", "MCP servers: state, tools, failure reason; retry one now"),
    "network": ("[allow|revoke <host[:port]>]",
                "the sandbox's network grants for this session and hosts refused lately; allow or revoke one"),
    "clear": ("", "start a new session (the old one stays resumable)"),
    "quit": ("", "exit"),
}

REVIEW_PROMPT = ("Review the current git diff of this workspace (run `git diff` and `git diff --staged`): "
                 "point out bugs, risky changes and missing tests, most important first.")
"""What ``/review`` sends to the model (the REPL and an editor alike)."""

# Command -> its subcommands as (name with argument hint, one-line help), for completion.
SUBCOMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "memory": (
        ("search <words>", "ranked search (not counted as the model's use)"),
        ("show <id>", "every field of a note (an id prefix will do)"),
        ("pin <id>", "always in the constraints block, never evicted"),
        ("unpin <id>", "remove the pin"),
        ("forget <id>", "delete a note (asks y/N first)"),
    ),
    "mcp": (("retry <name>", "reconnect a server now and show its new state"),),
    "network": (("allow <host[:port]>", "let the sandbox reach it for this session (background jobs too)"),
                ("revoke <host[:port]>", "take that back")),
    "skills": (("approve <name>", "move a pending skill into the library (it joins the catalog)"),
               ("deny <name>", "delete a pending skill")),
}

ALIASES: dict[str, str] = {"h": "help", "q": "quit", "exit": "quit", "?": "help"}

# Removed commands: typing one gets this answer instead of going to the model.
TOMBSTONES: dict[str, str] = {
    "plan-run": "did you mean /plan? /plan-run was removed: /plan <topic> plans and runs the steps in one go.",
}

MAX_DISTANCE = 2
_NAME = re.compile(r"^[A-Za-z][A-Za-z-]*$|^\?$")


@dataclass(frozen=True)
class SlashCommand:
    """A known command: canonical ``name`` and the raw ``args`` after it (stripped)."""

    name: str
    args: str


@dataclass(frozen=True)
class SlashReply:
    """A line to print instead of running anything (did-you-mean or a tombstone); never sent to the model."""

    text: str


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between ``a`` and ``b``."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest_command(name: str) -> str | None:
    """The known command or alias nearest to ``name`` within ``MAX_DISTANCE`` (ties: the first listed)."""
    best: tuple[int, str] | None = None
    for candidate in (*COMMANDS, *ALIASES):
        distance = edit_distance(name, candidate)
        if distance <= MAX_DISTANCE and (best is None or distance < best[0]):
            best = (distance, ALIASES.get(candidate, candidate))
    return best[1] if best else None


def parse_slash(line: str) -> SlashCommand | SlashReply | None:
    """Classify a submitted line. ``None`` means: send it to the model as it is."""
    text = line.strip()
    if not text.startswith("/") or text == "/":
        return None
    head, _, args = text[1:].partition(" ")
    name = head.lower()
    if name in COMMANDS:
        return SlashCommand(name, args.strip())
    if name in ALIASES:
        return SlashCommand(ALIASES[name], args.strip())
    if name in TOMBSTONES:
        return SlashReply(TOMBSTONES[name])
    if not _NAME.match(head):
        return None
    # Single letters are too close to everything (/x is one edit from /h and /q): only aliases count.
    suggestion = closest_command(name) if len(name) > 1 else None
    if suggestion:
        return SlashReply(f"unknown command /{head}: did you mean /{suggestion}?")
    return None


def completions(prefix: str) -> list[tuple[str, str]]:
    """Commands starting with ``prefix`` (without the slash) as (``/name args``, help) pairs."""
    return [(f"/{name}" + (f" {hint}" if hint else ""), doc)
            for name, (hint, doc) in COMMANDS.items() if name.startswith(prefix.lower())]


def subcommand_completions(command: str, prefix: str) -> list[tuple[str, str]]:
    """Subcommands of ``command`` starting with ``prefix`` as (``name hint``, help) pairs."""
    return [(shown, doc) for shown, doc in SUBCOMMANDS.get(command, ())
            if shown.startswith(prefix.lower())]


# Commands of the product that this version does not have yet: /help says so instead of
# letting a user find out by trying.
NOT_IN_THIS_VERSION: frozenset[str] = frozenset()


def help_text() -> str:
    """The /help listing, one command a line."""
    width = max(len(name) + len(hint) for name, (hint, _) in COMMANDS.items()) + 3
    rows = [f"  /{name} {hint}".ljust(width + 2) + doc + (" (not in this version)" if name in NOT_IN_THIS_VERSION
                                                         else "")
            for name, (hint, doc) in COMMANDS.items()]
    keys = ("  keys: Enter send (queued while a turn runs) · Esc cancel running tools · Ctrl-C abort the turn"
            " · Ctrl-C twice or Ctrl-D exit · Ctrl-Y copy the last tool call · Ctrl-O unfold the last folded diff")
    return "\n".join([*rows, keys])
