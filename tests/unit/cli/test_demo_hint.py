"""The demo's last words fit the user: how to set a model up, or that one is set up already."""

from __future__ import annotations

from clients.cli.demo import closing_hint


def test_a_configured_user_is_not_told_to_configure_a_model() -> None:
    said = closing_hint(configured=True)
    assert "scripted replay" in said and "already names a model" in said
    assert "ai-coding setup" not in said and "api_key" not in said


def test_an_unconfigured_user_is_shown_setup_and_the_file() -> None:
    said = closing_hint(configured=False)
    assert "ai-coding setup" in said and "api_key: ${OPENAI_API_KEY}" in said
