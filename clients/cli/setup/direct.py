"""``ai-coding config init --provider NAME --model ID``: the first-run result without questions.

The key is never taken on the command line (it would land in shell history): the config names
``${VAR}`` (the provider's variable, or ``--api-key-env``), and the test request reads it from the
environment of this command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clients.cli.setup import probe
from clients.cli.setup.choices import (
    CHOICES,
    KeyRef,
    ModelEntry,
    choice_for,
    default_base_url,
    key_env,
    write_user_config,
)
from services.kernel.errors import AiCodingError


class InitRefused(AiCodingError):
    """The options cannot make a working config; nothing was written."""

    reason = "init_refused"


@dataclass(frozen=True)
class InitOptions:
    provider: str
    model: str
    base_url: str = ""
    api_key_env: str = ""
    check: bool = True


def entry_for(options: InitOptions, env: Mapping[str, str]) -> ModelEntry:
    """The model entry the options describe, or :class:`InitRefused` saying what is missing."""
    choice = choice_for(options.provider)
    if choice is None:
        names = ", ".join(c.provider for c in CHOICES)
        raise InitRefused(f"unknown provider {options.provider!r}", hint=f"Use one of: {names}.")
    if not options.model:
        raise InitRefused("--model is required with --provider", hint="Name the model id the endpoint serves.")
    base_url = options.base_url.rstrip("/") or default_base_url(choice.provider, env)
    if not base_url:
        raise InitRefused("--provider generic needs --base-url URL", hint="E.g. --base-url http://localhost:8000/v1.")
    variable = options.api_key_env or key_env(choice.provider)
    return ModelEntry(choice.provider, options.model, base_url, KeyRef(variable=variable))


def init_direct(options: InitOptions, env: Mapping[str, str] | None = None, path: Path | None = None) -> Path:
    """Test the endpoint (unless ``check`` is off) and write the user config; its path."""
    environ = dict(os.environ if env is None else env)
    entry = entry_for(options, environ)
    if options.check:
        variable = entry.key.variable
        if variable and not environ.get(variable):
            raise InitRefused(f"{variable} is not set, so the key cannot be tested",
                              hint=f"Export {variable}, or pass --no-check to write the config anyway.")
        try:
            probe.check_chat(entry.base_url, entry.key.value(environ), entry.model)
        except probe.EndpointProblem as err:
            raise InitRefused(f"{err}; nothing was written",
                              hint="Fix it, or pass --no-check to write the config anyway.") from None
    return write_user_config(entry, environ, path)
