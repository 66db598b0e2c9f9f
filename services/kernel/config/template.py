"""``ai-coding config init``: the commented user-config template, written 0600 in a 0700 dir."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from services.kernel.config.layer_io import user_config_path
from services.kernel.errors import ConfigError

USER_CONFIG_TEMPLATE = """\
# ai-coding user configuration: the trusted layer.
# A project's ai-coding.yaml / ai-coding.local.yaml may tune behaviour keys, but execution
# keys (models' base_url/api_key/provider, hooks, mcp, endpoints, sandbox) come only
# from this file, or item by item as you approve them with `ai-coding trust -w <workspace>`.
# Keys may be written snake_case or camelCase. Uncomment what you need.

# default_model: main
# models:
#   main:
#     provider: deepseek               # openai | deepseek | qwen | ollama | generic
#     model: deepseek-chat
#     api_key: ${DEEPSEEK_API_KEY}     # ${VAR}, a literal, or empty = the provider's variable
#     # base_url: http://localhost:8000/v1   # any OpenAI-compatible endpoint (provider inferred)
#     # images: true                         # the model takes image input (@shot.png)
#     # price_input_per_mtok: 0.27           # cost is reported only when prices are set
#     # price_output_per_mtok: 1.10
#     # thinking: on                         # on/off; unset = the provider's default (DeepSeek: on)
#     # reasoning_effort: high               # as the provider names it; Qwen has none (use thinking)

# ai:
#   max_tool_iterations: 50           # model steps per round (a backstop: the guards stop loops)
#   max_auto_continuations: 3         # extra rounds while the todo list has open items
#   turn_timeout_seconds: 1800        # wall clock of one turn; 0 = none
#   turn_token_budget: 0              # tokens per turn; 0 = none
#   subagent_timeout_seconds: 600     # wall clock of one subAgent child; 0 = none
#   subagent_max_iterations: 30       # model steps of one child
#   max_parallel_subagents: 4         # children running at once per session (one more is refused)
#   strict_paths: false               # refuse bash naming paths outside the workspace
#   bash_policy:
#     deny: []                        # regular expressions refused outright
#     confirm: []                     # regular expressions that always ask

# tools:
#   sandbox:
#     network: off                    # off | proxy (only allow_domains, via the egress proxy) | host
#     allow_domains: []               # with proxy: names, *.wildcards, name:port, presets (pypi, npm, github)

# mcp:
#   servers: []                       # see `ai-coding mcp add --help`
"""


def init_user_config(path: Path | None = None, env: Mapping[str, str] | None = None,
                     text: str = USER_CONFIG_TEMPLATE) -> Path:
    """Create the user config holding ``text`` (default: the template): directory 0700, file 0600,
    never overwriting.

    Raises ConfigError when the file already exists (or cannot be created).
    """
    target = path or user_config_path(env)
    parent = target.parent
    try:
        created = not parent.exists()
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if created or parent.name == "ai-coding":
            os.chmod(parent, 0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise ConfigError(
            f"{target} already exists; not overwriting it.",
            hint="Edit it, or move it aside and run `ai-coding config init` again.",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot create {target}: {exc.strerror or exc}.", hint="Check the directory's permissions."
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
    return target
