"""What a client command is run with is what its turn uses.

The services are long-lived processes started by whichever command came first, so their own
environment says nothing about the command now running. A client sends the variables that pick a
model or a key (:func:`client_environment`) with every OpenSession; the loop merges them over its
own (:func:`effective_environment`). The ``AI_CODING_*`` selectors are the client's alone: a
service started by ``AI_CODING_MODEL=x ai-coding run`` no longer imposes ``x`` on later commands.
Stdlib only (the client imports this).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CLIENT_SCOPED = ("AI_CODING_MODEL", "AI_CODING_PROVIDER", "AI_CODING_BASE_URL", "AI_CODING_API_KEY",
                 "AI_CODING_TRUST_PROJECT")
"""Per-invocation selectors: only the client's value counts (unset in the client = unset)."""

PROVIDER_KEY_VARS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "DASHSCOPE_API_KEY")
"""The provider table's conventional key variables (services/loop/model/providers.py)."""


def client_environment(environ: Mapping[str, str], referenced: Iterable[str] = ()) -> dict[str, str]:
    """What this client sends: the selectors it has set, the provider key variables and the
    variables the config's ``${VAR}`` references name (``referenced``), where set."""
    names = {*CLIENT_SCOPED, *PROVIDER_KEY_VARS, *referenced}
    return {name: environ[name] for name in sorted(names) if environ.get(name)}


def effective_environment(service: Mapping[str, str], client: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a session's config is resolved in: the service's, without its own selectors,
    with the client's variables on top. ``client`` None (an in-process caller that sent nothing)
    keeps the service's environment as it is."""
    if client is None:
        return dict(service)
    merged = {k: v for k, v in service.items() if k not in CLIENT_SCOPED}
    merged.update(client)
    return merged
