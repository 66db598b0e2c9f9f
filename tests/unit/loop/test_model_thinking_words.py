"""``thinking: "on"`` (quoted) means what the template's comment says: on/off."""

from __future__ import annotations

import pytest

from services.kernel.config import Config
from services.kernel.errors import ConfigError
from services.loop.model.settings import resolve_model


def _entry(thinking: object) -> Config:
    return Config(data={"models": {"m": {"provider": "deepseek", "model": "x", "api_key": "k", "thinking": thinking}}})


def test_a_quoted_on_or_off_sets_thinking() -> None:
    assert resolve_model(_entry("on"), env={}).thinking is True
    assert resolve_model(_entry("Off"), env={}).thinking is False
    assert resolve_model(_entry(True), env={}).thinking is True


def test_another_word_is_still_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"models\.m\.thinking"):
        resolve_model(_entry("maybe"), env={})
