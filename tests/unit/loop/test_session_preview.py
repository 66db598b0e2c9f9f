"""`sessions list` shows what the user typed: no Python repr of an image prompt, no attached file."""

from __future__ import annotations

from services.loop.core.sessions import Session, preview_text


def test_an_image_prompt_previews_as_its_words_and_an_image_mark() -> None:
    content = [{"type": "text", "text": "what is in @shot.png?"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    assert preview_text(content) == "what is in @shot.png? [image]"


def test_attached_text_is_left_out_and_the_line_is_cut() -> None:
    typed = "explain @src/auth.py\n\n<attachment path=\"src/auth.py\">\ndef login(): ...\n</attachment>"
    assert preview_text(typed) == "explain @src/auth.py"
    assert len(preview_text("word " * 100)) == 80


def test_a_sessions_preview_is_its_first_user_message() -> None:
    session = Session(id="s", workspace="/w", messages=[
        {"role": "system", "content": "x"}, {"role": "user", "content": "fix\n  the   bug"}])
    assert session.preview() == "fix the bug"
