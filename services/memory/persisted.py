"""Persisted note terms: each note's tokens stored beside it, so opening a store does not re-tokenize.

A row of ``note_terms`` holds the tokenizer version that produced it, the terms
(space-joined, in order, duplicates kept: no term contains a space) and a CRC32
over version, note text and terms. A row is trusted only when all three agree;
anything else (missing row, other tokenizer version, text edited behind our back,
garbled terms) means the note is tokenized again from its text: the notes are the
truth, the terms only a cache of them.
"""

from __future__ import annotations

import zlib

from services.memory.tokenizer import TOKENIZER_VERSION


def checksum(version: int, text: str, joined_terms: str) -> int:
    """CRC32 binding a terms row to the text and tokenizer version it was made from."""
    return zlib.crc32(f"{version}\0{text}\0{joined_terms}".encode())


def terms_row(text: str, terms: list[str]) -> tuple[int, int, str]:
    """(version, checksum, joined terms) to persist for a note with ``text`` whose terms are ``tokenize(text)``."""
    joined = " ".join(terms)
    return TOKENIZER_VERSION, checksum(TOKENIZER_VERSION, text, joined), joined


def trusted_terms(text: str, version: object, check: object, joined: object) -> list[str] | None:
    """The persisted terms of a note when the row is current and intact, else None (tokenize again)."""
    if version != TOKENIZER_VERSION or not isinstance(joined, str) or not isinstance(check, int):
        return None
    if checksum(TOKENIZER_VERSION, text, joined) != check:
        return None
    return joined.split(" ") if joined else []
