"""What a service does about a config file edited while it runs: a section it can apply live is
re-read (``LiveSection``); a section it reads only at its start is named in one line saying which
service must restart and how (``restart_notes``, from one table: ``START_ONLY``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from services.kernel.config.fingerprint import layer_stamp
from services.kernel.config.loader import load_config
from services.kernel.config.state import Config
from services.kernel.errors import ConfigError

T = TypeVar("T")

START_ONLY: Mapping[str, tuple[str, ...]] = {
    "loop": ("tracing", "endpoints"),
    "tools": ("tools", "net", "endpoints"),
    "memory": ("endpoints",),
    "mcp_gateway": ("mcp", "net", "endpoints"),
    "supervisor": ("supervisor", "endpoints"),
}
"""Per process, the user-layer sections it reads once at its start (its sockets, the sandbox and
egress proxy, the gateway's servers, the trace exporter, the supervisor's limits). Every other
section is followed without a restart: the loop re-reads the layers at each OpenSession, the
memory service its ``memory`` section at each call (``LiveSection``)."""

RESTART_COMMAND = "ai-coding down"
"""How a service is restarted: the supervisor stops them all, the next client command starts them."""


def restart_notes(started: Config, now: Config) -> list[str]:
    """One line per process whose start-only sections of the user layer differ between ``started``
    (what the services were started with) and ``now``; a project's own ``mcp`` servers are opened per
    session, so a key a project layer set does not count."""
    def changed(section: str) -> bool:
        return not now.source_of(section).startswith("project:") and started.get(section) != now.get(section)

    notes = []
    for process, sections in START_ONLY.items():
        stale = [section for section in sections if changed(section)]
        if stale:
            names = ", ".join(f"`{section}`" for section in stale)
            what = "the supervisor" if process == "supervisor" else f"the {process} service"
            notes.append(f"config {names} changed since {what} started and applies only after it restarts: "
                         f"run `{RESTART_COMMAND}` (the next command starts the services again)")
    return notes


class LiveSection(Generic[T]):
    """A typed section of a service's own (user-layer) config that follows its file: each
    :meth:`get` costs a few ``stat`` calls and re-reads the file only when it changed. A config
    built in memory (no file) stays as it was given. A file that no longer parses keeps the last
    good value; ``on_warning`` hears why, once per change."""

    def __init__(self, config: Config, cls: type[T], key: str,
                 on_warning: Callable[[str], None] | None = None) -> None:
        self._cls, self._key = cls, key
        self._path = config.user_path
        self._on_warning = on_warning
        self._stamp: tuple[Any, ...] = layer_stamp(None, self._path) if self._path is not None else ()
        self._value = config.section(cls, key)

    def get(self) -> T:
        """The section as the file holds it now."""
        if self._path is None:
            return self._value
        stamp = layer_stamp(None, self._path)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                fresh = load_config(None, user_path=self._path, env={})
                said = len(fresh.warnings)  # the file's other warnings belong to its other readers
                self._value = fresh.section(self._cls, self._key)
                warnings = fresh.warnings[said:]
            except ConfigError as err:  # a file that no longer parses: keep the last good section
                warnings = [f"config {self._path} could not be re-read ({err}); `{self._key}` stays as it was"]
            for warning in warnings:
                if self._on_warning is not None:
                    self._on_warning(warning)
        return self._value
