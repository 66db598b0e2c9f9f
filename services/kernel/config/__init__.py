"""Layered configuration: user file, project file(s), environment.

Layers, lowest first:

1. user layer ``~/.config/ai-coding/config.yaml`` (or ``$AI_CODING_CONFIG``): trusted;
2. project layer: ``ai-coding.yaml`` (meant to be committed and shared) then
   ``ai-coding.local.yaml`` (personal), found upward from the workspace (the nearest
   directory that has one of ours wins; local beats shared). A ``config.yaml`` /
   ``config.local.yaml`` there is read only when it declares itself with a top-level
   ``ai-coding:`` key (``ai-coding: 1`` on a file that is all ours, or ``ai-coding:``
   holding our keys inside another tool's file); any other one belongs to another tool
   and is left alone, with one note (``Config.notes``). A file of ours that is not a
   YAML mapping is skipped with a warning; a key we do not know warns with a did-you-mean;
3. environment: ``AI_CODING_MODEL``, ``AI_CODING_PROVIDER``, ``AI_CODING_BASE_URL``,
   ``AI_CODING_API_KEY`` (fill the default model entry).

Keys are matched ignoring case and camelCase (``maxToolIterations`` ==
``max_tool_iterations``), except the names directly below ``environment``,
``headers`` and ``models``, which are passed through as written. Mappings merge per key; other values
replace.

Every key's project rule is declared in services/kernel/config_rules.py.
Execution keys (``EXECUTION_KEYS``) come from a project only item by item as the
user approved them for that workspace (services/kernel/trust.py, ``ai-coding trust``):
a repository, or the agent writing one, must not be able to run programs, add roots,
loosen the sandbox or send a key elsewhere by shipping a config file. Keys that decide
which code the services load (``hooks.plugin_dir``), where they listen and the sandbox never
come from a project. Safety settings (``TIGHTEN_RULES``) from a project may only tighten,
trusted or not: deny lists add up, booleans take the stricter value, limits only go
down. Each dropped key produces a warning.

``${VAR}`` references are kept as written and expanded by the consumer with
:func:`expand_vars`, which fails naming the missing variable.

Each component reads a typed view: ``config.section(ToolsConfig, "tools")``.

One module per concern: ``keys`` (spelling, known keys), ``layer_io`` (finding and reading the
files), ``project_filter`` (trust and tightening of a project layer), ``overrides`` (the
environment layer), ``merge``, ``loader`` (``load_config``: all of the above in order),
``state`` (``Config``), ``sections`` (typed views), ``expansion`` (``${VAR}``), ``masking``,
``report`` (what ``config show`` prints), ``fingerprint`` (``layer_stamp``), ``live`` (a
section followed while a service runs, and which sections need a restart), ``template``
(``config init``). Import what you need from this package; the modules are its layout.
"""

from __future__ import annotations

from services.kernel.config.expansion import VAR_REFERENCE, expand_vars, referenced_vars
from services.kernel.config.fingerprint import layer_stamp
from services.kernel.config.keys import (
    CASE_SENSITIVE_PARENTS,
    DECLARATION_KEY,
    KNOWN_TOP_LEVEL_KEYS,
    normalize_key,
    unknown_key_warnings,
)
from services.kernel.config.layer_io import (
    OUR_FILE_NAMES,
    PROJECT_FILES,
    declares_itself,
    find_project_files,
    foreign_file_reason,
    project_candidates,
    project_layer,
    read_yaml_file,
    user_config_path,
)
from services.kernel.config.live import START_ONLY, LiveSection, restart_notes
from services.kernel.config.loader import load_config
from services.kernel.config.masking import SECRET_KEY_WORDS, is_secret_key, mask_secret
from services.kernel.config.merge import merge
from services.kernel.config.overrides import TRUST_ENV, project_trusted
from services.kernel.config.project_filter import (
    EXECUTION_KEYS,
    LOWER_DEFAULTS,
    MODEL_BEHAVIOUR_KEYS,
    NAME_RULES,
    SAFETY_WORDS,
    TIGHTEN_RULES,
)
from services.kernel.config.report import effective_config_report
from services.kernel.config.sections import from_mapping
from services.kernel.config.state import Config
from services.kernel.config.template import USER_CONFIG_TEMPLATE, init_user_config

__all__ = [
    "CASE_SENSITIVE_PARENTS",
    "DECLARATION_KEY",
    "EXECUTION_KEYS",
    "KNOWN_TOP_LEVEL_KEYS",
    "LOWER_DEFAULTS",
    "MODEL_BEHAVIOUR_KEYS",
    "NAME_RULES",
    "OUR_FILE_NAMES",
    "PROJECT_FILES",
    "SAFETY_WORDS",
    "SECRET_KEY_WORDS",
    "START_ONLY",
    "TIGHTEN_RULES",
    "TRUST_ENV",
    "USER_CONFIG_TEMPLATE",
    "VAR_REFERENCE",
    "Config",
    "LiveSection",
    "declares_itself",
    "effective_config_report",
    "expand_vars",
    "find_project_files",
    "foreign_file_reason",
    "from_mapping",
    "init_user_config",
    "is_secret_key",
    "layer_stamp",
    "load_config",
    "mask_secret",
    "merge",
    "normalize_key",
    "project_candidates",
    "project_layer",
    "project_trusted",
    "read_yaml_file",
    "referenced_vars",
    "restart_notes",
    "unknown_key_warnings",
    "user_config_path",
]
