"""A sandboxed command's request to reach a host the allow-list does not name, and the user's answer:
plain data the tools service (services/tools/egress/grants.py holds the connection) and the loop
(services/loop/tools/network_approval.py asks the user) both speak; protobuf stays in their convert
modules."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

ALLOW_KEY = "tools.sandbox.allow_domains"


class GrantScope(StrEnum):
    """What an answer grants."""

    DENY = "deny"
    ONCE = "once"
    """This host:port, for the rest of the command that asked."""
    SESSION = "session"
    """This host:port, for every command of the session until it closes."""


@dataclass(frozen=True)
class EgressAsk:
    """One held connection: may this command connect to ``host:port``?"""

    ask_id: str
    host: str
    port: int
    method: str
    """"CONNECT" for HTTPS, else the HTTP method."""
    reason: str
    """Why it is not allowed now (``... is not in tools.sandbox.allow_domains``)."""
    allow_line: str
    """The ``tools.sandbox.allow_domains`` entry that would allow it for good."""

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"

    def config_hint(self) -> str:
        return f"add `- {self.allow_line}` under {ALLOW_KEY} in your user config (~/.config/ai-coding/config.yaml)"


@dataclass(frozen=True)
class Grant:
    scope: GrantScope
    reason: str = ""
    """For a refusal: why (the user said no, nobody answered); it reaches the command's 403 and the trace."""


@dataclass(frozen=True)
class HostRefusal:
    """An unlisted host a command of the session was refused lately."""

    target: str
    reason: str
    count: int = 1
    background: bool = False
    """A background job's (nobody could be asked)."""


@dataclass(frozen=True)
class SessionGrants:
    """A session's standing grants ("host:port", sorted), its recent refusals, and why an allow or
    revoke was not taken."""

    granted: tuple[str, ...] = ()
    refused: tuple[HostRefusal, ...] = ()
    error: str = ""
    proxy: bool = False
    """The sandbox's network is ``proxy`` (else grants do nothing)."""
