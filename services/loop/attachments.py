"""Files the user attached to an input (``@path`` in the prompt), folded into the user message.

A text file goes into the message as an ``<attachment>`` block after the user's words, so the
model sees what was attached and from where, and the session keeps it like any other input.
An image needs a model that accepts image parts; until one is configured as such, an image is
refused with a sentence that says so instead of being dropped or sent as bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.loop.errors import BadRequest


@dataclass(frozen=True)
class InputFile:
    """One attachment as the client sent it."""

    path: str
    mime_type: str
    data: bytes
    truncated: bool = False


def with_attachments(text: str, files: Sequence[InputFile], model: str) -> str:
    """``text`` followed by one ``<attachment>`` block per text file; raises BadRequest for an
    image (``model`` does not take image input) or an unknown type."""
    blocks = []
    for item in files:
        if item.mime_type.startswith("image/"):
            raise BadRequest(f"model `{model}` does not accept images; @{item.path} was not sent",
                             hint="Describe the image in words, or use a model that takes image input.")
        if item.mime_type != "text/plain":
            raise BadRequest(f"@{item.path}: cannot attach {item.mime_type or 'an untyped file'}",
                             hint="Attach text files or images.")
        cut = ' truncated="true"' if item.truncated else ""
        body = item.data.decode("utf-8", errors="replace")
        blocks.append(f"<attachment path=\"{item.path}\"{cut}>\n{body}\n</attachment>")
    return "\n\n".join([text, *blocks]) if blocks else text
