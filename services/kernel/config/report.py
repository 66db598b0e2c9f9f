"""The effective-config report (``ai-coding config show``, ``/config``): every leaf value, its
layer, defaults of the typed sections filled in, secrets masked."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from services.kernel.config.masking import is_secret_key, mask_secret
from services.kernel.config.state import Config


def _flatten(node: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(node, Mapping) and node:
        for k, v in node.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(node, list) and any(isinstance(v, Mapping) for v in node):
        for n, v in enumerate(node):
            _flatten(v, f"{prefix}.{n}", out)
    else:
        out[prefix] = node


def _dataclass_defaults(cls: type[Any], prefix: str, out: dict[str, Any]) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}"
        hinted = hints.get(f.name)
        if dataclasses.is_dataclass(hinted) and isinstance(hinted, type):
            _dataclass_defaults(hinted, key, out)
        elif f.default is not dataclasses.MISSING:
            out[key] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[key] = f.default_factory()


def effective_config_report(
    config: Config, sections: Mapping[str, type[Any]] | None = None
) -> list[tuple[str, Any, str]]:
    """Every effective leaf value as ``(dotted key, value, source)``, sorted by key, secrets masked.

    ``sections`` maps a section name to its typed dataclass (e.g. ``{"ai": LoopSettings}``) so
    that unset fields appear with their default and source "default".
    """
    flat: dict[str, Any] = {}
    _flatten(config.data, "", flat)
    flat.pop("", None)
    defaults: dict[str, Any] = {}
    for name, cls in (sections or {}).items():
        _dataclass_defaults(cls, name, defaults)
    rows = []
    for key in sorted(set(flat) | set(defaults)):
        if key in flat:
            value, source = flat[key], config.source_of(key)
        else:
            value, source = defaults[key], "default"
        rows.append((key, mask_secret(value) if is_secret_key(key) else value, source))
    return rows

