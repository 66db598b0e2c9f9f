"""Model settings: one typed view of a ``models:`` entry, with its key resolved.

Config shape (user layer; a project may tune but not add entries)::

    default_model: fast
    models:
      fast:
        provider: deepseek          # optional: inferred from base_url host+port
        model: deepseek-chat        # defaults to the entry's name
        api_key: ${DEEPSEEK_API_KEY}
        price_input_per_mtok: 0.27
        thinking: on                # optional: on/off; unset = the provider's default
        reasoning_effort: high      # optional: passed the way the provider takes it
        # Quirks of the server, each optional (the provider row gives the defaults):
        thinking_format: deepseek   # effort | deepseek | qwen: how thinking on/off is sent
        echo_reasoning: on          # send reasoning_content back on tool-calling turns
        think_tags: on              # read <think>...</think> in the answer as reasoning
        extra_body: {top_k: 20}     # merged into every request body
        headers: {X-Team: infra}    # sent with every request
        drop_params: [stream_options]  # never sent (a 400 naming one is also detected once)

``api_key`` resolves in this order: a ``${VAR}`` reference (missing or empty is
a hard error naming VAR) -> a literal -> the provider's conventional variable.
The environment only fills a gap; it never overrides a literal, otherwise a CI
machine that exports DEEPSEEK_API_KEY would silently use the wrong account.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from services.kernel.config import Config, expand_vars, from_mapping, referenced_vars
from services.kernel.errors import ConfigError
from services.loop.model.providers import (
    PROVIDERS,
    ThinkingFormat,
    get_provider,
    infer_provider,
    think_tags_by_family,
)

NO_MODEL_HINT = (
    "run `ai-coding setup` (it asks, tests the key and writes ~/.config/ai-coding/config.yaml), or "
    "`ai-coding config init --provider NAME --model ID`, or set AI_CODING_MODEL (and AI_CODING_BASE_URL / "
    "AI_CODING_API_KEY)."
)
# A keyless local endpoint still needs a non-empty string: the openai package
# would otherwise read OPENAI_API_KEY and send that key to a foreign host.
NO_KEY_PLACEHOLDER = "not-needed"


@dataclass
class ModelSettings:
    """One model entry after resolution (what the client needs)."""

    name: str = ""
    """The entry's name under ``models:``."""
    provider: str = ""
    """openai, deepseek, qwen, ollama or generic; inferred from base_url when empty."""
    model: str = ""
    """The model id sent to the endpoint; defaults to the entry's name."""
    base_url: str = ""
    """Chat Completions endpoint; defaults to the provider's."""
    api_key: str = ""
    """Literal key or ``${VAR}``; empty = the provider's conventional variable."""
    max_tokens: int | None = None
    """Completion token cap per step; None = the endpoint's default."""
    temperature: float | None = None
    """Sampling temperature; None = the endpoint's default."""
    price_input_per_mtok: float | None = None
    """USD per million uncached prompt tokens; cost is reported only when set."""
    price_cached_input_per_mtok: float | None = None
    """USD per million cached prompt tokens; defaults to the input price."""
    price_output_per_mtok: float | None = None
    """USD per million completion tokens."""
    step_timeout_seconds: float = 300.0
    """Deadline for one model step including its retries (the turn clock may cut it shorter)."""
    stream_idle_seconds: float = 60.0
    """Longest silence between two chunks of a streamed reply: a stream quiet for longer is
    abandoned and the step retried like a dropped connection (the step's deadline still bounds it)."""
    max_retries: int = 4
    """Retries after the first attempt on 429, 5xx and dropped connections or streams."""
    images: bool = False
    """The model takes image input (``image_url`` parts); an image sent to one without it is refused."""
    retry_budget_seconds: float = 60.0
    """Total time the retries of one step may spend waiting."""
    context_window: int | None = None
    """Context size in tokens, when known (compaction reads it)."""
    thinking: bool | None = None
    """Thinking (reasoning) on or off; None = the provider's default. Sent as DeepSeek's
    ``thinking.type``, Qwen's ``enable_thinking``, or ``reasoning_effort: none`` (off) elsewhere."""
    reasoning_effort: str = ""
    """Reasoning effort (``low``/``medium``/``high``/``max``, as the model names them); "" = the
    endpoint's default. Sent as ``reasoning_effort``; Qwen's Chat Completions has no such field."""
    thinking_format: str = ""
    """How the server reads ``thinking``/``reasoning_effort``: ``effort``, ``deepseek`` or ``qwen``;
    "" = the provider's (generic: ``effort``)."""
    echo_reasoning: bool | None = None
    """Send earlier reasoning back as ``reasoning_content`` on the assistant messages of tool-calling
    turns (DeepSeek's thinking-mode rule, also behind a proxy); None = the provider's (deepseek: on)."""
    think_tags: bool | None = None
    """Read a ``<think>...</think>`` block opening the answer text as reasoning; None = on for model ids
    of the families that emit it (qwen3, qwq, deepseek-r1, r1-distill), off otherwise."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Fields merged into every request body (``top_k``, a server's own switches); they win over ours."""
    headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers sent with every request; values may be ``${VAR}`` (shown masked in /config)."""
    drop_params: list[str] = field(default_factory=list)
    """Request fields never sent (``stream_options``, ``max_tokens``, ...). A server's HTTP 400 that
    names one we sent is also detected: the step is retried without it, once, and it stays dropped."""


def _models_section(config: Config) -> dict[str, Any]:
    raw = config.get("models", {}) or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"config key `models` must be a mapping of name -> settings, got {type(raw).__name__}",
            hint="Write `models:` then one indented entry per model.",
        )
    return dict(raw)


def model_names(config: Config) -> list[str]:
    """The configured model entry names, in file order."""
    return list(_models_section(config))


def default_model_name(config: Config) -> str:
    """``default_model`` if set, else the only or first entry; "" when none."""
    chosen = config.get("default_model")
    if isinstance(chosen, str) and chosen:
        return chosen
    names = model_names(config)
    return names[0] if names else ""


def resolve_api_key(raw: str, provider: str, env: Mapping[str, str]) -> str:
    """``${VAR}`` -> literal -> provider variable; "" when none applies."""
    if referenced_vars(raw):
        return expand_vars(raw, env)
    if raw:
        return raw
    row = get_provider(provider)
    return env.get(row.key_env, "") if row and row.key_env else ""


def check_models(config: Config) -> None:
    """Add a warning to ``config.warnings`` for each bad value of each model entry (read at start, so
    OpenSession says it before the model is first used; ``resolve_model`` leaves the value out)."""
    for name, entry in _models_section(config).items():
        if isinstance(entry, Mapping):
            refused: list[str] = []
            from_mapping(ModelSettings, entry, f"models.{name}", refused)
            config.warnings += [r for r in refused if r not in config.warnings]


def resolve_model(config: Config, name: str | None = None, env: Mapping[str, str] | None = None) -> ModelSettings:
    """The settings of model ``name`` (default model when None), key and endpoint resolved."""
    environ = os.environ if env is None else env
    models = _models_section(config)
    name = name or default_model_name(config)
    if not name:
        raise ConfigError("no model configured:", hint=NO_MODEL_HINT)
    entry = models.get(name)
    if entry is None:
        known = ", ".join(models) or "none"
        raise ConfigError(f"no model named `{name}` (configured: {known})", hint="Pick one of those or add it.")
    if not isinstance(entry, Mapping):
        raise ConfigError(f"config key `models.{name}` must be a mapping, got {type(entry).__name__}")
    thinking = entry.get("thinking")
    if isinstance(thinking, str) and thinking.strip().lower() in ("on", "off"):  # `thinking: "on"`, quoted
        entry = {**entry, "thinking": thinking.strip().lower() == "on"}
    refused: list[str] = []  # a bad number or type: left out, said in the config's warnings
    settings = from_mapping(ModelSettings, entry, f"models.{name}", refused)
    config.warnings += [r for r in refused if r not in config.warnings]
    provider = settings.provider.strip().lower() or (
        infer_provider(settings.base_url) if settings.base_url else "openai"
    )
    row = PROVIDERS.get(provider)
    if row is None:
        raise ConfigError(
            f"config key `models.{name}.provider` is `{settings.provider}`, not a known provider",
            hint=f"Use one of: {', '.join(PROVIDERS)}.",
        )
    base_url = expand_vars(settings.base_url, environ) if settings.base_url else row.default_base_url
    if not base_url:
        raise ConfigError(f"model `{name}` has no base_url", hint="The generic provider needs `base_url:`.")
    fmt = _thinking_format(settings.thinking_format, row.thinking_format, name)
    if settings.reasoning_effort and not fmt.takes_effort:
        raise ConfigError(
            f"config key `models.{name}.reasoning_effort` is set, but a `{fmt}` server (Qwen/DashScope) "
            "has no effort setting in Chat Completions",
            hint=f"Remove it; use models.{name}.thinking: on/off.",
        )
    api_key = resolve_api_key(settings.api_key, provider, environ)
    if not api_key and row.key_env:
        raise ConfigError(
            f"model `{name}` ({provider}) has no API key",
            hint=f"export {row.key_env}=... or set models.{name}.api_key: ${{YOUR_VAR}}.",
        )
    model = settings.model or name
    return replace(
        settings,
        name=name,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=api_key or NO_KEY_PLACEHOLDER,
        thinking_format=str(fmt),
        echo_reasoning=row.echo_reasoning if settings.echo_reasoning is None else settings.echo_reasoning,
        think_tags=think_tags_by_family(model) if settings.think_tags is None else settings.think_tags,
        headers={str(k): expand_vars(str(v), environ) for k, v in settings.headers.items()},
        drop_params=[str(p) for p in settings.drop_params],
    )


def _thinking_format(raw: str, default: ThinkingFormat, name: str) -> ThinkingFormat:
    if not raw:
        return default
    try:
        return ThinkingFormat(raw.strip().lower())
    except ValueError:
        raise ConfigError(
            f"config key `models.{name}.thinking_format` is `{raw}`, not a known format",
            hint=f"Use one of: {', '.join(f.value for f in ThinkingFormat)}.",
        ) from None


def secret_env_names(config: Config) -> list[str]:
    """Every environment variable name holding a secret the configuration consumes (sorted).

    The tool sandbox unsets these so a command the model runs cannot read a key.
    Computed from the unexpanded config so ``${VAR}`` names are still known;
    every provider's conventional variable is included whether used or not, plus
    the deployment token and the embeddings key variable.
    """
    names = {"AI_CODING_API_KEY", "AI_CODING_TOKEN"} | {p.key_env for p in PROVIDERS.values() if p.key_env}
    for entry in _models_section(config).values():
        if isinstance(entry, Mapping):
            names |= referenced_vars(dict(entry))
    embed_var = config.get("memory.embeddings.api_key_env")
    if isinstance(embed_var, str) and embed_var:
        names.add(embed_var)
    return sorted(names)
