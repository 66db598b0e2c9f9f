"""Errors about a missing model or variable tell the user the services keep their start environment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.kernel.config import Config, expand_vars
from services.kernel.errors import ConfigError
from services.loop.model.settings import resolve_model
from services.loop.session.open_sessions import with_environment_hint


def raised(call: Callable[[], Any]) -> ConfigError:
    try:
        call()
    except ConfigError as err:
        return err
    raise AssertionError("no ConfigError")


def test_no_model_configured_gains_the_restart_hint_and_keeps_its_own() -> None:
    err = raised(lambda: resolve_model(Config(), None, env={}))
    hinted = with_environment_hint(err)
    assert str(hinted).startswith("no model configured")
    assert err.hint in str(hinted) and "ai-coding down" in str(hinted)
    assert hinted.reason == "config_invalid"


def test_a_missing_variable_gains_the_restart_hint() -> None:
    err = raised(lambda: expand_vars("${AIC_NOT_THERE}", {}))
    assert "ai-coding down" in str(with_environment_hint(err))


def test_other_config_errors_are_left_as_they_are() -> None:
    err = raised(lambda: resolve_model(Config(data={"models": {"a": {}}}), "b", env={}))
    assert with_environment_hint(err) is err
