"""What a first run offers and what it writes: the provider list, a key reference, the config text.

Pure functions (plus :func:`write_user_config`, the one writer). The provider rows come from the
loop's provider table, so a default endpoint or key variable is decided in one place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from services.kernel.config import init_user_config, read_yaml_file, user_config_path
from services.kernel.errors import ConfigError
from services.loop.model.providers import PROVIDERS

ENTRY_NAME = "main"
OLLAMA_PORT = 11434
_VAR_REF = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")


@dataclass(frozen=True)
class Choice:
    """One line of the provider menu."""

    provider: str
    """The provider table's name (``generic`` for any OpenAI-compatible URL)."""
    label: str
    suggested_model: str
    """Preferred when the endpoint lists it ("" = the first listed)."""
    needs_key: bool


CHOICES: tuple[Choice, ...] = (
    Choice("openai", "OpenAI", "gpt-4.1", True),
    Choice("deepseek", "DeepSeek", "deepseek-chat", True),
    Choice("qwen", "Qwen (Alibaba DashScope)", "qwen-plus", True),
    Choice("ollama", "Ollama (local models)", "", False),
    Choice("generic", "Any OpenAI-compatible URL (vLLM, llama.cpp, LM Studio, a proxy, ...)", "", False),
)


def choice_for(provider: str) -> Choice | None:
    """The menu row of ``provider`` (case-insensitive; ``custom``/``url`` mean generic)."""
    name = provider.strip().lower()
    name = "generic" if name in ("custom", "url", "openai-compatible", "compatible") else name
    return next((c for c in CHOICES if c.provider == name), None)


def ollama_base_url(env: Mapping[str, str]) -> str:
    """Where a local Ollama answers: ``OLLAMA_HOST`` (Ollama's own variable: ``host``, ``host:port``
    or a URL) or its usual port on this machine."""
    host = env.get("OLLAMA_HOST", "").strip().rstrip("/")
    if not host:
        return f"http://localhost:{OLLAMA_PORT}/v1"
    parts = urlsplit(host if "://" in host else f"http://{host}")
    name = parts.hostname or "localhost"
    name = "localhost" if name in ("0.0.0.0", "::") else name
    try:
        port = parts.port or OLLAMA_PORT
    except ValueError:
        port = OLLAMA_PORT
    return f"{parts.scheme}://{name}:{port}/v1"


def default_base_url(provider: str, env: Mapping[str, str]) -> str:
    """The endpoint a provider uses when the config names none ("" for generic: ask)."""
    if provider == "ollama":
        return ollama_base_url(env)
    row = PROVIDERS.get(provider)
    return row.default_base_url if row else ""


def key_env(provider: str) -> str:
    """The provider's conventional key variable ("" when it has none)."""
    row = PROVIDERS.get(provider)
    return row.key_env if row else ""


def var_reference(typed: str) -> str:
    """``VAR`` when the user typed ``$VAR`` or ``${VAR}`` instead of a key, else ""."""
    match = _VAR_REF.match(typed.strip())
    return match.group(1) if match and typed.strip().startswith("$") else ""


@dataclass(frozen=True)
class KeyRef:
    """How the config holds the key: a ``${VAR}`` reference or the literal (in the 0600 file)."""

    literal: str = ""
    variable: str = ""

    def value(self, env: Mapping[str, str]) -> str:
        """The key itself, for the test request."""
        return env.get(self.variable, "") if self.variable else self.literal

    def as_config(self) -> str:
        return f"${{{self.variable}}}" if self.variable else self.literal


def pick_model(listed: list[str], suggested: str) -> str:
    """The default offered in the model menu: the suggestion when listed, else the first listed."""
    if suggested and (suggested in listed or not listed):
        return suggested
    return listed[0] if listed else ""


@dataclass(frozen=True)
class ModelEntry:
    """What the written config names."""

    provider: str
    model: str
    base_url: str
    key: KeyRef

    def mapping(self, env: Mapping[str, str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.base_url and self.base_url != default_base_url(self.provider, {}):
            entry["base_url"] = self.base_url
        if self.key.variable or self.key.literal:
            entry["api_key"] = self.key.as_config()
        return entry


def config_text(entry: ModelEntry, env: Mapping[str, str]) -> str:
    """The YAML a first run writes (or appends to an existing user file that names no model)."""
    body = yaml.safe_dump({"default_model": ENTRY_NAME, "models": {ENTRY_NAME: entry.mapping(env)}},
                          sort_keys=False, default_flow_style=False)
    return ("# Written by `ai-coding setup`; `ai-coding config show` prints every value that applies,\n"
            "# `ai-coding config init` (with no option) prints a commented template of the rest.\n" + body)


def existing_models(path: Path) -> list[str]:
    """The model entries the user file already names ([] when it does not exist or names none)."""
    if not path.exists():
        return []
    data = read_yaml_file(path)
    models = data.get("models") if isinstance(data, dict) else None
    names = list(models) if isinstance(models, dict) else []
    if not names and isinstance(data, dict) and data.get("default_model"):
        names = [str(data["default_model"])]
    return names


def write_user_config(entry: ModelEntry, env: Mapping[str, str] | None = None, path: Path | None = None) -> Path:
    """Create the user config (0600 in a 0700 dir) naming ``entry``; an existing file that names no
    model gets the entry appended (its other settings kept). Refuses to replace configured models."""
    environ = dict(os.environ if env is None else env)
    target = path or user_config_path(environ)
    text = config_text(entry, environ)
    names = existing_models(target)
    if names:
        raise ConfigError(f"{target} already configures model(s) {', '.join(names)}; not changing it",
                          hint="Edit that file, or move it aside and run this again.")
    if not target.exists():
        return init_user_config(target, environ, text=text)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write("\n" + text)
    return target
