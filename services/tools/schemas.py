"""The tools' arguments: one dataclass per tool gives its JSON schema (what the model sees) and
the parse of a call (services/kernel/tool_args.py, the same check and error sentences the loop
uses for its own tools), naming the field in every error so the model can fix its call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from services.kernel.tool_args import ArgumentError, arg, parse_args, schema_of
from services.tools import limits
from services.tools.errors import ToolError

_PATH = "Relative to the workspace root, or absolute inside it."
# Longest value a path or pattern may hold: a longer one cannot work (Linux PATH_MAX is 4096; rg
# gets the pattern as one argv string, at most 128 KiB), so it is refused with its length before
# any work; checked, not sent (every schema byte is paid on every step).
PATH_MAX_CHARS = 4096
PATTERN_MAX_CHARS = 65_536


@dataclass(frozen=True)
class ReadArgs:
    path: str = arg(_PATH, max_chars=PATH_MAX_CHARS)
    offset: int = arg("First line (1-based).", 1, minimum=1)
    limit: int = arg(f"Lines to return (default {limits.READ_DEFAULT_LIMIT}).", limits.READ_DEFAULT_LIMIT,
                     minimum=1, maximum=100_000)


@dataclass(frozen=True)
class WriteArgs:
    path: str = arg(_PATH, max_chars=PATH_MAX_CHARS)
    content: str = arg("The complete new content.")


@dataclass(frozen=True)
class EditArgs:
    path: str = arg(_PATH, max_chars=PATH_MAX_CHARS)
    old_string: str = arg("Exact text, whitespace and indentation included.")
    new_string: str = arg()
    replace_all: bool = False


@dataclass(frozen=True)
class GlobArgs:
    pattern: str = arg("Relative to path.", max_chars=PATTERN_MAX_CHARS)
    path: str = arg("Directory (default: the workspace root).", ".", max_chars=PATH_MAX_CHARS)
    max_results: int = arg("", limits.GLOB_DEFAULT_MAX, minimum=1, maximum=limits.GLOB_MAX)


@dataclass(frozen=True)
class GrepArgs:
    pattern: str = arg(max_chars=PATTERN_MAX_CHARS)
    path: str = arg("File or directory (default: the workspace root).", ".", max_chars=PATH_MAX_CHARS)
    glob: str = arg("Only files matching this glob, e.g. `*.py`.", "", max_chars=PATTERN_MAX_CHARS)
    case_insensitive: bool = False
    max_results: int = arg("", limits.GREP_DEFAULT_MAX_HITS, minimum=1, maximum=limits.GREP_MAX_HITS)


@dataclass(frozen=True)
class BashArgs:
    command: str = arg("The command line.")
    timeout_seconds: float = arg("", limits.BASH_DEFAULT_TIMEOUT, exclusive_minimum=0, maximum=limits.BASH_MAX_TIMEOUT)
    description: str = arg("Five to ten words saying what the command does.", "")


@dataclass(frozen=True)
class JobStartArgs:
    command: str = arg("The command line.")
    name: str = arg("A short label.", "")


@dataclass(frozen=True)
class JobArgs:
    job_id: str = arg("The id job_start returned.")


@dataclass(frozen=True)
class NoArgs:
    pass


@dataclass(frozen=True)
class ToolSpecData:
    """A tool as ListTools describes it; ``args`` is its one definition (schema and parse)."""

    name: str
    description: str
    args: type[Any]
    permission: str
    parallel_safe: bool
    deferred: bool = False

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema the model is sent (``schema_of(args)``)."""
        return schema_of(self.args)


TOOL_SPECS: tuple[ToolSpecData, ...] = (
    ToolSpecData(
        "read",
        "Read a text file with line numbers; page with offset and limit. Binary files and files over 10 MB "
        "are refused.",
        ReadArgs, "allow", True),
    ToolSpecData(
        "write",
        "Create a file or replace its whole content. An existing file must have been read in this session "
        "and not changed since.",
        WriteArgs, "warn", False),
    ToolSpecData(
        "edit",
        "Replace an exact string in a file (read in this session, not changed since). old_string must match "
        "exactly once unless replace_all. Returns a unified diff.",
        EditArgs, "warn", False),
    ToolSpecData(
        "glob",
        "Find files by glob pattern (`**/*.py`, `*.{js,jsx}`), newest first; skips .git and .gitignore'd files.",
        GlobArgs, "allow", True),
    ToolSpecData(
        "grep",
        "Search file contents with a regular expression; hits come as `path:line: text`. Skips hidden, binary "
        "and .gitignore'd files.",
        GrepArgs, "allow", True),
    ToolSpecData(
        "bash",
        "Run a bash command in the workspace (Linux, sandboxed). It is killed after timeout_seconds (default "
        "60): set up to 600 for a long command instead of timeout/nohup. Output over 50,000 characters keeps "
        "head and tail. Servers and watchers: job_start.",
        BashArgs, "warn", False),
    ToolSpecData(
        "job_start",
        "Start a background shell command (a server, a watcher) in the sandbox; returns its job id. "
        "Read its output with job_output. Jobs stop when the session closes.",
        JobStartArgs, "warn", False, deferred=True),
    ToolSpecData(
        "job_output",
        "New output of a background job since the last job_output call, with its status.",
        JobArgs, "allow", True, deferred=True),
    ToolSpecData(
        "job_list",
        "List this session's background jobs with status and runtime.",
        NoArgs, "allow", True, deferred=True),
    ToolSpecData(
        "job_stop",
        "Stop a background job (its whole process group).",
        JobArgs, "warn", False, deferred=True),
)

SPECS_BY_NAME = {spec.name: spec for spec in TOOL_SPECS}


def _invalid(message: str, hint: str = "") -> ToolError:
    return ToolError("invalid_arguments", message, hint or "Fix the arguments and call the tool again.")


def parse_arguments(arguments_json: str) -> dict[str, Any]:
    """The arguments as a dict; invalid JSON or a non-object is an ``invalid_arguments`` error."""
    text = arguments_json.strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})",
                       "Send the arguments as one JSON object.") from None
    if not isinstance(value, dict):
        raise _invalid(f"the arguments must be a JSON object, not {type(value).__name__}",
                       "Send the arguments as one JSON object.")
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid("the arguments contain invalid Unicode (a lone surrogate escape such as \\ud800)",
                       "Send valid UTF-8 text.") from None
    return value


def validate_arguments(spec: ToolSpecData, args: dict[str, Any]) -> Any:
    """``args`` parsed by ``spec``'s definition (an instance of ``spec.args``); the first problem
    found is an ``invalid_arguments`` error naming its field."""
    try:
        return parse_args(spec.args, args)
    except ArgumentError as err:
        raise _invalid(str(err)) from None
