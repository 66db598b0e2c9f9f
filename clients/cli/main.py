"""The ``ai-coding`` console script.

Startup must stay fast: this module imports only typer; every command imports
what it needs inside its body, and nothing on the client side imports openai
or mcp.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys
from typing import Annotated

import typer

from clients.cli.global_options import RootGroup
from services.kernel import __version__

SERVICE_NAMES = ("loop", "tools", "memory", "mcp_gateway")

app = typer.Typer(
    name="ai-coding",
    cls=RootGroup,
    help="A terminal AI coding agent. Run with no command for an interactive session (`ai-coding \"PROMPT\"`, "
         "`ai-coding -c \"PROMPT\"` or `ai-coding -r ID \"PROMPT\"` start it with that message), or `ai-coding -p "
         "PROMPT` for one headless turn (Claude Code's -p/--print, Codex's `exec`). Project instructions: "
         "AGENTS.md and CLAUDE.md from the git root down to the current dir, and "
         "~/.config/ai-coding/AGENTS.md.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _skills(value: list[str] | None) -> list[str] | None:
    """``--skills DIR``: the loop reads these skill directories instead of the defaults (this client's
    sessions only; the option travels with each OpenSession)."""
    if value:
        import os
        from pathlib import Path

        os.environ["AI_CODING_SKILLS"] = os.pathsep.join(str(Path(v).expanduser().resolve()) for v in value)
    return value


def _version(value: bool) -> None:
    if value:
        print(f"ai-coding {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version."),
    print_mode: bool = typer.Option(False, "--print", "-p",
                                    help="Headless: run PROMPT once, print the answer and exit (`ai-coding -p "
                                         "\"fix the test\"`, or the prompt on stdin: `echo ... | ai-coding -p`); "
                                         "the same as `ai-coding run`, whose options it takes."),
    continue_last: bool = typer.Option(False, "--continue", "-c",
                                       help="Continue the most recent session of this workspace."),
    resume: str = typer.Option("", "--resume", "-r",
                               help="Resume a session by id or unique prefix (a prefix matching several lists "
                                    "them); a bare -r lists the sessions to pick from."),
    workspace: str = typer.Option("", "--workspace", "-w",
                                  help="Workspace root (default: the git root above the current dir, else the "
                                       "current dir); also passed to the command."),
    session: str = typer.Option("", "--session",
                                help="Continue this session (id or unique prefix); also passed to the command."),
    first_message: str = typer.Option("", "--first-message", hidden=True,
                                      help="Set by a positional PROMPT: `ai-coding \"fix the bug\"`."),
    skills: Annotated[list[str] | None, typer.Option(
        "--skills", callback=_skills, metavar="DIR",
        help="Read skills from DIR (repeatable) instead of the user library and the workspace's skills/, "
             ".claude/skills and .agents/skills.")] = None,
) -> None:
    """ai-coding: a terminal AI coding agent."""
    if ctx.invoked_subcommand is None:
        from clients.cli.repl import run_repl
        from clients.cli.setup.first_run import first_run

        stopped = first_run(workspace)
        if stopped is not None:
            raise typer.Exit(stopped)
        if continue_last or resume:
            session = _pick_for_repl(workspace, continue_last, resume or session)
        raise typer.Exit(run_repl(workspace or None, session or None, first_message=first_message))


def _pick_for_repl(workspace: str, continue_last: bool, resume: str) -> str:
    from clients.cli import headless
    from clients.cli.commands.common import cli_errors
    from clients.cli.commands.run import pick_session
    from clients.cli.commands.sessions import session_rows

    root, _ = headless.workspace_and_cwd(workspace)
    flag = "-c" if continue_last and not resume else "-r"  # lines read `ai-coding -r: pick a session ...`
    with cli_errors(flag):
        rows = session_rows(root, warn_unreadable=True)
    return pick_session(rows, continue_last, resume, flag)


@app.command()
def attach(
    session: str = typer.Argument(..., help="Id (or unique prefix) of a session another client drives."),
    workspace: str = typer.Option("", "--workspace", "-w", help="Workspace root (default: current dir)."),
) -> None:
    """Follow a running session from a second terminal; you can answer its approvals."""
    from clients.cli.repl import run_repl

    raise typer.Exit(run_repl(workspace or None, session, attach=True))


@app.command()
def acp() -> None:
    """Speak the Agent Client Protocol on stdin/stdout for an editor (Zed, JetBrains, Neovim): see docs/editors.md."""
    from clients.acp.main import run_acp

    raise typer.Exit(run_acp())


@app.command()
def serve(name: str = typer.Argument(..., help="loop, tools, memory or mcp_gateway")) -> None:
    """Run one service in the foreground (the supervisor uses this)."""
    if name not in SERVICE_NAMES:
        print(f"ai-coding serve: unknown service {name!r}; use one of: {', '.join(SERVICE_NAMES)}", file=sys.stderr)
        raise typer.Exit(2)
    from services.kernel.server import run_service

    module = importlib.import_module(f"services.{name}.main")
    raise typer.Exit(run_service(module.build, name))


@app.command(
    "fake-model",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def fake_model(ctx: typer.Context) -> None:
    """Run the scripted OpenAI-compatible model server (--script FILE --port N; --help for more)."""
    module = importlib.import_module("services.fake_model.main")
    raise typer.Exit(module.main(list(ctx.args)))


def _register_commands() -> None:
    from clients.cli.commands import demo, run, services, setup, trust

    services.register(app)
    setup.register(app)
    trust.register(app)
    run.register(app)
    demo.register(app)
    # Sub-apps other areas own; mounted only once their module exists, so this file never breaks.
    # Each is imported only when named on the command line (or for --help), keeping --version fast.
    args = sys.argv[1:]
    wanted = not args or "--help" in args or "-h" in args
    if wanted or "rewind" in args:
        from clients.cli.commands import checkpoints

        checkpoints.register(app)
    for noun in ("batch", "checkpoints", "config", "memory", "mcp", "network", "sessions", "skill", "trace"):
        if not (wanted or noun in args):
            continue
        if importlib.util.find_spec(f"clients.cli.commands.{noun}") is None:
            continue
        module = importlib.import_module(f"clients.cli.commands.{noun}")
        sub = getattr(module, "app", None)
        if isinstance(sub, typer.Typer):
            app.add_typer(sub, name=noun)


_register_commands()


def for_command_line(args: list[str]) -> typer.Typer:
    """The app to run for ``args``: when they start with a command's name (``ai-coding run ...``), a
    copy of ``app`` holding that command alone.

    Typer turns every registered function into a click command (its signature, its annotations
    evaluated) each time the app runs: about 30 of them, the largest part of a warm ``ai-coding run``
    spent in typer (bench/startup.py). With the command named first nothing reads the others:
    ``--help`` after it shows that command's options only, and the root group's argv rewriting
    (:mod:`clients.cli.global_options`) stops at a leading command. Any other command line (root
    options first, a prompt, no command, ``--help``) gets the whole app."""
    first = args[0] if args else ""
    if not first or first.startswith("-"):
        return app
    commands = [info for info in app.registered_commands if _command_name(info) == first]
    groups = [info for info in app.registered_groups if info.name == first]
    if len(commands) + len(groups) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands = commands
    only.registered_groups = groups
    return only


def _command_name(info: typer.models.CommandInfo) -> str:
    if info.name:
        return info.name
    return typer.main.get_command_name(info.callback.__name__) if info.callback is not None else ""


def main() -> None:
    for_command_line(sys.argv[1:])()


if __name__ == "__main__":
    main()
