"""The user's standing grants for one session (``/network``, ``ai-coding network``): list them, with
the unlisted hosts the session's commands were refused lately, and allow or revoke one.

Only the ``SessionEgress`` RPC reaches this, and only the loop's ``/network`` command calls that
(a command the user types; no tool the model can call). A grant stands for an unlisted name alone:
one a deny rule matches, a wildcard or an IP literal is refused here with the reason, and at
connect time the deny list and the address policy still come first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.kernel.netgrants import ALLOW_KEY
from services.kernel.netpolicy import parse_ip
from services.kernel.netrules import DEFAULT_PORTS, Decision, parse_rule
from services.tools.egress.proxy import EgressProxy, Refusal

DENY_KEY = "tools.sandbox.deny_domains"


@dataclass
class SessionEgress:
    granted: list[str] = field(default_factory=list)
    refused: list[tuple[str, Refusal]] = field(default_factory=list)
    error: str = ""


def targets(text: str) -> tuple[list[tuple[str, int]], str]:
    """``host`` (ports 80 and 443) or ``host:port`` as grant keys, or why it cannot be granted."""
    try:
        rule = parse_rule(text)
    except ValueError as exc:
        return [], f"{exc}; write a host name or host:port"
    if rule.wildcard:
        return [], (f"a grant names one host, not {text.strip()!r}: put wildcards under {ALLOW_KEY} in your user "
                    "config")
    if parse_ip(rule.name) is not None:
        return [], (f"{rule.name} is an IP address: the sandbox refuses IP literals unless {ALLOW_KEY} in your "
                    "user config lists them")
    ports = sorted(DEFAULT_PORTS) if rule.port is None else [rule.port]
    return [(rule.name, port) for port in ports], ""


def session_egress(proxy: EgressProxy, session_id: str, allow: str = "", revoke: str = "") -> SessionEgress:
    """Apply ``allow`` / ``revoke`` (either may be empty), then the session's grants and refusals."""
    grants = proxy.grants
    error = ""
    if allow.strip():
        keys, error = targets(allow)
        for host, port in keys:
            ruling = proxy.rules.decide(host, port)
            if ruling.verdict is Decision.DENY:
                error = f"{ruling.reason}: a grant never overrides a deny rule (remove it from {DENY_KEY})"
                break
        else:
            for host, port in keys:
                if proxy.rules.decide(host, port).verdict is Decision.UNLISTED:
                    grants.remember(session_id, host, port)
    if revoke.strip():
        keys, error = targets(revoke)
        if keys and not [key for key in keys if grants.revoke(session_id, *key)]:
            error = f"{revoke.strip()} was not granted for this session"
    budget = proxy.budgets.get(session_id)
    refused = [(f"{host}:{port}", why) for (host, port), why in (budget.refused.items() if budget else ())
               if not grants.granted(session_id, host, port)]
    return SessionEgress(sorted(f"{h}:{p}" for h, p in grants.of(session_id)), refused, error)
