"""What a typed answer to an approval means: the one key table of ``run`` and the REPL."""

from __future__ import annotations

from clients.cli.views import Decision

APPROVAL_KEYS: dict[str, Decision] = {
    "y": Decision.ALLOW_ONCE,
    "yes": Decision.ALLOW_ONCE,
    "a": Decision.ALLOW_ALWAYS,
    "always": Decision.ALLOW_ALWAYS,
    "n": Decision.DENY,
    "no": Decision.DENY,
    "s": Decision.STOP,
    "stop": Decision.STOP,
}
# The one-letter keys, as the REPL binds them and the prompts list them.
ONE_KEYS = tuple(key for key in APPROVAL_KEYS if len(key) == 1)
CHOICES = "[" + "/".join(ONE_KEYS) + "]"
HINT = "y once · a always · n deny · s stop turn · Enter = deny"


def approval_decision(answer: str) -> Decision:
    """The decision a typed answer means; anything else (Enter alone included) is deny."""
    return APPROVAL_KEYS.get(answer.strip().lower(), Decision.DENY)


def is_approval_answer(line: str) -> bool:
    """Whether a submitted line answers an approval (a known key word, or nothing at all = deny)."""
    return not line.strip() or line.strip().lower() in APPROVAL_KEYS
