"""Runs the L2 search-gate static check the operator opted into (see policy/static_check.py).

Not in the sandbox (the spec says so): the operator's ``AI_CODING_STATIC_CHECK=1``
says they trust this repository's linters, as running ``make`` would. Each
allowed command runs as an argv (no shell) in the workspace, with the
workspace's ``.venv/bin`` first on PATH, within ``TIMEOUT_SECONDS``; the output
is cut to ``MAX_OUTPUT_CHARS``. A linter that is missing or hangs is reported in
the output, never as a failure of the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from services.loop.policy.static_check import TIMEOUT_SECONDS, StaticCheckPlan, trim_output


async def run_static_check(plan: StaticCheckPlan, workspace: str, env: Mapping[str, str]) -> str:
    """The combined, trimmed output of the plan's commands ("" when the plan runs nothing)."""
    if not plan.argvs:
        return ""
    path = os.pathsep.join(p for p in (str(Path(workspace) / ".venv" / "bin"), env.get("PATH", "")) if p)
    child_env = {**env, "PATH": path}
    parts: list[str] = []
    deadline = asyncio.get_running_loop().time() + TIMEOUT_SECONDS
    for argv in plan.argvs:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            parts.append(f"$ {' '.join(argv)}\n(not run: the {TIMEOUT_SECONDS:g} s budget is spent)")
            continue
        parts.append(f"$ {' '.join(argv)}\n{await _run(argv, workspace, child_env, left)}".rstrip())
    return trim_output("\n".join(parts))


async def _run(argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
    except OSError as err:
        return f"(cannot run {argv[0]}: {err.strerror or err})"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        return f"(stopped after {timeout:.0f} s)"
    finally:
        if proc.returncode is None:  # timed out, or the turn was cancelled meanwhile
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
    text = out.decode(errors="replace").strip()
    return f"{text}\n(exit {proc.returncode})" if proc.returncode else (text or "(no findings)")
