"""The ``plans`` config section as the plans feature reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PlansConfig:
    """Config section ``plans`` (user layer; ``acceptance`` from a project only as approved)."""

    acceptance: list[dict[str, Any]] = field(default_factory=list)
    """Acceptance items every session of a workspace starts with: ``{statement, command,
    workspace}`` each (``workspace`` omitted: every workspace). ``command`` is the proof, run in
    the sandbox when the model stops; an entry without one is skipped. Default: none."""
