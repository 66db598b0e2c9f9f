"""``ai-coding doctor``: everything a run needs, checked in order, each with what to do about it.

Checks read, never create: the runtime dir is looked at, not made; the services are asked for
their health, not started.
"""

from __future__ import annotations

import asyncio
import enum
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.kernel.config import Config, load_config
from services.kernel.errors import AiCodingError


class Status(enum.Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def runtime_dir_check(path: Path, uid: int) -> Check:
    """The runtime dir must be the user's and 0700 (or not exist yet: it is created so)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return Check("runtime dir", Status.OK, f"{path} (created 0700 on the first run)")
    except OSError as exc:
        return Check("runtime dir", Status.FAIL, f"{path}: {exc.strerror}",
                     "set AI_CODING_RUNTIME_DIR to a directory you own")
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != uid:
        return Check("runtime dir", Status.FAIL, f"{path} belongs to uid {st.st_uid}, not you",
                     "remove it, or set AI_CODING_RUNTIME_DIR to a directory you own")
    if mode != 0o700:
        return Check("runtime dir", Status.FAIL, f"{path} has mode {mode:04o}; others could reach the services",
                     f"chmod 700 {path}")
    return Check("runtime dir", Status.OK, f"{path} (0700)")


def config_checks(workspace: Path) -> tuple[list[Check], Config | None]:
    try:
        config = load_config(workspace)
    except AiCodingError as err:
        return [Check("config", Status.FAIL, str(err), "fix the file it names")], None
    user = config.user_path
    if user is None or not user.exists():
        checks = [Check("config", Status.WARN, f"no user config at {user}",
                        "run `ai-coding setup` (or `ai-coding config init --provider NAME --model ID`)")]
    else:
        mode = stat.S_IMODE(user.stat().st_mode)
        checks = [Check("config", Status.OK if not mode & 0o077 else Status.FAIL,
                        f"{user} (mode {mode:04o})", "" if not mode & 0o077 else f"chmod 600 {user}")]
    checks += [Check("config", Status.WARN, warning) for warning in config.warnings]
    return checks, config


def model_checks(config: Config) -> list[Check]:
    from clients.cli.setup import probe
    from services.loop.model.settings import resolve_model

    try:
        model = resolve_model(config)
    except AiCodingError as err:
        return [Check("model", Status.FAIL, str(err).rstrip(":"),
                      "run `ai-coding setup`, or `ai-coding config init --provider NAME --model ID`")]
    checks = [Check("model", Status.OK, f"{model.name}: {model.model} via {model.provider} at {model.base_url}")]
    try:
        listed = probe.list_models(model.base_url, model.api_key)
    except probe.EndpointProblem as err:
        fix = ("check the key in your user config (or the variable it names)" if err.kind is probe.Problem.KEY_REFUSED
               else "check base_url and your network")
        return [*checks, Check("endpoint", Status.FAIL, str(err), fix)]
    shown = "" if not listed else f", {len(listed)} model(s) listed"
    checks.append(Check("endpoint", Status.OK, f"{model.base_url} answers{shown}"))
    try:
        probe.check_chat(model.base_url, model.api_key, model.model)
    except probe.EndpointProblem as err:
        fix = ("check the key in your user config (or the variable it names)" if err.kind is probe.Problem.KEY_REFUSED
               else f"pick a model the endpoint serves{': ' + ', '.join(listed[:5]) if listed else ''}")
        return [*checks, Check("key", Status.FAIL, str(err), fix)]
    return [*checks, Check("key", Status.OK, f"a test request to {model.model} succeeded")]


def sandbox_check(config: Config | None) -> Check:
    from services.tools.config import ToolsConfig
    from services.tools.errors import ToolError
    from services.tools.sandbox import BwrapProbe

    try:
        tools = config.section(ToolsConfig, "tools") if config is not None else ToolsConfig()
    except AiCodingError as err:
        return Check("sandbox", Status.FAIL, str(err))
    if tools.sandbox.mode == "none":
        return Check("sandbox", Status.WARN, "tools.sandbox.mode is none: bash runs on the host, unsandboxed",
                     "remove `tools.sandbox.mode: none` once bubblewrap works")
    try:
        found = asyncio.run(BwrapProbe(tools.sandbox.bwrap).ensure())
    except ToolError as err:
        return Check("sandbox", Status.FAIL, err.message, err.hint)
    return Check("sandbox", Status.OK, f"bubblewrap works ({found})")


def service_checks(config: Config | None) -> list[Check]:
    from clients.cli.control import health_of
    from clients.cli.runtime import supervisor_running
    from services.kernel.endpoints import endpoint_for, runtime_dir
    from services.kernel.on_demand import waiting

    rdir = runtime_dir(config)
    if not rdir.is_dir() or not supervisor_running(rdir):
        return [Check("services", Status.OK, "not running (the next command starts them)")]
    checks = []
    for name in ("loop", "tools", "memory", "mcp_gateway"):
        endpoint = endpoint_for(name, config)
        # One that waits for its first call is started by this check, which proves it can start.
        asleep = endpoint.scheme == "unix" and waiting(endpoint.path)
        health = _started_health(endpoint, name) if asleep else health_of(endpoint, name)
        ok = health == "SERVING"
        checks.append(Check(f"service {name}", Status.OK if ok else Status.FAIL,
                            f"{health} (started on demand for this check)" if asleep else health,
                            "" if ok else f"see `ai-coding logs {name}`; `ai-coding down` then retry"))
    return checks


def _started_health(endpoint: Any, name: str) -> str:
    """The health of a service on demand once its start (set off by the first check) is over."""
    from clients.cli.control import health_of
    from clients.cli.runtime import wait_until
    from services.kernel.on_demand import START_WAIT_SECONDS

    wait_until(lambda: health_of(endpoint, name) == "SERVING", START_WAIT_SECONDS, interval=0.1)
    return health_of(endpoint, name)


def run_checks(workspace: Path) -> list[Check]:
    """Every check, in the order a run meets them."""
    from services.kernel.endpoints import runtime_dir

    checks, config = config_checks(workspace)
    if config is not None:
        checks += model_checks(config)
    checks.append(sandbox_check(config))
    checks.append(runtime_dir_check(runtime_dir(config), os.getuid()))
    if checks[-1].status is Status.OK:
        checks += service_checks(config)
    return checks


def render(check: Check) -> list[str]:
    mark = {Status.OK: "ok  ", Status.WARN: "warn", Status.FAIL: "FAIL"}[check.status]
    lines = [f"{mark}  {check.name:<20} {check.detail}"]
    if check.fix:
        lines.append(f"      {'':<20} fix: {check.fix}")
    return lines
