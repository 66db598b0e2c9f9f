"""Domain allow/deny rules: ``example.com``, ``*.example.com``, either with ``:port``; presets.

A rule without a port matches ports 80 and 443 only (what package managers and git use); a
rule with a port matches that port only. ``*.example.com`` matches every name below
example.com, not example.com itself. A preset name (``pypi``, ``npm``, ...) stands for its
list of rules. Deny wins: a name both lists match is denied. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_PORTS = frozenset({80, 443})
PRESETS: dict[str, tuple[str, ...]] = {
    "pypi": ("pypi.org", "files.pythonhosted.org"),
    "npm": ("registry.npmjs.org", "registry.yarnpkg.com"),
    "crates": ("crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"),
    "github": ("github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
               "raw.githubusercontent.com", "*.githubusercontent.com"),
    "debian": ("deb.debian.org", "security.debian.org"),
    "go": ("proxy.golang.org", "sum.golang.org"),
}


class Decision(StrEnum):
    """What is decided about one connection: by the domain lists (``decide``) and, in the sandbox's
    egress proxy, by the address policy and the user's grants. The value is what trace records show."""

    ALLOW = "allowed"
    DENY = "denied"
    """A deny rule matched, or (in a record) an unlisted host nobody granted."""
    UNLISTED = "unlisted"
    """Neither list names the host: refused unless the user grants it."""
    REFUSED = "refused"
    """Not forwarded whatever the lists say: bad framing, an address the policy refuses, a limit."""


@dataclass(frozen=True)
class DomainRule:
    """One parsed rule; ``text`` is what the user wrote (shown in trace records)."""

    text: str
    name: str
    wildcard: bool
    port: int | None

    def matches(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        if self.port is None:
            if port not in DEFAULT_PORTS:
                return False
        elif port != self.port:
            return False
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


def parse_rule(text: str) -> DomainRule:
    """One rule, or ValueError saying what is wrong with it."""
    raw = text.strip().lower()
    name, port = raw, None
    if raw.count(":") == 1:
        name, _, port_text = raw.partition(":")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"domain rule {text!r} has a bad port")
        port = int(port_text)
    wildcard = name.startswith("*.")
    if wildcard:
        name = name[2:]
    name = name.rstrip(".")
    if not name or "*" in name or "/" in name or " " in name:
        raise ValueError(f"domain rule {text!r} is not a name, a *.name wildcard, or either with :port")
    return DomainRule(text.strip(), name, wildcard, port)


def expand(entries: Iterable[str]) -> list[DomainRule]:
    """Rules for a config list (preset names expanded); ValueError on a bad entry."""
    rules: list[DomainRule] = []
    for entry in entries:
        for text in PRESETS.get(entry.strip().lower(), (entry,)):
            rules.append(parse_rule(text))
    return rules


def decide(host: str, port: int, allow: Sequence[DomainRule], deny: Sequence[DomainRule]
           ) -> tuple[Decision, str]:
    """(decision, the rule text that decided, "" when none did). Deny wins."""
    for rule in deny:
        if rule.matches(host, port):
            return Decision.DENY, rule.text
    for rule in allow:
        if rule.matches(host, port):
            return Decision.ALLOW, rule.text
    return Decision.UNLISTED, ""


def allow_line(host: str, port: int) -> str:
    """The config entry that would allow ``host:port``."""
    return host if port in DEFAULT_PORTS else f"{host}:{port}"
