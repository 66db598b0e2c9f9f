"""The egress proxy built from the user's config (a bad setting disables the proxy, not the service)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from services.kernel.errors import ConfigError
from services.kernel.netpolicy import NetConfig, policy_from_config
from services.tools.config import SandboxConfig, network_mode
from services.tools.egress.ca import Authority
from services.tools.egress.proxy import EgressProxy
from services.tools.egress.rules import build_rules


def make_egress(sandbox: SandboxConfig, net: NetConfig, environ: Mapping[str, str], ca_dir: Path | None = None
                ) -> tuple[EgressProxy | None, str]:
    """(the proxy, "") or (None, why it cannot run: commands of a proxy sandbox are refused with it).
    With a credential rule and ``ca_dir``, the per-installation CA is made there (HTTPS injection)."""
    try:
        policy = policy_from_config(net.pinned_hosts, environ)
        rules = build_rules(sandbox.allow_domains, sandbox.deny_domains, sandbox.credentials, policy, environ)
    except ConfigError as exc:
        return None, f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")
    except ValueError as exc:
        return None, str(exc)
    authority = None
    if rules.credentials and ca_dir is not None and network_mode(sandbox.network) == "proxy":
        try:
            authority = Authority(ca_dir)
        except ImportError:
            return None, "HTTPS credential injection needs the `cryptography` package (pip install cryptography)"
        except OSError as exc:
            return None, f"cannot create the egress CA in {ca_dir}: {exc.strerror or exc}"
    return EgressProxy(rules, authority=authority), ""
