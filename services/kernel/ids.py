"""Identifiers: sortable by creation time, short enough to type a prefix of."""

from __future__ import annotations

import os
import time


def new_id(prefix: str = "") -> str:
    """A 20-hex-char id: 12 chars of milliseconds then 8 random chars."""
    millis = int(time.time() * 1000)
    return f"{prefix}{millis:012x}{os.urandom(4).hex()}"
