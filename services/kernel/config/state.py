"""The merged configuration (``Config``): its data, each key's layer, and typed views of it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, TypeVar

from services.kernel.config.keys import unknown_key_warnings
from services.kernel.config.sections import from_mapping
from services.kernel.errors import ConfigError
from services.kernel.records import mutable_record
from services.kernel.trust import Admission

T = TypeVar("T")


@mutable_record
class Config:
    """The merged configuration and where each top-level value came from."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files of other tools passed over on the way up (worth saying once, not on every run)."""
    files: list[Path] = field(default_factory=list)
    user_path: Path | None = None
    """Where the user layer was looked for (it may not exist yet); None for a config built in memory."""
    trust: Admission | None = None
    """The project's execution items against the user's trust record (None: no workspace)."""

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def section(self, cls: type[T], key: str) -> T:
        """A typed view of one section; an unknown key in it is ignored with a did-you-mean warning."""
        raw = self.get(key, {})
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"config key `{key}` must be a mapping, got {type(raw).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set(raw)
        for name in raw:
            where = self.source_of(f"{key}.{name}").partition(":")[2] or "config"
            for warning in unknown_key_warnings({name: None}, fields, where, prefix=f"{key}."):
                if warning not in self.warnings:
                    self.warnings.append(warning)
        refused: list[str] = []
        section = from_mapping(cls, raw, key, refused)
        self.warnings += [r for r in refused if r not in self.warnings]
        return section

    def source_of(self, dotted: str) -> str:
        """The layer that set ``dotted`` (longest matching prefix), or "default"."""
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            got = self.sources.get(".".join(parts[:n]))
            if got:
                return got
        return "default"

