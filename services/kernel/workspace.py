"""Which directories may be a workspace root, shared by the services that open one.

Everything below a root is readable and writable by the agent's commands and file tools, so a root
may not be ``/`` nor contain the user's home, the runtime dir (the service sockets: a command
calling a service directly would skip the permission gate), the user config (the trusted layer) or
the data dir (MCP tokens). The tool service enforces it and hides those directories from
sandboxed commands; the loop checks it first so the user gets the refusal, not a degraded session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from services.kernel.config import Config, user_config_path
from services.kernel.datadir import data_dir
from services.kernel.endpoints import SERVICES, endpoint_for, runtime_dir
from services.kernel.errors import AiCodingError


class WorkspaceRefused(AiCodingError):
    """A directory that may not be a workspace root (the message says why, the hint what to do)."""

    reason = "invalid_workspace"


def private_dirs(config: Config | None, env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Directories no workspace may contain and no sandboxed command may see, with what each is: the
    runtime dir and every Unix socket's directory (the services: calling them directly would skip the
    permission gate), the user config's directory (the trusted layer) and the data dir (MCP tokens)."""
    environ = os.environ if env is None else env
    dirs = [("the runtime dir with the service sockets", str(runtime_dir(config, environ)))]
    for service in SERVICES:
        try:
            endpoint = endpoint_for(service, config, environ)
        except AiCodingError:
            continue
        if endpoint.scheme == "unix":
            dirs.append((f"the {service} service socket", str(Path(endpoint.path).parent)))
    dirs.append(("the user config", str(user_config_path(environ).parent)))
    dirs.append(("the ai-coding data dir", str(data_dir(environ))))
    return dirs


def workspace_root(raw: str, home: Path, private: Sequence[tuple[str, str]] = ()) -> Path:
    """The real path of a workspace root, or :class:`WorkspaceRefused` saying why it is refused.

    A root may not be ``/`` nor contain the user's home or any ``private`` directory (pairs of
    what it is and where: the runtime dir with the service sockets, the config and data dirs):
    everything below a root is readable, and writable, by the agent's commands and file tools."""
    if not raw or "\0" in raw:
        raise WorkspaceRefused("the workspace root is empty", hint="Pass the absolute path of a project directory.")
    path = Path(raw)
    if not path.is_absolute():
        raise WorkspaceRefused(f"the workspace root {raw!r} is not an absolute path",
                               hint="Pass the absolute path of a project directory.")
    real = Path(os.path.realpath(path))
    if not real.is_dir():
        raise WorkspaceRefused(f"the workspace root {raw} is not an existing directory",
                               hint="Create it or pass another directory.")
    if real == Path("/"):
        raise WorkspaceRefused(f"the workspace root {real} is too broad (the filesystem root)",
                               hint="Open a session in a project directory instead.")
    for what, where in (("your home directory", str(home)), *private):
        inner = Path(os.path.realpath(where))
        if inner == real or inner.is_relative_to(real):
            raise WorkspaceRefused(
                f"the workspace root {real} is too broad: it contains {what} ({inner}), which the agent's "
                "commands and file tools could then read and change",
                hint="Open a session in a project directory that holds none of these, e.g. ~/projects/NAME.")
    return real
