"""A boolean key takes the quoted words the template's comments use (`thinking: "on"`)."""

from __future__ import annotations


def test_a_quoted_on_or_off_is_taken_for_a_boolean_key_and_a_string_key_keeps_its_text() -> None:
    from dataclasses import dataclass

    from services.kernel.config import from_mapping

    @dataclass
    class Section:
        thinking: bool | None = None
        name: str = ""

    assert from_mapping(Section, {"thinking": "on", "name": "no"}) == Section(thinking=True, name="no")
    assert from_mapping(Section, {"thinking": "Off"}).thinking is False
