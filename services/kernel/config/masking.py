"""Which config keys hold credentials, and how such a value is shown (never in full)."""

from __future__ import annotations

from typing import Any

from services.kernel.config.expansion import VAR_REFERENCE
from services.kernel.config.keys import CASE_SENSITIVE_PARENTS

SECRET_KEY_WORDS = frozenset({"token", "secret", "password", "passwd", "authorization", "apikey", "credentials"})


def is_secret_key(dotted: str) -> bool:
    """True when ``dotted`` names a credential: an api_key / token / secret / password key, or any
    value under ``environment`` or ``headers`` (those carry keys under arbitrary names)."""
    parts = dotted.lower().replace("-", "_").split(".")
    if any(p in CASE_SENSITIVE_PARENTS - {"models"} for p in parts[:-1]):
        return True
    last = parts[-1]
    if last.endswith("_env"):
        return False  # the name of a variable, not its value
    return last.endswith("api_key") or last.split("_")[-1] in SECRET_KEY_WORDS


def mask_secret(value: Any) -> Any:
    """``${VAR}`` references stay readable; literal secrets show only their last 4 characters."""
    if not isinstance(value, str) or not value:
        return value
    if VAR_REFERENCE.fullmatch(value.strip()):
        return value
    return "****" + value[-4:] if len(value) >= 12 else "****"

