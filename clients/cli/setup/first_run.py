"""Whether a command line meets an unconfigured machine, and the questions that fix it."""

from __future__ import annotations

import sys
from pathlib import Path

from services.kernel.config import load_config
from services.kernel.errors import AiCodingError


def needs_setup(workspace: Path | None) -> bool:
    """True when no layer names a model (no user entry, no ``AI_CODING_MODEL``). A config that cannot
    be read is not this question: the command reports it as it is."""
    from services.loop.model.settings import default_model_name

    try:
        return not default_model_name(load_config(workspace))
    except AiCodingError:
        return False


def first_run(workspace: str) -> int | None:
    """On a terminal with nothing configured, ask the setup questions: None to go on with the command
    (run in ``workspace``, "" = the default one), else the exit code to stop with."""
    from clients.cli.headless import workspace_and_cwd

    if not (sys.stdin.isatty() and sys.stdout.isatty()) or not needs_setup(workspace_and_cwd(workspace)[0]):
        return None
    from clients.cli.setup.wizard import main_setup

    code = main_setup()
    if code == 0:
        print("Starting the session.\n", flush=True)
        return None
    return code
