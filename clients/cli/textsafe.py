"""External text made safe to print: control characters shown, never interpreted, never markup."""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls except \t and \n, DEL, the C1 range (0x80-0x9f: 8-bit CSI/OSC), and the bidi
# embedding/override/isolate marks that can make shown text read differently from what it is.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible_controls(text: str) -> str:
    """``text`` with control characters replaced by a visible ``\\xNN`` form (\\r\\n kept as \\n)."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def literal(text: str, style: str = "") -> Text:
    """External text as a rich ``Text``: no markup parsing, no emoji codes, controls visible."""
    return Text(visible_controls(text), style=style)
