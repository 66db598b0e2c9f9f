"""The provider table: five OpenAI-compatible families and how to tell them apart.

Each row has three consumers: its default ``base_url`` (``provider: deepseek``
needs no endpoint), the conventional environment variable holding its key, and
the key itself (shown in ``/config`` and traces). There is no capability
matrix: usage shapes, reasoning fields and context-overflow errors are read by
trying each known form (see ``usage.py`` and ``client.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Provider:
    """One row of the provider table."""

    name: str
    default_base_url: str
    key_env: str  # "" when the provider needs no key


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        Provider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        Provider("qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY"),
        Provider("ollama", "http://localhost:11434/v1", ""),
        Provider("generic", "", ""),
    )
}

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _host_port(url: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return ("localhost" if host in _LOOPBACK else host), port


def infer_provider(base_url: str) -> str:
    """The provider whose default endpoint has the same host *and* port, else "generic".

    Host alone is not enough: ``http://localhost:8000/v1`` (vLLM, llama.cpp) is
    not ollama, whose default is ``localhost:11434``.
    """
    target = _host_port(base_url)
    if target is None:
        return "generic"
    for provider in PROVIDERS.values():
        if provider.default_base_url and _host_port(provider.default_base_url) == target:
            return provider.name
    return "generic"


def get_provider(name: str) -> Provider | None:
    """The row for ``name`` (case-insensitive), or None when unknown."""
    return PROVIDERS.get(name.strip().lower())
