"""What the egress proxy allows: the user's domain lists, credential rules, the address policy.

All of it comes from the user's config as the tools service reads it (the user layer only: a
project file can never widen where commands connect). ``decide`` is pure; resolving the name
(``AddressPolicy.resolve``) happens after it, right before the connection, to the address the
proxy then connects to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from services.kernel.config import expand_vars
from services.kernel.errors import ConfigError
from services.kernel.netgrants import ALLOW_KEY
from services.kernel.netpolicy import AddressPolicy, parse_ip
from services.kernel.netrules import Decision, DomainRule, allow_line, decide, expand, parse_rule

DENY_KEY = "tools.sandbox.deny_domains"


@dataclass(frozen=True)
class Credential:
    """Headers added on the way out to requests for hosts one rule matches."""

    rule: DomainRule
    headers: Mapping[str, str]
    ca_file: str = ""
    """The CA that signs this host's certificate (a private index), besides the system's."""


@dataclass(frozen=True)
class Ruling:
    verdict: Decision
    rule: str
    reason: str
    hint: str = ""


@dataclass
class EgressRules:
    """The user's egress settings, parsed once."""

    allow: list[DomainRule] = field(default_factory=list)
    deny: list[DomainRule] = field(default_factory=list)
    credentials: list[Credential] = field(default_factory=list)
    policy: AddressPolicy = field(default_factory=AddressPolicy)

    def literals(self) -> frozenset[str]:
        return frozenset(r.name for r in self.allow if not r.wildcard and parse_ip(r.name) is not None)

    def decide(self, host: str, port: int) -> Ruling:
        """Deny wins, then allow, else the request is unlisted (refused unless the user grants it; the
        hint is the line to add)."""
        decision, rule = decide(host, port, self.allow, self.deny)
        if decision is Decision.DENY:
            return Ruling(Decision.DENY, rule, f"{host}:{port} is denied by `{rule}` in {DENY_KEY}",
                          f"Remove `{rule}` from {DENY_KEY} in your user config to allow it.")
        if decision is Decision.ALLOW:
            return Ruling(Decision.ALLOW, rule, f"allowed by `{rule}`")
        line = allow_line(host, port)
        return Ruling(Decision.UNLISTED, "", f"{host}:{port} is not in {ALLOW_KEY}",
                      f"To allow it, add `- {line}` under {ALLOW_KEY} in your user config "
                      f"(~/.config/ai-coding/config.yaml).")

    def credential(self, host: str, port: int) -> Credential | None:
        """The first credential rule matching ``host:port``."""
        return next((c for c in self.credentials if c.rule.matches(host, port)), None)

    def inject(self, host: str, port: int) -> dict[str, str]:
        """The headers credential rules add for ``host:port``."""
        cred = self.credential(host, port)
        return dict(cred.headers) if cred else {}

    def has_credential(self, host: str, port: int) -> bool:
        return any(c.rule.matches(host, port) for c in self.credentials)


def parse_credentials(raw: Sequence[Mapping[str, object]], environ: Mapping[str, str]) -> list[Credential]:
    """``tools.sandbox.credentials``: ``[{host: "index.corp", headers: {Authorization: "Bearer ${T}"}}]``.
    ``${VAR}`` is read from the tools service's environment (never the sandbox's)."""
    out: list[Credential] = []
    for i, item in enumerate(raw):
        host, headers = item.get("host"), item.get("headers")
        if not isinstance(host, str) or not isinstance(headers, Mapping) or not headers:
            raise ConfigError(f"config key `tools.sandbox.credentials[{i}]` needs `host` and `headers`",
                              hint="Write {host: index.corp, headers: {Authorization: \"Bearer ${TOKEN}\"}}.")
        try:
            rule = parse_rule(host)
        except ValueError as exc:
            raise ConfigError(f"config key `tools.sandbox.credentials[{i}].host`: {exc}") from None
        ca_file = str(item.get("ca_file") or "")
        out.append(Credential(rule, {str(k): expand_vars(str(v), environ) for k, v in headers.items()},
                              str(Path(ca_file).expanduser()) if ca_file else ""))
    return out


def build_rules(allow: Sequence[str], deny: Sequence[str], credentials: Sequence[Mapping[str, object]],
                policy: AddressPolicy, environ: Mapping[str, str]) -> EgressRules:
    """The parsed settings; a bad entry is a ConfigError naming its key."""
    try:
        allow_rules, deny_rules = expand(allow), expand(deny)
    except ValueError as exc:
        raise ConfigError(f"config key `{ALLOW_KEY}` / `{DENY_KEY}`: {exc}",
                          hint="Use names, *.name wildcards, name:port, or a preset (pypi, npm, crates, "
                               "github, debian, go).") from None
    return EgressRules(allow_rules, deny_rules, parse_credentials(credentials, environ), policy)
