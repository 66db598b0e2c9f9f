"""One address policy for everything that connects on the model's behalf.

webfetch (in the loop) and the sandbox's egress proxy (in the tools service) both ask
:meth:`AddressPolicy.resolve` for the address to connect to, before every connection and at
every redirect, and then connect to that address, never to the name again (a second lookup
could answer differently: DNS rebinding). A name is refused when ANY address it resolves to is:

- loopback (127.0.0.0/8, ::1), unspecified (0.0.0.0, ::), private (10/8, 172.16/12,
  192.168/16, fc00::/7, 100.64/10), link-local (169.254/16 with the cloud metadata address
  169.254.169.254, fe80::/10), multicast, reserved or broadcast;
- one of this host's own interface addresses (a public address of the host reaches its
  services as well as loopback does).

The one way to reach such an address is a pin the USER wrote (``net.pinned_hosts`` in the
user config; a project file can never set it): ``{registry.corp: "10.0.0.5:443"}`` makes
that name, and only it, connect to that address (and that port, when one is given) without
any lookup. IP literals are refused unless the caller's allow-list names them, and even then
the address checks apply.

``AI_CODING_TEST_HOSTS`` (a JSON file ``{"name": ["address", ...]}``) answers lookups for the
names it lists instead of the system resolver. It changes what a name resolves to, never what
is allowed: every address it gives is checked like a real answer (the tests use it to make an
allowed name resolve to 127.0.0.1, 169.254.169.254 or 10.x without any DNS).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
TEST_HOSTS_ENV = "AI_CODING_TEST_HOSTS"
CGNAT = ipaddress.ip_network("100.64.0.0/10")
METADATA = ipaddress.ip_address("169.254.169.254")


class Refusal(StrEnum):
    """Why an address or a name was refused (stable codes)."""

    LOOPBACK = "loopback"
    UNSPECIFIED = "unspecified"
    PRIVATE = "private"
    LINK_LOCAL = "link_local"
    MULTICAST = "multicast"
    RESERVED = "reserved"
    HOST_ADDRESS = "host_address"
    IP_LITERAL = "ip_literal"
    UNRESOLVED = "unresolved"
    PORT = "port"


class NetRefused(Exception):
    """A connection the policy does not allow: ``code`` is stable, the message names the host."""

    def __init__(self, code: Refusal, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Pin:
    """A user pin: ``host`` connects to ``address`` (on ``port`` only, when given)."""

    address: IPAddress
    port: int | None = None


@dataclass(frozen=True)
class Target:
    """Where to connect: the checked address, and the name it was checked for."""

    host: str
    address: str
    port: int
    pinned: bool = False


def address_refusal(ip: IPAddress, own: Collection[IPAddress] = ()) -> Refusal | None:
    """Why ``ip`` may not be connected to (None = a public address). Pure."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if ip.is_unspecified:
        return Refusal.UNSPECIFIED
    if ip.is_loopback:
        return Refusal.LOOPBACK
    if ip.is_link_local:
        return Refusal.LINK_LOCAL
    if ip.is_multicast:
        return Refusal.MULTICAST
    if ip.is_reserved:
        return Refusal.RESERVED
    if ip.is_private or (isinstance(ip, ipaddress.IPv4Address) and ip in CGNAT):
        return Refusal.PRIVATE
    if not ip.is_global:
        return Refusal.RESERVED
    if ip in own:
        return Refusal.HOST_ADDRESS
    return None


REFUSAL_WORDS = {
    Refusal.LOOPBACK: "a loopback address (this machine's own services)",
    Refusal.UNSPECIFIED: "the unspecified address (it reaches this machine)",
    Refusal.PRIVATE: "a private network address",
    Refusal.LINK_LOCAL: "a link-local address (169.254.169.254 is the cloud metadata service)",
    Refusal.MULTICAST: "a multicast address",
    Refusal.RESERVED: "a reserved, non-public address",
    Refusal.HOST_ADDRESS: "one of this host's own addresses",
}


def parse_ip(text: str) -> IPAddress | None:
    """``text`` as an IP address (brackets allowed), or None for a name."""
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def parse_pins(raw: Mapping[str, object]) -> dict[str, Pin]:
    """``net.pinned_hosts`` as pins; ValueError naming the bad entry."""
    pins: dict[str, Pin] = {}
    for name, value in raw.items():
        text = str(value).strip()
        port: int | None = None
        host_part = text
        if text.startswith("["):
            host_part, _, rest = text[1:].partition("]")
            if rest.startswith(":"):
                port = _port(rest[1:], name)
        elif text.count(":") == 1:
            host_part, _, port_text = text.partition(":")
            port = _port(port_text, name)
        ip = parse_ip(host_part)
        if ip is None:
            raise ValueError(f"net.pinned_hosts.{name} must be an IP address with an optional :port, not {text!r}")
        pins[str(name).lower().rstrip(".")] = Pin(ip, port)
    return pins


def _port(text: str, name: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"net.pinned_hosts.{name} has a bad port {text!r}")
    return int(text)


def host_addresses() -> frozenset[IPAddress]:
    """This host's own interface addresses (IPv4 from /proc/net/fib_trie, IPv6 from
    /proc/net/if_inet6); empty where those files do not exist."""
    found: set[IPAddress] = set()
    try:
        with open("/proc/net/fib_trie", encoding="ascii", errors="replace") as fh:
            previous = ""
            for line in fh:
                if "/32 host LOCAL" in line and previous:
                    ip = parse_ip(previous.split()[-1])
                    if ip is not None:
                        found.add(ip)
                previous = line
    except OSError:
        pass
    try:
        with open("/proc/net/if_inet6", encoding="ascii", errors="replace") as fh:
            for line in fh:
                raw = line.split()[0] if line.split() else ""
                if len(raw) == 32:
                    ip = parse_ip(":".join(raw[i:i + 4] for i in range(0, 32, 4)))
                    if ip is not None:
                        found.add(ip)
    except OSError:
        pass
    return frozenset(found)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (blocking)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def default_resolver(environ: Mapping[str, str] | None = None) -> Resolver:
    """The system resolver, or the test hosts file in front of it (see the module doc)."""
    path = (os.environ if environ is None else environ).get(TEST_HOSTS_ENV, "")
    if not path:
        return system_resolver

    def resolve(host: str, port: int) -> Sequence[str]:
        try:
            with open(path, encoding="utf-8") as fh:
                table = json.load(fh)
        except (OSError, ValueError):
            table = {}
        if isinstance(table, dict) and host in table:
            return [str(a) for a in table[host]]
        return system_resolver(host, port)

    return resolve


@dataclass
class AddressPolicy:
    """The checks above, with the user's pins, this host's addresses and a resolver."""

    pins: Mapping[str, Pin] = field(default_factory=dict)
    own: Collection[IPAddress] = field(default_factory=frozenset)
    resolver: Resolver = system_resolver

    def pinned(self, host: str, port: int) -> Target | None:
        """The pin for ``host:port``, or None when the user pinned nothing for it."""
        pin = self.pins.get(host.lower().rstrip("."))
        if pin is None:
            return None
        if pin.port is not None and pin.port != port:
            raise NetRefused(Refusal.PORT, f"{host} is pinned to port {pin.port} only (net.pinned_hosts), "
                                           f"not {port}")
        return Target(host, str(pin.address), port, pinned=True)

    def resolve(self, host: str, port: int, listed_literals: Collection[str] = ()) -> Target:
        """The checked address to connect to for ``host:port`` (blocking: it may resolve), or
        :class:`NetRefused`. ``listed_literals``: IP literals the caller's allow-list names."""
        host = host.strip("[]").lower().rstrip(".")
        pinned = self.pinned(host, port)
        if pinned is not None:
            return pinned
        literal = parse_ip(host)
        if literal is not None:
            if host not in listed_literals:
                raise NetRefused(Refusal.IP_LITERAL, f"{host} is an IP address; connections go to names, and an "
                                                     "address is allowed only when the allow-list names it")
            self._check(host, literal)
            return Target(host, str(literal), port)
        try:
            answers = list(self.resolver(host, port))
        except (OSError, UnicodeError) as exc:
            raise NetRefused(Refusal.UNRESOLVED, f"cannot resolve {host}: {exc}") from None
        addresses = [ip for ip in (parse_ip(a.split("%")[0]) for a in answers) if ip is not None]
        if not addresses:
            raise NetRefused(Refusal.UNRESOLVED, f"{host} resolves to no address")
        for ip in addresses:  # every answer: a name with one private answer is refused as a whole
            self._check(host, ip)
        return Target(host, str(addresses[0]), port)

    def _check(self, host: str, ip: IPAddress) -> None:
        why = address_refusal(ip, self.own)
        if why is not None:
            raise NetRefused(why, f"{host} resolves to {ip}, {REFUSAL_WORDS[why]}; refused before connecting. "
                                  f"If {host} is yours, pin it in your user config: "
                                  f"`net: {{pinned_hosts: {{{host}: \"{ip}\"}}}}`")


def policy_from_config(pinned_hosts: Mapping[str, object], environ: Mapping[str, str] | None = None
                       ) -> AddressPolicy:
    """The policy for ``net.pinned_hosts`` (user config) with this host's addresses."""
    return AddressPolicy(parse_pins(pinned_hosts), host_addresses(), default_resolver(environ))


@dataclass
class NetConfig:
    """``net``: what connects on the model's behalf (user config only; a project cannot set it)."""

    pinned_hosts: dict[str, str] = field(default_factory=dict)
    """Names the services may connect to although they resolve to a private, loopback or host
    address: ``{registry.corp: "10.0.0.5:443"}`` (address, optional port). Nothing else private is."""
    webfetch_allow_domains: list[str] = field(default_factory=list)
    """Domains webfetch may fetch without asking (exact names, ``*.`` wildcards, optional
    ``:port``). Auto-approve never approves webfetch; headless runs fetch only these."""
