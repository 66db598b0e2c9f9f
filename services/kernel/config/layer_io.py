"""Reading the layers' files: where the user file lives, which project files are ours (found
upward from the workspace), and one YAML mapping per file with errors that name the line."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kernel.config import parse_cache
from services.kernel.config.keys import DECLARATION_KEY
from services.kernel.errors import ConfigError

# The project layer's files, lowest priority first: ours by name, and the generic names that
# are read only when the file declares itself (DECLARATION_KEY at its top level).
PROJECT_FILES = ("config.yaml", "ai-coding.yaml", "config.local.yaml", "ai-coding.local.yaml")
OUR_FILE_NAMES = frozenset({"ai-coding.yaml", "ai-coding.local.yaml"})
_DECLARED = re.compile(r"^[\"']?ai[-_]?coding[\"']?\s*:", re.IGNORECASE | re.MULTILINE)


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the user layer lives (``$AI_CODING_CONFIG`` overrides)."""
    environ = os.environ if env is None else env
    if environ.get("AI_CODING_CONFIG"):
        return Path(environ["AI_CODING_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "ai-coding" / "config.yaml"


def read_yaml_file(path: Path) -> dict[str, Any]:
    """Parse one YAML mapping; errors name the file, the line and the fix. A file whose text is
    unchanged since it was last parsed is not parsed again (:mod:`parse_cache`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read config file {path}: {exc.strerror or exc}",
            hint="Fix its permissions or move it aside.",
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text", hint="Re-save it as UTF-8.") from None
    kept = parse_cache.lookup(path, text)
    if kept is not None:
        return kept
    import yaml  # here, not at the top: most commands find the file unchanged and never need it

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
    parse_cache.store(path, text, dict(data))
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

