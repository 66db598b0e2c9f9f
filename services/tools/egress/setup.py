"""The egress proxy built from the user's config (a bad setting disables the proxy, not the service)."""

from __future__ import annotations

from collections.abc import Mapping

from services.kernel.errors import ConfigError
from services.kernel.netpolicy import NetConfig, policy_from_config
from services.tools.config import SandboxConfig
from services.tools.egress.proxy import EgressProxy
from services.tools.egress.rules import build_rules


def make_egress(sandbox: SandboxConfig, net: NetConfig, environ: Mapping[str, str]) -> tuple[EgressProxy | None, str]:
    """(the proxy, "") or (None, why it cannot run: commands of a proxy sandbox are refused with it)."""
    try:
        policy = policy_from_config(net.pinned_hosts, environ)
        rules = build_rules(sandbox.allow_domains, sandbox.deny_domains, sandbox.credentials, policy, environ)
    except ConfigError as exc:
        return None, f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    except ValueError as exc:
        return None, str(exc)
    return EgressProxy(rules), ""
