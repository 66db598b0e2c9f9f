"""The fake model's exception tree: one base, one narrow subclass per failure a user can cause."""

from __future__ import annotations

from services.kernel.errors import AiCodingError


class FakeModelError(AiCodingError):
    """Base of every error the fake model raises on purpose."""

    reason = "fake_model_error"


class ScriptError(FakeModelError):
    """A script file is unreadable or a step is malformed (the message names the step and field)."""

    reason = "fake_script_invalid"
