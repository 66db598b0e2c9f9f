"""``${VAR}`` references: kept as written in the merged config, expanded by the consumer."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from services.kernel.errors import ConfigError

VAR_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_vars(value: str, env: Mapping[str, str] | None = None) -> str:
    """Expand ``${VAR}`` references; a missing or empty variable is an error."""
    environ = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        got = environ.get(name, "")
        if not got:
            raise ConfigError(
                f"the config refers to ${{{name}}} but {name} is not set",
                hint=f"export {name}=... or write the value in the user config.",
            )
        return got

    return VAR_REFERENCE.sub(sub, value)


def referenced_vars(value: Any) -> set[str]:
    """Every ``${VAR}`` name referenced anywhere in ``value``."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(VAR_REFERENCE.findall(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            found |= referenced_vars(v)
    elif isinstance(value, list):
        for v in value:
            found |= referenced_vars(v)
    return found

