"""Loading: every layer read, filtered and merged in one place (``load_config``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kernel.config.keys import KNOWN_TOP_LEVEL_KEYS, normalize, unknown_key_warnings
from services.kernel.config.layer_io import (
    foreign_file_reason,
    project_candidates,
    project_layer,
    read_yaml_file,
    user_config_path,
)
from services.kernel.config.merge import merge, record_sources
from services.kernel.config.overrides import TRUST_ENV, env_layer, project_trusted
from services.kernel.config.project_filter import drop_execution_keys, tighten_layer
from services.kernel.config.state import Config
from services.kernel.errors import ConfigError
from services.kernel.trust import Admission, TrustStore, approve_hint


def load_config(
    workspace: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    user_path: Path | None = None,
    user_data: Mapping[str, Any] | None = None,
) -> Config:
    """Load and merge every layer for ``workspace`` (None = user and env only).

    ``user_data`` stands in for the user file and the environment layer (a
    configuration already merged in memory, e.g. a service built by a test; its
    keys are not given a source); the project layer still goes on top of it.
    """
    environ = dict(os.environ if env is None else env)
    cfg = Config()
    user: dict[str, Any] = {}
    upath: Path | None = None
    if user_data is not None:
        user = normalize(dict(user_data))  # no file to name: its keys keep source "default"
    else:
        upath = user_path or user_config_path(environ)
        cfg.user_path = upath
        if upath.exists():
            user = normalize(read_yaml_file(upath))
            cfg.warnings += unknown_key_warnings(user, KNOWN_TOP_LEVEL_KEYS, str(upath))
            cfg.files.append(upath)
            record_sources(user, "", f"user:{upath}", cfg.sources)
    merged = dict(user)
    if workspace is not None:
        cfg.trust = Admission(TrustStore.load(environ), workspace)
        if project_trusted(environ):
            cfg.warnings.append(f"{TRUST_ENV} no longer trusts every project: {approve_hint(workspace)}")
        user_models = user.get("models") if isinstance(user.get("models"), Mapping) else {}
        ours, foreign = project_candidates(workspace)
        # The user file is not also a project layer (nor "not read": it was, as the user file).
        ours, foreign = ([p for p in found if not _is_user_file(p, upath)] for found in (ours, foreign))
        cfg.notes += [f"{path}: not read, it is not an ai-coding file (rename it ai-coding.yaml, or add "
                      f"`ai-coding: 1` at its top, if it is meant for us)" for path in foreign]
        for pfile in ours:
            doubt = foreign_file_reason(pfile)
            if doubt:
                cfg.warnings.append(f"{pfile}: ignored the whole file ({doubt}; fix its owner or mode to use it)")
                continue
            try:
                layer = project_layer(normalize(read_yaml_file(pfile)))
            except ConfigError as err:
                # A broken project file must not stop every run: run without it and say why.
                cfg.warnings.append(f"skipped project config: {err.message} (fix it, or move it aside)")
                continue
            cfg.warnings += unknown_key_warnings(layer, KNOWN_TOP_LEVEL_KEYS, str(pfile))
            layer = drop_execution_keys(layer, user_models or {}, str(pfile), cfg.warnings, cfg.trust)
            layer = tighten_layer(layer, merged, str(pfile), cfg.warnings)
            cfg.files.append(pfile)
            record_sources(layer, "", f"project:{pfile}", cfg.sources)
            merged = merge(merged, layer)
    from_env = env_layer(environ) if user_data is None else {}
    if from_env:
        record_sources(from_env, "", "env", cfg.sources)
        merged = merge(merged, from_env)
    cfg.data = merged
    return cfg



def _is_user_file(path: Path, upath: Path | None) -> bool:
    return upath is not None and upath.exists() and path.resolve() == upath.resolve()
