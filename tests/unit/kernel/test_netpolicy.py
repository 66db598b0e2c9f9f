"""The one address policy (services/kernel/netpolicy.py) and the domain rules, with a resolver stub."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest

from services.kernel.netpolicy import AddressPolicy, NetRefused, Refusal, address_refusal, parse_pins
from services.kernel.netrules import Decision, decide, expand, parse_rule


def stub(table: dict[str, list[str]]) -> tuple[AddressPolicy, list[str]]:
    asked: list[str] = []

    def resolve(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        if host not in table:
            raise OSError("no such name")
        return table[host]

    return AddressPolicy(resolver=resolve, own=frozenset({ipaddress.ip_address("203.0.113.9")})), asked


@pytest.mark.parametrize(("address", "why"), [
    ("127.0.0.1", Refusal.LOOPBACK), ("127.9.9.9", Refusal.LOOPBACK), ("::1", Refusal.LOOPBACK),
    ("0.0.0.0", Refusal.UNSPECIFIED), ("::", Refusal.UNSPECIFIED), ("10.0.0.5", Refusal.PRIVATE),
    ("172.16.3.4", Refusal.PRIVATE), ("192.168.1.1", Refusal.PRIVATE), ("fd00::1", Refusal.PRIVATE),
    ("100.64.0.1", Refusal.PRIVATE), ("169.254.169.254", Refusal.LINK_LOCAL), ("fe80::1", Refusal.LINK_LOCAL),
    ("224.0.0.1", Refusal.MULTICAST), ("ff02::1", Refusal.MULTICAST), ("::ffff:127.0.0.1", Refusal.LOOPBACK),
    ("::ffff:169.254.169.254", Refusal.LINK_LOCAL), ("255.255.255.255", Refusal.RESERVED),
])
def test_every_non_public_address_class_is_refused(address: str, why: Refusal) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is why


def test_a_public_address_passes_and_the_hosts_own_address_does_not() -> None:
    assert address_refusal(ipaddress.ip_address("93.184.216.34")) is None
    own = {ipaddress.ip_address("93.184.216.34")}
    assert address_refusal(ipaddress.ip_address("93.184.216.34"), own) is Refusal.HOST_ADDRESS


@pytest.mark.parametrize("answer", [["127.0.0.1"], ["169.254.169.254"], ["10.1.2.3"], ["203.0.113.9"],
                                    ["93.184.216.34", "127.0.0.1"]])
def test_a_name_resolving_anywhere_non_public_is_refused_whatever_its_other_answers(answer: list[str]) -> None:
    policy, _ = stub({"docs.example": answer})
    with pytest.raises(NetRefused) as err:
        policy.resolve("docs.example", 443)
    assert "docs.example" in str(err.value) and "pinned_hosts" in str(err.value)


def test_the_checked_address_is_the_one_to_connect_to() -> None:
    policy, asked = stub({"docs.example": ["93.184.216.34"]})
    target = policy.resolve("Docs.Example.", 443)
    assert (target.host, target.address, target.port, target.pinned) == ("docs.example", "93.184.216.34", 443, False)
    assert asked == ["docs.example"]


def test_a_pin_reaches_its_private_address_without_a_lookup_and_only_on_its_port() -> None:
    policy, asked = stub({})
    policy.pins = parse_pins({"registry.corp": "10.0.0.5:443"})
    target = policy.resolve("registry.corp", 443)
    assert (target.address, target.pinned) == ("10.0.0.5", True) and asked == []
    with pytest.raises(NetRefused) as err:
        policy.resolve("registry.corp", 8080)
    assert err.value.code is Refusal.PORT
    with pytest.raises(NetRefused):  # nothing else private is allowed by that pin
        stub({"other.corp": ["10.0.0.5"]})[0].resolve("other.corp", 443)


def test_ip_literals_are_refused_unless_listed_and_then_still_checked() -> None:
    policy, asked = stub({})
    for literal in ("93.184.216.34", "127.0.0.1", "[::1]"):
        with pytest.raises(NetRefused) as err:
            policy.resolve(literal, 80)
        assert err.value.code is Refusal.IP_LITERAL
    assert policy.resolve("93.184.216.34", 80, {"93.184.216.34"}).address == "93.184.216.34"
    with pytest.raises(NetRefused) as err:
        policy.resolve("127.0.0.1", 80, {"127.0.0.1"})
    assert err.value.code is Refusal.LOOPBACK
    assert asked == []


def test_an_unresolvable_name_is_refused_with_the_cause() -> None:
    with pytest.raises(NetRefused) as err:
        stub({})[0].resolve("nope.example", 443)
    assert err.value.code is Refusal.UNRESOLVED and "no such name" in str(err.value)


@pytest.mark.parametrize("bad", [{"x": "not-an-ip"}, {"x": "10.0.0.5:0"}, {"x": "10.0.0.5:http"}])
def test_a_bad_pin_is_refused_naming_the_entry(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"net\.pinned_hosts\.x"):
        parse_pins(bad)


def test_domain_rules_wildcards_ports_presets_and_deny_wins() -> None:
    allow = expand(["pypi", "*.corp.example", "git.example:8443", "exact.example"])
    deny = expand(["bad.corp.example"])
    assert decide("pypi.org", 443, allow, deny) == (Decision.ALLOW, "pypi.org")
    assert decide("files.pythonhosted.org", 80, allow, deny)[0] is Decision.ALLOW
    assert decide("a.corp.example", 443, allow, deny) == (Decision.ALLOW, "*.corp.example")
    assert decide("corp.example", 443, allow, deny)[0] is Decision.UNLISTED  # a wildcard is below, not at
    assert decide("bad.corp.example", 443, allow, deny) == (Decision.DENY, "bad.corp.example")
    assert decide("git.example", 8443, allow, deny)[0] is Decision.ALLOW
    assert decide("git.example", 443, allow, deny)[0] is Decision.UNLISTED
    assert decide("exact.example", 22, allow, deny)[0] is Decision.UNLISTED  # no port: 80 and 443 only
    assert decide("evil-exact.example", 443, allow, deny)[0] is Decision.UNLISTED


@pytest.mark.parametrize("bad", ["*", "a.*.example", "x.example:99999", "http://x", ""])
def test_a_malformed_rule_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(bad)
