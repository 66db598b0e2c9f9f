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
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from services.kernel import config_rules
from services.kernel.config_ranges import range_problem
from services.kernel.errors import ConfigError
from services.kernel.trust import Admission, TrustStore, approve_hint, store_path

TRUST_ENV = "AI_CODING_TRUST_PROJECT"
# The project layer's files, lowest priority first: ours by name, and the generic names that
# are read only when the file declares itself (DECLARATION_KEY at its top level).
PROJECT_FILES = ("config.yaml", "ai-coding.yaml", "config.local.yaml", "ai-coding.local.yaml")
OUR_FILE_NAMES = frozenset({"ai-coding.yaml", "ai-coding.local.yaml"})
DECLARATION_KEY = "ai_coding"
_DECLARED = re.compile(r"^[\"']?ai[-_]?coding[\"']?\s*:", re.IGNORECASE | re.MULTILINE)
# Top-level keys of our files; anything else warns with a did-you-mean (add a section here when
# a component starts reading one).
KNOWN_TOP_LEVEL_KEYS = frozenset({
    DECLARATION_KEY, "ai", "compaction", "default_model", "endpoints", "hooks", "loop", "mcp", "memory",
    "models", "net", "plans", "sessions", "skills", "subagents", "supervisor", "tools", "tracing", "traces",
})
# Children of these keys are names the user chose (variables, headers, model
# entries), kept as written; keys below them are normalized again.
CASE_SENSITIVE_PARENTS = frozenset({"environment", "env", "headers", "models", "pinned_hosts"})

# What a project may do with each key is declared once, in services/kernel/config_rules.py (a test
# fails for a key without a rule); these views of that table are what the loader applies.
#   EXECUTION_KEYS        a project's value is used only as the user approved it (trust.py)
#   MODEL_BEHAVIOUR_KEYS  what a project may tune in a model entry the user already has
#   TIGHTEN_RULES         union / true_wins / false_wins / lower (LOWER_DEFAULTS: the ceilings)
# A key no rule covers but that looks like a safety setting (SAFETY_WORDS) is dropped.
EXECUTION_KEYS: tuple[str, ...] = config_rules.keys_with(config_rules.Rule.EXECUTION)
MODEL_BEHAVIOUR_KEYS = config_rules.model_behaviour_keys()
TIGHTEN_RULES: tuple[tuple[str, str], ...] = config_rules.tighten_rules()
LOWER_DEFAULTS: dict[str, float] = config_rules.LOWER_DEFAULTS
NAME_RULES: dict[str, str] = {
    "deny": "union", "confirm": "union", "denied_tools": "union", "enabled": "false_wins",
    "auto_approve": "false_wins", "disabled": "true_wins", "readonly": "true_wins", "read_only": "true_wins",
}
SAFETY_WORDS = re.compile(
    r"deny|allow|confirm|approv|permission|sandbox|network|trust|strict|plugin|hook|guard|enabled|"
    r"unsafe|dangerous|bypass|yolo|policy|secret", re.IGNORECASE)

SECRET_KEY_WORDS = frozenset({"token", "secret", "password", "passwd", "authorization", "apikey", "credentials"})

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")

T = TypeVar("T")


def normalize_key(key: str) -> str:
    """``maxToolIterations`` -> ``max_tool_iterations``; ``MCP`` -> ``mcp``."""
    return _CAMEL.sub(r"_\1", key).replace("-", "_").lower()


def _normalize(value: Any, parent: str = "") -> Any:
    if isinstance(value, Mapping):
        if parent in CASE_SENSITIVE_PARENTS:
            return {str(k): _normalize(v, "") for k, v in value.items()}
        out: dict[str, Any] = {}
        for k, v in value.items():
            nk = normalize_key(str(k))
            out[nk] = _normalize(v, nk)
        return out
    if isinstance(value, list):
        return [_normalize(v, parent) for v in value]
    return value


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive per-key merge: mappings merge, everything else replaces."""
    out = dict(base)
    for k, v in top.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def expand_vars(value: str, env: Mapping[str, str] | None = None) -> str:
    """Expand ``${VAR}`` references; a missing or empty variable is an error."""
    environ = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        got = environ.get(name, "")
        if not got:
            raise ConfigError(
                f"the config refers to ${{{name}}} but {name} is not set",
                hint=f"export {name}=... or write the value in the user config.",
            )
        return got

    return _VAR.sub(sub, value)


def referenced_vars(value: Any) -> set[str]:
    """Every ``${VAR}`` name referenced anywhere in ``value``."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(_VAR.findall(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            found |= referenced_vars(v)
    elif isinstance(value, list):
        for v in value:
            found |= referenced_vars(v)
    return found


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the user layer lives (``$AI_CODING_CONFIG`` overrides)."""
    environ = os.environ if env is None else env
    if environ.get("AI_CODING_CONFIG"):
        return Path(environ["AI_CODING_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "ai-coding" / "config.yaml"


def read_yaml_file(path: Path) -> dict[str, Any]:
    """Parse one YAML mapping; errors name the file, the line and the fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {path}: {exc.strerror or exc}",
            hint="Fix its permissions or move it aside.",
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text", hint="Re-save it as UTF-8.") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML in {where}: {problem}", hint="Fix that line and retry.") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"config file {path} must hold a mapping at the top level, not {type(data).__name__}",
            hint="Write it as `key: value` lines.",
        )
    return dict(data)


def declares_itself(path: Path) -> bool:
    """True when a generic-named file (``config.yaml``) says it is ours: an ``ai-coding:`` key at
    its top level. Read as text, so a declared file with broken YAML still reports its error."""
    try:
        return _DECLARED.search(path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def _is_ours(path: Path) -> bool:
    return path.name in OUR_FILE_NAMES or declares_itself(path)


def project_candidates(workspace: Path) -> tuple[list[Path], list[Path]]:
    """``(our project files lowest priority first, other tools' files passed on the way)``, found
    upward: the nearest directory holding a file of ours wins."""
    current = workspace.resolve()
    home = Path.home().resolve()
    foreign: list[Path] = []
    for directory in (current, *current.parents):
        if directory == home and directory != current:
            break  # the user's home is not a project
        present = [directory / name for name in PROJECT_FILES if (directory / name).is_file()]
        ours = [p for p in present if _is_ours(p)]
        foreign += [p for p in present if p not in ours]
        if ours:
            return ours, foreign
    return [], foreign


def find_project_files(workspace: Path) -> list[Path]:
    """The project layer's files, lowest priority first, found upward."""
    return project_candidates(workspace)[0]


def project_layer(data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a (normalized) project file contributes: under ``ai-coding:`` when that holds a
    mapping (our section of another tool's file), else the whole file without the declaration."""
    marker = data.get(DECLARATION_KEY)
    if isinstance(marker, Mapping):
        return dict(marker)
    return {k: v for k, v in data.items() if k != DECLARATION_KEY}


def unknown_key_warnings(layer: Mapping[str, Any], known: frozenset[str] | set[str], source: str,
                         prefix: str = "") -> list[str]:
    """One warning per key of ``layer`` not in ``known``, with the closest known key if any."""
    import difflib

    out = []
    for key in layer:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
        hint = f" (did you mean `{prefix}{close[0]}`?)" if close else ""
        out.append(f"{source}: unknown key `{prefix}{key}`{hint}; it is ignored")
    return out


def foreign_file_reason(path: Path) -> str:
    """Why a project file may have been planted by someone else ("" when it looks like ours).

    Discovery walks upward, so a shared parent such as /tmp can hold a
    config.yaml another user wrote; a file anyone may write is no better.
    """
    try:
        st = path.stat()
    except OSError:
        return ""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not by you"
    if st.st_mode & 0o002:
        return "writable by every user"
    return ""


def _matches(path: tuple[str, ...], pattern: str) -> bool:
    parts = pattern.split(".")
    if len(path) < len(parts):
        return False
    return all(p == "*" or p == k for p, k in zip(parts, path, strict=False))


def _drop_execution_keys(
    layer: dict[str, Any], user_models: Mapping[str, Any], source: str, warnings: list[str],
    admission: Admission | None = None,
) -> dict[str, Any]:
    """Remove keys a project layer may not set, with one warning each; an execution key is kept
    only as far as ``admission`` (the user's trust record for the workspace) approved its items."""

    def drop(path: tuple[str, ...], why: str) -> None:
        warnings.append(f"{source}: ignored `{'.'.join(path)}` ({why})")

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in node.items():
            path = (*prefix, k)
            if config_rules.exact(path, config_rules.Rule.USER_ONLY):
                drop(path, "it comes only from the user config, whoever approved the project")
                continue
            if any(_matches(path, pat) and len(path) == len(pat.split(".")) for pat in EXECUTION_KEYS):
                if isinstance(v, Mapping):  # user-only keys inside an execution section (hooks.plugin_dir)
                    v = walk(v, path) if any(config_rules.exact((*path, c), config_rules.Rule.USER_ONLY)
                                             for c in v) else v
                if admission is None:
                    drop(path, "execution keys come only from the user config")
                    continue
                keep, admitted = admission.admit(source, path, v, warnings)
                if keep:
                    out[k] = admitted
                continue
            if path == ("models",) and not isinstance(v, Mapping):
                drop(path, "a project may tune model entries, not replace the section")
                continue
            if path[:1] == ("models",) and len(path) == 2:
                if k not in user_models:
                    drop(path, "a project may tune, not add, models")
                    continue
                if not isinstance(v, Mapping):
                    drop(path, "a project may tune a model entry, not replace it")
                    continue
            if path[:1] == ("models",) and len(path) == 3 and k not in MODEL_BEHAVIOUR_KEYS:
                drop(path, "only behaviour keys of a model entry come from a project")
                continue
            out[k] = walk(v, path) if isinstance(v, Mapping) else v
        return out

    return walk(layer, ())


def _tighten_rule(path: tuple[str, ...]) -> str:
    dotted = ".".join(path)
    if config_rules.exact(path, config_rules.Rule.HARMLESS):
        return ""
    for pattern, rule in TIGHTEN_RULES:
        if len(path) == len(pattern.split(".")) and _matches(path, pattern):
            return rule
    last = path[-1]
    if last in NAME_RULES:
        return NAME_RULES[last]
    if last.endswith("_enabled"):
        return "false_wins"
    if last.startswith(("strict_", "enforce_")):
        return "true_wins"
    return "drop" if SAFETY_WORDS.search(dotted) else ""


def _get_path(node: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _tightened(rule: str, path: tuple[str, ...], mine: Any, theirs: Any) -> tuple[bool, Any, str]:
    """(keep, value, why-not) for a project value ``theirs`` over the value so far ``mine``."""
    if rule == "union":
        if not isinstance(theirs, list):
            return False, None, "a project may only add entries to this list"
        base = list(mine) if isinstance(mine, list) else []
        return True, base + [v for v in theirs if v not in base], ""
    if rule in ("true_wins", "false_wins"):
        if not isinstance(theirs, bool):
            return False, None, "expected true or false"
        stricter = rule == "true_wins"
        if theirs == stricter or mine == theirs:
            return True, theirs, ""
        return False, None, f"a project may only set it to {str(stricter).lower()}"
    if rule == "lower":
        dotted = ".".join(path)
        ceiling = mine if isinstance(mine, (int, float)) and not isinstance(mine, bool) else LOWER_DEFAULTS.get(dotted)
        if not isinstance(theirs, (int, float)) or isinstance(theirs, bool) or ceiling is None:
            return False, None, "a project may only lower this limit"
        if theirs > 0 and (ceiling == 0 or theirs <= ceiling):
            return True, theirs, ""
        return False, None, f"a project may only lower this limit (yours: {ceiling:g}, 0 = none)"
    return False, None, "a safety setting with no rule for tightening it comes only from the user config"


def _tighten_layer(layer: dict[str, Any], below: Mapping[str, Any], source: str,
                   warnings: list[str]) -> dict[str, Any]:
    """A project layer whose safety settings can only tighten what is ``below`` it (the user layer
    and the project layers merged so far): lists add up, booleans take the stricter value, limits
    only go down; anything else safety-like is dropped. One warning per key refused."""

    def walk(node: Mapping[str, Any], prefix: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in node.items():
            path = (*prefix, k)
            if path[:1] == ("models",) or any(_matches(path, pat) for pat in EXECUTION_KEYS):
                out[k] = v  # model entries are filtered above; execution keys here are trusted
                continue
            if isinstance(v, Mapping):
                out[k] = walk(v, path)
                continue
            rule = _tighten_rule(path)
            if not rule:
                out[k] = v
                continue
            mine = _get_path(below, path)
            keep, value, why = _tightened(rule, path, mine, v)
            if keep:
                out[k] = value
                if rule == "union" and isinstance(mine, list) and any(m not in v for m in mine):
                    warnings.append(f"{source}: `{'.'.join(path)}` cannot drop entries of your config "
                                    "(lists add up: a project may only tighten safety settings)")
            else:
                warnings.append(f"{source}: ignored `{'.'.join(path)}` = {v!r:.60} ({why}; a project may "
                                "only tighten safety settings)")
        return out

    return walk(layer, ())


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for var, key in (
        ("AI_CODING_MODEL", "model"),
        ("AI_CODING_PROVIDER", "provider"),
        ("AI_CODING_BASE_URL", "base_url"),
        ("AI_CODING_API_KEY", "api_key"),
    ):
        if env.get(var):
            entry[key] = env[var]
    return {"models": {"default": entry}, "default_model": "default"} if entry else {}


@dataclass
class Config:
    """The merged configuration and where each top-level value came from."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Files of other tools passed over on the way up (worth saying once, not on every run)."""
    files: list[Path] = field(default_factory=list)
    user_path: Path | None = None
    """Where the user layer was looked for (it may not exist yet); None for a config built in memory."""
    trust: Admission | None = None
    """The project's execution items against the user's trust record (None: no workspace)."""

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def section(self, cls: type[T], key: str) -> T:
        """A typed view of one section; an unknown key in it is ignored with a did-you-mean warning."""
        raw = self.get(key, {})
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"config key `{key}` must be a mapping, got {type(raw).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set(raw)
        for name in raw:
            where = self.source_of(f"{key}.{name}").partition(":")[2] or "config"
            for warning in unknown_key_warnings({name: None}, fields, where, prefix=f"{key}."):
                if warning not in self.warnings:
                    self.warnings.append(warning)
        refused: list[str] = []
        section = from_mapping(cls, raw, key, refused)
        self.warnings += [r for r in refused if r not in self.warnings]
        return section

    def source_of(self, dotted: str) -> str:
        """The layer that set ``dotted`` (longest matching prefix), or "default"."""
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            got = self.sources.get(".".join(parts[:n]))
            if got:
                return got
        return "default"


def _record_sources(node: Mapping[str, Any], prefix: str, source: str, out: dict[str, str]) -> None:
    for k, v in node.items():
        path = f"{prefix}.{k}" if prefix else k
        out[path] = source
        if isinstance(v, Mapping):
            _record_sources(v, path, source, out)


def project_trusted(environ: Mapping[str, str]) -> bool:
    """Whether ``AI_CODING_TRUST_PROJECT`` is set: it no longer trusts anything (trust is per
    workspace and per item, services/kernel/trust.py); it is only named in a warning."""
    return environ.get(TRUST_ENV, "") in ("1", "true", "yes")


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
        user = _normalize(dict(user_data))  # no file to name: its keys keep source "default"
    else:
        upath = user_path or user_config_path(environ)
        cfg.user_path = upath
        if upath.exists():
            user = _normalize(read_yaml_file(upath))
            cfg.warnings += unknown_key_warnings(user, KNOWN_TOP_LEVEL_KEYS, str(upath))
            cfg.files.append(upath)
            _record_sources(user, "", f"user:{upath}", cfg.sources)
    merged = dict(user)
    if workspace is not None:
        cfg.trust = Admission(TrustStore.load(environ), workspace)
        if project_trusted(environ):
            cfg.warnings.append(f"{TRUST_ENV} no longer trusts every project: {approve_hint(workspace)}")
        user_models = user.get("models") if isinstance(user.get("models"), Mapping) else {}
        ours, foreign = project_candidates(workspace)
        cfg.notes += [f"{path}: not read, it is not an ai-coding file (rename it ai-coding.yaml, or add "
                      f"`ai-coding: 1` at its top, if it is meant for us)" for path in foreign]
        for pfile in ours:
            if upath is not None and upath.exists() and pfile.resolve() == upath.resolve():
                continue  # the user file is not also a project layer
            doubt = foreign_file_reason(pfile)
            if doubt:
                cfg.warnings.append(f"{pfile}: ignored the whole file ({doubt}; fix its owner or mode to use it)")
                continue
            try:
                layer = project_layer(_normalize(read_yaml_file(pfile)))
            except ConfigError as err:
                # A broken project file must not stop every run: run without it and say why.
                cfg.warnings.append(f"skipped project config: {err.message} (fix it, or move it aside)")
                continue
            cfg.warnings += unknown_key_warnings(layer, KNOWN_TOP_LEVEL_KEYS, str(pfile))
            layer = _drop_execution_keys(layer, user_models or {}, str(pfile), cfg.warnings, cfg.trust)
            layer = _tighten_layer(layer, merged, str(pfile), cfg.warnings)
            cfg.files.append(pfile)
            _record_sources(layer, "", f"project:{pfile}", cfg.sources)
            merged = merge(merged, layer)
    env_layer = _env_layer(environ) if user_data is None else {}
    if env_layer:
        _record_sources(env_layer, "", "env", cfg.sources)
        merged = merge(merged, env_layer)
    cfg.data = merged
    return cfg


def _file_stamp(path: str) -> tuple[int, int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode, st.st_uid)


def layer_stamp(workspace: Path | None, user_path: Path | None) -> tuple[Any, ...]:
    """What :func:`load_config` read, as cheap ``stat`` results: it differs when a config file
    was created, edited, removed or re-permissioned (the user file and every project-file
    candidate upward from ``workspace``), so a caller can skip reloading an unchanged config."""
    stamps: list[Any] = [_file_stamp(str(user_path)) if user_path is not None else None,
                         _file_stamp(str(store_path()))]
    if workspace is not None:
        # The same walk as find_project_files, on strings: this runs at every OpenSession.
        current = os.path.realpath(workspace)
        home = os.path.realpath(Path.home())
        directory = current
        while True:
            if directory == home and directory != current:
                break
            stamps.extend(_file_stamp(os.path.join(directory, name)) for name in PROJECT_FILES)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return tuple(stamps)


# ---------------------------------------------------------------- typed views


def _type_ok(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, Mapping)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def from_mapping(cls: type[T], raw: Mapping[str, Any], where: str = "", refused: list[str] | None = None) -> T:
    """Build dataclass ``cls`` from ``raw``; nested dataclasses are built too.

    A value of the wrong type, or a number out of its range (``config_ranges``), is a
    :class:`ConfigError` naming the key; with ``refused`` it is left out instead (the field
    keeps its default) and the sentence is appended there, so a service starts without it.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls} is not a dataclass")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            continue
        value = raw[f.name]
        tp = hints[f.name]
        key = f"{where}.{f.name}" if where else f.name
        try:
            if dataclasses.is_dataclass(tp) and isinstance(tp, type):
                if value is None:
                    continue
                if not isinstance(value, Mapping):
                    raise ConfigError(f"config key `{key}` must be a mapping, got {type(value).__name__}")
                kwargs[f.name] = from_mapping(tp, value, key, refused)
                continue
            kwargs[f.name] = _checked_value(key, value, tp)
        except ConfigError as err:
            if refused is None:
                raise
            refused.append(f"{err.message}; it is ignored (the default applies)")
    return cls(**kwargs)


def _checked_value(key: str, value: Any, tp: Any) -> Any:
    if not _type_ok(value, tp):
        raise ConfigError(
            f"config key `{key}` has the wrong type: expected {getattr(tp, '__name__', tp)}, "
            f"got {type(value).__name__} ({value!r:.60})",
            hint="Fix the value in the file /config names as its source.",
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = range_problem(key, value)
        if problem:
            raise ConfigError(problem, hint="Fix the value in the file /config names as its source.")
    if typing.get_origin(tp) is tuple and isinstance(value, list):
        value = tuple(value)
    return value


# ---------------------------------------------------------------- /config report


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
    if _VAR.fullmatch(value.strip()):
        return value
    return "****" + value[-4:] if len(value) >= 12 else "****"


def _flatten(node: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(node, Mapping) and node:
        for k, v in node.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(node, list) and any(isinstance(v, Mapping) for v in node):
        for n, v in enumerate(node):
            _flatten(v, f"{prefix}.{n}", out)
    else:
        out[prefix] = node


def _dataclass_defaults(cls: type[Any], prefix: str, out: dict[str, Any]) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}"
        hinted = hints.get(f.name)
        if dataclasses.is_dataclass(hinted) and isinstance(hinted, type):
            _dataclass_defaults(hinted, key, out)
        elif f.default is not dataclasses.MISSING:
            out[key] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[key] = f.default_factory()


def effective_config_report(
    config: Config, sections: Mapping[str, type[Any]] | None = None
) -> list[tuple[str, Any, str]]:
    """Every effective leaf value as ``(dotted key, value, source)``, sorted by key, secrets masked.

    ``sections`` maps a section name to its typed dataclass (e.g. ``{"ai": LoopSettings}``) so
    that unset fields appear with their default and source "default".
    """
    flat: dict[str, Any] = {}
    _flatten(config.data, "", flat)
    flat.pop("", None)
    defaults: dict[str, Any] = {}
    for name, cls in (sections or {}).items():
        _dataclass_defaults(cls, name, defaults)
    rows = []
    for key in sorted(set(flat) | set(defaults)):
        if key in flat:
            value, source = flat[key], config.source_of(key)
        else:
            value, source = defaults[key], "default"
        rows.append((key, mask_secret(value) if is_secret_key(key) else value, source))
    return rows


# ---------------------------------------------------------------- config init

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
