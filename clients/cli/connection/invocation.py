"""The variables this command was run with that pick a model or a key, sent with each OpenSession
(see services.kernel.invocation)."""

from __future__ import annotations

import functools
import os

from services.kernel.invocation import client_environment


@functools.cache
def _referenced() -> frozenset[str]:
    """The ``${VAR}`` names the user config's models and default_model mention."""
    from services.kernel.config import load_config, referenced_vars
    from services.kernel.errors import AiCodingError

    try:
        config = load_config(None)
    except AiCodingError:
        return frozenset()  # the loop reports a broken config itself
    return frozenset(referenced_vars(config.get("models", {})) | referenced_vars(config.get("default_model", "")))


def outgoing_environment() -> dict[str, str]:
    """What this client sends as ``client_env``."""
    return client_environment(os.environ, _referenced())
