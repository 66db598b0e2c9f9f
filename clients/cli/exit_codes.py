"""Exit codes of ``ai-coding`` commands (documented in ``ai-coding run --help`` and the README).

Stdlib only: imported by ``--help`` paths that must stay fast.
"""

from __future__ import annotations

OK = 0
"""The turn completed (or the command did what it was asked)."""
FAILED = 1
"""The turn failed: the model or a core step gave up (model errors, a broken stream)."""
USAGE = 2
"""Bad input: an unknown name, an invalid config file, a runtime dir with wrong permissions."""
UNAVAILABLE = 3
"""The services could not be reached or started."""
TIMEOUT = 4
"""The turn hit its wall clock (``turn_timeout_seconds`` or ``--timeout``)."""
INTERRUPTED = 5
"""The turn was interrupted (Ctrl-C, another client) or stopped at an approval."""
LIMIT = 6
"""The turn stopped at a limit: max iterations or the token budget."""
UNVERIFIED = 7
"""The work is not proven: an acceptance proof still fails, or a plan item is blocked or stalled."""
SIGNAL_BASE = 128
"""A client stopped by a signal exits 128 + its number (SIGHUP 129, SIGTERM 143), as shells do."""

EPILOG = (
    "Exit codes: 0 completed; 1 failed; 2 bad input or config; 3 services unavailable; "
    "4 timeout; 5 interrupted or stopped at an approval; 6 stopped at max iterations or the token budget; "
    "7 not verified (an acceptance proof fails, or a plan item is blocked or stalled); "
    "129/143 stopped by SIGHUP/SIGTERM (the turn is interrupted first)."
)

# TurnStatus enum names (loop.proto) -> exit code.
_BY_STATUS = {
    "TURN_STATUS_COMPLETED": OK,
    "TURN_STATUS_FAILED": FAILED,
    "TURN_STATUS_TIMEOUT": TIMEOUT,
    "TURN_STATUS_INTERRUPTED": INTERRUPTED,
    "TURN_STATUS_APPROVAL_STOP": INTERRUPTED,
    "TURN_STATUS_MAX_ITERATIONS": LIMIT,
    "TURN_STATUS_BUDGET": LIMIT,
    "TURN_STATUS_ACCEPTANCE_FAILED": UNVERIFIED,
    "TURN_STATUS_PLAN_INCOMPLETE": UNVERIFIED,
}


def for_turn_status(status_name: str) -> int:
    """The exit code for a finished turn's status name; an unknown status counts as failed."""
    return _BY_STATUS.get(status_name, FAILED)


def for_signal(signum: int) -> int:
    """The exit code of a client that stopped because of signal ``signum``."""
    return SIGNAL_BASE + signum
