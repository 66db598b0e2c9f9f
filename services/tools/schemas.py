"""The tools' JSON schemas (what the model sees) and argument validation.

The validator covers the subset the schemas use (object of typed properties,
required, no unknown fields, minimum/maximum, enum) and names the field in
every error, so the model can fix its call.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from services.tools import limits
from services.tools.errors import ToolError


@dataclass(frozen=True)
class ToolSpecData:
    """A tool as ListTools describes it."""

    name: str
    description: str
    parameters: dict[str, Any]
    permission: str
    parallel_safe: bool
    deferred: bool = False


def _obj(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _s(desc: str) -> dict[str, Any]:
    return {"type": "string", "description": desc}


_PATH = _s("File path, relative to the workspace root or absolute inside it.")

TOOL_SPECS: tuple[ToolSpecData, ...] = (
    ToolSpecData(
        "read",
        "Read a text file with line numbers. Page with offset (1-based first line) and limit. "
        "Files over 10 MB and binary files are refused. Reading records the file's state so write/edit "
        "can detect changes made since.",
        _obj(["path"], path=_PATH,
             offset={"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
             limit={"type": "integer", "minimum": 1, "maximum": 100_000,
                    "description": f"Lines to return (default {limits.READ_DEFAULT_LIMIT})."}),
        "allow", True),
    ToolSpecData(
        "write",
        "Create a file or replace its whole content. Replacing an existing file requires reading it first "
        "in this session, and fails if it changed since.",
        _obj(["path", "content"], path=_PATH, content=_s("The complete new content.")),
        "warn", False),
    ToolSpecData(
        "edit",
        "Replace an exact string in a file. old_string must match exactly once unless replace_all is true. "
        "The file must have been read in this session and not changed since. Returns a unified diff.",
        _obj(["path", "old_string", "new_string"], path=_PATH,
             old_string=_s("Exact text to find, including whitespace and indentation."),
             new_string=_s("Replacement text."),
             replace_all={"type": "boolean", "description": "Replace every occurrence (default false)."}),
        "warn", False),
    ToolSpecData(
        "glob",
        "Find files by glob pattern (`**/*.py`, `src/*.ts`, `*.{js,jsx}`), newest first. "
        "Skips .git and files ignored by .gitignore.",
        _obj(["pattern"], pattern=_s("Glob pattern relative to path."),
             path=_s("Directory to search (default: the workspace root)."),
             max_results={"type": "integer", "minimum": 1, "maximum": limits.GLOB_MAX}),
        "allow", True),
    ToolSpecData(
        "grep",
        "Search file contents with a regular expression. Hits come as `path:line: text` (lines cut at "
        "300 characters). Skips hidden, binary and .gitignore'd files.",
        _obj(["pattern"], pattern=_s("Regular expression."),
             path=_s("File or directory to search (default: the workspace root)."),
             glob=_s("Only search files whose name matches this glob, e.g. `*.py`."),
             case_insensitive={"type": "boolean"},
             max_results={"type": "integer", "minimum": 1, "maximum": limits.GREP_MAX_HITS}),
        "allow", True),
    ToolSpecData(
        "bash",
        "Run a shell command (bash, Linux) in the workspace, inside a sandbox. Default timeout 60 s; "
        "set timeout_seconds (up to 600) for longer commands instead of wrapping them in timeout/nohup. "
        "Output over 50,000 characters keeps the head and tail. Use job_start for servers and watchers.",
        _obj(["command"], command=_s("The command line."),
             timeout_seconds={"type": "number", "exclusiveMinimum": 0, "maximum": limits.BASH_MAX_TIMEOUT,
                              "description": "Seconds before the command is killed (default 60, max 600)."},
             description=_s("Five to ten words saying what the command does.")),
        "warn", False),
    ToolSpecData(
        "job_start",
        "Start a background shell command (a server, a watcher) in the sandbox; returns its job id. "
        "Read its output with job_output. Jobs stop when the session closes.",
        _obj(["command"], command=_s("The command line."), name=_s("A short label.")),
        "warn", False, deferred=True),
    ToolSpecData(
        "job_output",
        "New output of a background job since the last job_output call, with its status.",
        _obj(["job_id"], job_id=_s("The id job_start returned.")),
        "allow", True, deferred=True),
    ToolSpecData(
        "job_list",
        "List this session's background jobs with status and runtime.",
        _obj([]),
        "allow", True, deferred=True),
    ToolSpecData(
        "job_stop",
        "Stop a background job (its whole process group).",
        _obj(["job_id"], job_id=_s("The id job_start returned.")),
        "warn", False, deferred=True),
)

SPECS_BY_NAME = {spec.name: spec for spec in TOOL_SPECS}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
    "array": (list,),
}


def _type_ok(value: Any, json_type: str) -> bool:
    if json_type in ("integer", "number") and isinstance(value, bool):
        return False
    if json_type == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return isinstance(value, _JSON_TYPES[json_type])


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


# Longest value a string field may hold, whatever the tool: a longer one cannot work (Linux PATH_MAX
# is 4096; rg and bash get the pattern and command as one argv string, at most 128 KiB), so it is
# refused with its length before any work; kept out of the schemas the model reads every step.
FIELD_MAX_CHARS = {"path": 4096, "pattern": 65_536, "glob": 65_536}


def validate_arguments(spec: ToolSpecData, args: dict[str, Any]) -> dict[str, Any]:
    """Check ``args`` against ``spec``'s schema; the first problem found names its field."""
    schema = spec.parameters
    props: dict[str, Any] = schema["properties"]
    for name in schema["required"]:
        if name not in args or args[name] is None:
            raise _invalid(f"`{spec.name}` needs the field `{name}`")
    for name, value in args.items():
        if name not in props:
            allowed = ", ".join(props) or "none"
            raise _invalid(f"`{spec.name}` has no field `{name}` (fields: {allowed})")
        prop = props[name]
        if value is None:
            continue
        if not _type_ok(value, prop["type"]):
            raise _invalid(f"field `{name}` must be a {prop['type']}, not {type(value).__name__}")
        longest = FIELD_MAX_CHARS.get(name)
        if longest is not None and isinstance(value, str) and len(value) > longest:
            raise _invalid(f"field `{name}` is {len(value):,} characters; at most {longest:,} can work",
                           f"Send a shorter `{name}`.")
        if isinstance(value, float) and not math.isfinite(value):
            raise _invalid(f"field `{name}` must be a finite number (got {value})")
        if "minimum" in prop and value < prop["minimum"]:
            raise _invalid(f"field `{name}` must be at least {prop['minimum']} (got {value})")
        if "exclusiveMinimum" in prop and value <= prop["exclusiveMinimum"]:
            raise _invalid(f"field `{name}` must be more than {prop['exclusiveMinimum']} (got {value})")
        if "maximum" in prop and value > prop["maximum"]:
            raise _invalid(f"field `{name}` must be at most {prop['maximum']} (got {value})")
    return {k: v for k, v in args.items() if v is not None}
