"""``thinking: "on"`` (quoted) means what the template's comment says: on/off."""

from __future__ import annotations

from services.kernel.config import Config
from services.loop.model.settings import resolve_model


def _entry(thinking: object) -> Config:
    return Config(data={"models": {"m": {"provider": "deepseek", "model": "x", "api_key": "k", "thinking": thinking}}})


def test_a_quoted_on_or_off_sets_thinking() -> None:
    assert resolve_model(_entry("on"), env={}).thinking is True
    assert resolve_model(_entry("Off"), env={}).thinking is False
    assert resolve_model(_entry(True), env={}).thinking is True


def test_another_word_is_still_refused_naming_the_key() -> None:
    config = _entry("maybe")
    settings = resolve_model(config, env={})  # a bad value is left out (the default), never a crash loop
    assert settings.thinking is None  # the default: the provider decides
    assert any("models.m.thinking" in w for w in config.warnings), config.warnings
