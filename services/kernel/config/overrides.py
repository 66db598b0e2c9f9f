"""The environment layer: ``AI_CODING_MODEL`` and its siblings fill the default model entry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TRUST_ENV = "AI_CODING_TRUST_PROJECT"


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The layer the environment adds on top of the files: a ``default`` model entry (and it as the
    default model) from whichever of the four variables are set; empty when none is."""
    entry: dict[str, Any] = {}
    for var, key in (
        ("AI_CODING_MODEL", "model"),
        ("AI_CODING_PROVIDER", "provider"),
        ("AI_CODING_BASE_URL", "base_url"),
        ("AI_CODING_API_KEY", "api_key"),
    ):
        if env.get(var):
            entry[key] = env[var]
    return {"models": {"default": entry}, "default_model": "default"} if entry else {}


def project_trusted(environ: Mapping[str, str]) -> bool:
    """Whether ``AI_CODING_TRUST_PROJECT`` is set: it no longer trusts anything (trust is per
    workspace and per item, services/kernel/trust.py); it is only named in a warning."""
    return environ.get(TRUST_ENV, "") in ("1", "true", "yes")
