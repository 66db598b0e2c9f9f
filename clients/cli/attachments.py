"""``@path`` mentions in a prompt: the files they name, read and bounded, to send with the input.

A mention that names no file (``@pytest.fixture``, an e-mail address) stays plain text. An image
(``@shot.png``, or an image path standing alone on the prompt line) goes as an image for models
that accept images; the loop refuses it clearly for the others.

Links are resolved before anything is read, and the real file must be inside the workspace, or
inside the directory the user typed when they wrote a path outside it (``@~/notes/a.md``): a link
the agent made (``@key`` -> ``~/.ssh/id_rsa``, ``@dir/secret`` through a linked folder) is refused,
saying where it leads. The config, data, runtime and workspace-state dirs are never attached
(services/kernel/sources.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from services.kernel.records import record

MAX_TEXT_BYTES = 64_000
"""A text file beyond this is cut (and marked truncated): it is paid on every later step."""
MAX_IMAGE_BYTES = 5_000_000
MAX_ATTACHMENTS = 10
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
TEXT_TYPE = "text/plain"

_MENTION = re.compile(r"(?<![\w@])@([^\s@,;:!?()\[\]{}<>\"'`]+)")
_WORD = re.compile(r"\S+")


@record
class Attachment:
    """One file named in the prompt, as sent."""

    path: str
    """As the user wrote it."""
    mime_type: str
    data: bytes
    truncated: bool = False

    @property
    def is_image(self) -> bool:
        return self.mime_type.startswith("image/")


class AttachmentError(ValueError):
    """A mentioned file that cannot be sent (too large an image, not text, too many files)."""


def mentioned_paths(prompt: str, cwd: Path) -> list[str]:
    """Paths the prompt names, in order, once each: ``@path`` of an existing file, and an image
    file's path written on its own (``look at shot.png``)."""
    found: list[str] = []
    for match in _MENTION.finditer(prompt):
        name = match.group(1).rstrip(".")
        if _resolve(name, cwd).is_file() and name not in found:
            found.append(name)
    for match in _WORD.finditer(prompt):
        word = match.group(0).strip("\"'").rstrip(".,;:")
        if word.startswith("@") or Path(word).suffix.lower() not in IMAGE_TYPES or word in found:
            continue
        if _resolve(word, cwd).is_file():
            found.append(word)
    return found


def collect(prompt: str, cwd: Path, root: Path | None = None) -> list[Attachment]:
    """Read every file the prompt mentions (see :func:`mentioned_paths`) that may be sent from
    workspace ``root`` (default ``cwd``); raises AttachmentError."""
    names = mentioned_paths(prompt, cwd)
    if len(names) > MAX_ATTACHMENTS:
        raise AttachmentError(f"the prompt names {len(names)} files; attach at most {MAX_ATTACHMENTS} at once")
    return [read_attachment(name, cwd, root or cwd) for name in names]


def read_attachment(name: str, cwd: Path, root: Path | None = None) -> Attachment:
    path = _resolve(name, cwd)
    workspace = root or cwd
    refused = _refusal(name, path, cwd, workspace)
    if refused:
        raise AttachmentError(f"@{name} is not attached: {refused}; attach files of the workspace, or type the "
                              "file's own path")
    real = Path(os.path.realpath(path))  # read what was checked, not the link a second time
    mime = IMAGE_TYPES.get(path.suffix.lower())
    try:
        with real.open("rb") as handle:
            data = handle.read((MAX_IMAGE_BYTES if mime else MAX_TEXT_BYTES) + 1)
    except OSError as exc:
        raise AttachmentError(f"cannot read @{name}: {exc.strerror or exc}") from None
    if mime:
        if len(data) > MAX_IMAGE_BYTES:
            raise AttachmentError(f"@{name} is larger than {MAX_IMAGE_BYTES // 1_000_000} MB; send a smaller image")
        return Attachment(name, mime, data)
    truncated = len(data) > MAX_TEXT_BYTES
    data = data[:MAX_TEXT_BYTES]
    if b"\0" in data:
        raise AttachmentError(f"@{name} is not a text file; attach text files or images "
                              f"({', '.join(sorted(IMAGE_TYPES))})")
    text = data.decode("utf-8", errors="ignore")  # a cut may split the last character
    return Attachment(name, TEXT_TYPE, text.encode("utf-8"), truncated)


def _refusal(name: str, path: Path, cwd: Path, workspace: Path) -> str:
    from services.kernel.config import user_config_path
    from services.kernel.datadir import data_dir
    from services.kernel.endpoints import runtime_dir
    from services.kernel.sources import named_dir, refusal

    private = [("the user config", str(user_config_path().parent)), ("the ai-coding data dir", str(data_dir())),
               ("the runtime dir with the service sockets", str(runtime_dir(None)))]
    return refusal(path, workspace, named=named_dir(name, cwd, workspace), private=private)


def _resolve(name: str, cwd: Path) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else cwd / path
