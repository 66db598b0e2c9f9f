"""Running one hook: a command in its own process group, or a python function from plugin_dir.

A command gets one JSON line on stdin and answers with (at most) one JSON line on
stdout; past its timeout the whole process group is killed. Its environment is
built from ``ENV_ALLOW`` (no model keys, no tokens) plus what the user set for
that hook. A python hook is ``function(event: dict) -> dict | None`` (sync or
async) from ``<plugin_dir>/<module>.py``, run inside the loop service.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import json
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.loop.core.errors import LoopError
from services.loop.hooks.config import HookSpec

ENV_ALLOW = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")
"""The only variables of the loop's environment a hook process sees."""
MAX_OUTPUT_BYTES = 1_000_000
KILL_GRACE_S = 2.0


class HookFailed(LoopError):
    """The hook did not give a usable answer; ``outcome`` is "timeout" or "failed"."""

    reason = "hook_failed"

    def __init__(self, outcome: str, detail: str) -> None:
        super().__init__(detail)
        self.outcome = outcome
        self.detail = detail


@dataclass(frozen=True)
class RawAnswer:
    """What a hook process said: exit code, stdout, stderr (python hooks: exit 0 and their dict as JSON)."""

    code: int
    stdout: str
    stderr: str


def hook_env(spec: HookSpec, workspace: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The hook's environment: allow-listed variables, the workspace, and the hook's own ``env``."""
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in ENV_ALLOW if k in source}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["AI_CODING_WORKSPACE"] = workspace
    env["CLAUDE_PROJECT_DIR"] = workspace  # what Claude Code's hooks read
    env.update(dict(spec.env))
    return env


async def run_command(spec: HookSpec, line: str, workspace: str, timeout: float) -> RawAnswer:
    """Run the command with ``line`` on stdin; raises HookFailed on timeout or when it cannot start."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *spec.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=workspace, env=hook_env(spec, workspace),
            start_new_session=True, limit=MAX_OUTPUT_BYTES)
    except OSError as err:
        raise HookFailed("failed", f"could not start {spec.argv[0]}: {err.strerror or err}") from None
    try:
        out, errout = await asyncio.wait_for(proc.communicate((line + "\n").encode()), timeout)
    except TimeoutError:
        raise HookFailed("timeout", f"no answer within {timeout:g} s; its process group was killed") from None
    finally:
        _kill_group(proc.pid)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    return RawAnswer(proc.returncode if proc.returncode is not None else -1,
                     out[:MAX_OUTPUT_BYTES].decode(errors="replace"), errout[:MAX_OUTPUT_BYTES].decode(errors="replace"))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_python(spec: HookSpec, event: dict[str, Any], plugin_dir: Path, timeout: float) -> RawAnswer:
    """Call ``spec.function`` of ``<plugin_dir>/<spec.module>.py`` with ``event``."""
    function = _load(spec, plugin_dir)
    try:
        if inspect.iscoroutinefunction(function):
            answer = await asyncio.wait_for(function(event), timeout)
        else:
            answer = await asyncio.wait_for(asyncio.to_thread(function, event), timeout)
    except TimeoutError:
        raise HookFailed("timeout", f"no answer within {timeout:g} s") from None
    except Exception as exc:  # a plugin's bug is the hook's failure, not the turn's
        raise HookFailed("failed", f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if answer is not None and not isinstance(answer, dict):
        raise HookFailed("failed", f"returned {type(answer).__name__}, not a dict or None")
    return RawAnswer(0, json.dumps(answer or {}), "")


def _load(spec: HookSpec, plugin_dir: Path) -> Any:
    path = plugin_dir / f"{spec.module}.py"
    if not path.is_file():
        raise HookFailed("failed", f"no module {path}")
    name = f"ai_coding_hook_{spec.module}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise HookFailed("failed", f"cannot load {path}")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise HookFailed("failed", f"importing {path} failed: {type(exc).__name__}: {str(exc)[:200]}") from None
    sys.modules.pop(name, None)
    function = getattr(module, spec.function, None)
    if not callable(function):
        raise HookFailed("failed", f"{path} has no function {spec.function}()")
    return function
