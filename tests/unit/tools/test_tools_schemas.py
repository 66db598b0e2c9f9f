"""Argument parsing and schema validation: every error names the field."""

from __future__ import annotations

import pytest

from services.tools.errors import ToolError
from services.tools.schemas import SPECS_BY_NAME, TOOL_SPECS, BashArgs, parse_arguments, validate_arguments


def error_of(tool: str, args: dict[str, object]) -> ToolError:
    with pytest.raises(ToolError) as info:
        validate_arguments(SPECS_BY_NAME[tool], args)
    return info.value


def test_invalid_json_is_an_invalid_arguments_error_that_says_so() -> None:
    with pytest.raises(ToolError) as info:
        parse_arguments('{"path": ')
    assert info.value.code == "invalid_arguments" and "not valid JSON" in info.value.message


def test_a_json_array_is_refused_as_not_an_object() -> None:
    with pytest.raises(ToolError) as info:
        parse_arguments("[1, 2]")
    assert "JSON object" in info.value.message


def test_a_missing_field_is_named() -> None:
    err = error_of("edit", {"path": "a", "old_string": "x"})
    assert err.code == "invalid_arguments" and "`new_string`" in err.message


def test_an_unknown_field_is_named_with_the_allowed_ones() -> None:
    err = error_of("read", {"path": "a", "lines": 3})
    assert "`lines`" in err.message and "offset" in err.message


def test_a_wrong_type_is_named() -> None:
    assert "`limit`" in error_of("read", {"path": "a", "limit": "ten"}).message
    assert "`replace_all`" in error_of("edit", {"path": "a", "old_string": "x", "new_string": "y",
                                                "replace_all": 1}).message


def test_a_bash_timeout_above_600_seconds_is_refused_naming_the_limit() -> None:
    err = error_of("bash", {"command": "true", "timeout_seconds": 601})
    assert "`timeout_seconds`" in err.message and "600" in err.message


def test_valid_arguments_pass_through() -> None:
    assert validate_arguments(SPECS_BY_NAME["bash"], {"command": "ls", "timeout_seconds": 5}) == BashArgs(
        "ls", 5.0)


def test_permissions_follow_the_spec_table() -> None:
    levels = {spec.name: spec.permission for spec in TOOL_SPECS}
    assert levels["read"] == levels["glob"] == levels["grep"] == "allow"
    assert levels["write"] == levels["edit"] == levels["bash"] == "warn"


def test_non_finite_numbers_are_refused() -> None:
    spec = SPECS_BY_NAME["bash"]
    args = parse_arguments('{"command": "true", "timeout_seconds": NaN}')
    with pytest.raises(ToolError, match="finite"):
        validate_arguments(spec, args)


def test_a_lone_surrogate_in_the_arguments_is_refused() -> None:
    with pytest.raises(ToolError, match="invalid Unicode"):
        parse_arguments('{"path": "\\ud800"}')
