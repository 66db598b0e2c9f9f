"""The stable error codes of the loop's own tool results (the model reads ``code: sentence``;
traces count them). The tools service's codes (``edit_no_match``, ``stale_read``...) travel as
the strings it sends; these are the loop's, typed so a misspelt one fails mypy."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """A loop tool result's error code."""

    INVALID_ARGUMENTS = "invalid_arguments"
    TRUNCATED_CALL = "truncated_call"
    UNKNOWN_TOOL = "unknown_tool"
    UNAVAILABLE = "unavailable"
    CANCELLED = "cancelled"
    CANCELLED_BY_USER = "cancelled_by_user"
    TOOL_SERVICE_UNAVAILABLE = "tool_service_unavailable"
    TOOL_TIMEOUT = "tool_timeout"
    # refusals before the tool ran (a guard, the permission table, a hook, the user)
    DUPLICATE_CALL = "duplicate_call"
    PATH_OUTSIDE_WORKSPACE = "path_outside_workspace"
    GUARD_FAILED = "guard_failed"
    PERMISSION_DENIED = "permission_denied"
    DENIED_BY_USER = "denied_by_user"
    STOPPED_BY_USER = "stopped_by_user"
    BLOCKED_BY_HOOK = "blocked_by_hook"
    # skills
    UNKNOWN_SKILL = "unknown_skill"
    UNKNOWN_FILE = "unknown_file"
    UNREADABLE_FILE = "unreadable_file"
    BROKEN_SKILL = "broken_skill"
    # subagents
    UNKNOWN_MODEL = "unknown_model"
    SUBAGENT_REFUSED = "subagent_refused"
    SUBAGENT_CAPACITY = "subagent_capacity"
    SCHEMA_INVALID = "schema_invalid"
    SCHEMA_TOO_LARGE = "schema_too_large"
    NOTHING_TO_APPLY = "nothing_to_apply"
    APPLY_FAILED = "apply_failed"
    APPLY_CONFLICT = "apply_conflict"


REFUSAL_CODES = frozenset({ErrorCode.DUPLICATE_CALL, ErrorCode.PATH_OUTSIDE_WORKSPACE, ErrorCode.GUARD_FAILED,
                           ErrorCode.PERMISSION_DENIED, ErrorCode.DENIED_BY_USER, ErrorCode.STOPPED_BY_USER})
"""Tool results that are refusals before the tool ran, not failures of the tool itself."""
