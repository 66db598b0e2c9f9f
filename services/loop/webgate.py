"""The permission gate for webfetch, and the user's ``net`` settings as the loop reads them.

webfetch connects on the model's say, so ``--auto-approve`` never approves it: a terminal asks
(an "always" answer is remembered for the session like any other), and a run with nobody to
ask fetches only the hosts of the user's ``net.webfetch_allow_domains``. Whatever the gate
says, every hop still goes through the address policy (services/kernel/netpolicy.py): an
approval lets the fetch start, it never lets it reach a loopback, private or metadata address.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from services.kernel.config import from_mapping
from services.kernel.errors import ConfigError
from services.kernel.netpolicy import NetConfig
from services.kernel.netrules import Decision, decide, expand
from services.loop.policy.permissions import Level, Verdict
from services.loop.tools.webfetch import check_url, host_port

ALLOW_KEY = "net.webfetch_allow_domains"


def user_net(config_data: Mapping[str, Any], source_of: Callable[[str], str]) -> NetConfig:
    """The ``net`` section, from the user's own config only: a key any project layer set is
    ignored (pins and allow-lists decide where the services connect), and a bad section is empty."""
    raw = config_data.get("net")
    if not isinstance(raw, Mapping):
        return NetConfig()
    mine = {k: v for k, v in raw.items() if not source_of(f"net.{k}").startswith("project:")}
    try:
        return from_mapping(NetConfig, mine, "net")
    except ConfigError:
        return NetConfig()


def webfetch_gate(args: Mapping[str, Any], grants: Collection[str], mode: str, net: NetConfig,
                  interactive: bool = True) -> Verdict:
    """ALLOW for a host on the user's allow-list, an "always" grant; else WARN (asks), auto mode
    included, or DENY in auto mode with nobody to ask (a client answering for the user must not
    turn auto mode into an approval). Never raises."""
    try:
        url = check_url(str(args.get("url", "")))
        host, port = host_port(url)
        decision, rule = decide(host, port, expand(net.webfetch_allow_domains), [])
    except ValueError:
        return Verdict(Level.WARN, "fetches a URL", "webfetch")
    if decision is Decision.ALLOW:
        return Verdict(Level.ALLOW, f"{host} is in {ALLOW_KEY} ({rule})")
    if "webfetch" in grants:
        return Verdict(Level.ALLOW, "allowed always this session", "webfetch")
    why = "fetches a URL"
    if mode == "auto" and not interactive:
        return Verdict(Level.DENY, f"auto-approve never approves webfetch and nobody can be asked; add {host} "
                                   f"to {ALLOW_KEY} in your user config to fetch it without asking")
    if mode == "auto":
        why += " (auto-approve never approves webfetch"
        why += f"; add {host} to {ALLOW_KEY} in your user config to fetch it without asking)"
    return Verdict(Level.WARN, why, "webfetch")
