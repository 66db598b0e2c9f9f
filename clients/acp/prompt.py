"""A ``session/prompt``'s content blocks as our turn input: text, and files or images to attach (pure).

Text blocks join into the input; a resource link is named in it (the model reads the file with
its own tools); an embedded text resource (an editor's buffer, saved or not) and an image go as
attachments, bounded as ``@path`` attachments are.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from clients.cli.attachments import (
    IMAGE_TYPES,
    MAX_ATTACHMENTS,
    MAX_IMAGE_BYTES,
    MAX_TEXT_BYTES,
    TEXT_TYPE,
    Attachment,
)


@dataclass(frozen=True)
class TurnInput:
    text: str
    attachments: tuple[Attachment, ...] = ()
    notes: tuple[str, ...] = field(default=())
    """What was left out, one sentence each (said to the user as a thought)."""


def _path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def convert(blocks: Sequence[Any]) -> TurnInput:
    texts: list[str] = []
    files: list[Attachment] = []
    notes: list[str] = []
    images = set(IMAGE_TYPES.values())
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            texts.append(f"(the user points at {_path(str(block.get('uri', '')))})")
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            resource = block["resource"]
            path = _path(str(resource.get("uri", "")))
            if isinstance(resource.get("text"), str):
                data = resource["text"].encode()
                files.append(Attachment(path, TEXT_TYPE, data[:MAX_TEXT_BYTES], len(data) > MAX_TEXT_BYTES))
            else:
                notes.append(f"{path}: a binary resource is not sent to the model")
        elif kind == "image":
            mime = str(block.get("mimeType", ""))
            try:
                data = base64.b64decode(str(block.get("data", "")), validate=True)
            except (binascii.Error, ValueError):
                notes.append("an image was not valid base64 and was left out")
                continue
            if mime not in images or len(data) > MAX_IMAGE_BYTES:
                notes.append(f"an image ({mime or 'no type'}, {len(data):,} bytes) was left out: "
                             f"send png, jpeg, gif or webp under {MAX_IMAGE_BYTES:,} bytes")
                continue
            files.append(Attachment(str(block.get("uri") or f"image-{len(files) + 1}"), mime, data))
        else:
            notes.append(f"a {kind or 'typeless'} block is not supported and was left out")
    if len(files) > MAX_ATTACHMENTS:
        notes.append(f"only the first {MAX_ATTACHMENTS} attachments were sent")
    return TurnInput("\n".join(t for t in texts if t), tuple(files[:MAX_ATTACHMENTS]), tuple(notes))
