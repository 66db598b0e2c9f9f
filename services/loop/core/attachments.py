"""Files the user attached to an input (``@path`` in the prompt), folded into the user message.

A text file goes into the message as an ``<attachment>`` block after the user's words, so the
model sees what was attached and from where, and the session keeps it like any other input.
An image goes as an ``image_url`` part (a data URL) to a model configured with ``images: true``;
to any other model it is refused with a sentence that says so, never dropped or sent as text.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.loop.core.errors import BadRequest


@dataclass(frozen=True)
class InputFile:
    """One attachment as the client sent it."""

    path: str
    mime_type: str
    data: bytes
    truncated: bool = False

    @property
    def is_image(self) -> bool:
        return self.mime_type.startswith("image/")


def with_attachments(text: str, files: Sequence[InputFile], model: str, accepts_images: bool
                     ) -> tuple[str, tuple[InputFile, ...]]:
    """``(text followed by one <attachment> block per text file, the images)``; raises BadRequest
    for an image ``model`` does not take, or a type that is neither text nor image."""
    blocks = []
    images = []
    for item in files:
        if item.is_image:
            if not accepts_images:
                raise BadRequest(f"model `{model}` does not accept images; @{item.path} was not sent",
                                 hint="Use a model configured with `images: true`, or describe the image in words.")
            images.append(item)
            continue
        if item.mime_type != "text/plain":
            raise BadRequest(f"@{item.path}: cannot attach {item.mime_type or 'an untyped file'}",
                             hint="Attach text files or images.")
        cut = ' truncated="true"' if item.truncated else ""
        body = item.data.decode("utf-8", errors="replace")
        blocks.append(f"<attachment path=\"{item.path}\"{cut}>\n{body}\n</attachment>")
    return ("\n\n".join([text, *blocks]) if blocks else text), tuple(images)


def user_content(text: str, images: Sequence[InputFile]) -> str | list[dict[str, Any]]:
    """The user message's ``content``: the text alone, or a text part then one image part each."""
    if not images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for image in images:
        url = f"data:{image.mime_type};base64,{base64.b64encode(image.data).decode('ascii')}"
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def accepts_images(model: object) -> bool:
    """Whether a model client's settings say it takes images (``images: true`` on its entry)."""
    return bool(getattr(getattr(model, "settings", None), "images", False))
