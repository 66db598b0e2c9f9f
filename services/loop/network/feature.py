"""``/network``: the session's standing network grants for the sandbox's egress proxy, and the hosts its
commands were refused lately (a background job's included: it cannot ask), with the line that allows
each one. ``/network allow HOST[:PORT]`` grants it for the session, ``/network revoke ...`` takes it
back. The tools service keeps the grants (across its restarts); a slash command is typed by the user,
never called by the model, and a project's config has no way to grant.
"""

from __future__ import annotations

import json

from services.kernel.netgrants import ALLOW_KEY, SessionGrants
from services.loop.core.feature import Command, Feature, FeatureHost

USAGE = "usage: /network [allow HOST[:PORT] | revoke HOST[:PORT]]"


def network_lines(found: SessionGrants) -> list[str]:
    """What ``/network`` prints."""
    lines = [] if found.proxy else [
        "the sandbox's network is not `proxy` (tools.sandbox.network): grants do nothing until it is"]
    lines.append("allowed for this session: " + (", ".join(found.granted) if found.granted else "none"))
    if found.refused:
        lines.append("refused lately (not in " + ALLOW_KEY + "):")
        for refusal in found.refused:
            target = refusal.target.removesuffix(":443")
            where = "a background job" if refusal.background else "a command"
            times = f" ×{refusal.count}" if refusal.count > 1 else ""
            lines.append(f"  {refusal.target:<32} {where}{times} · /network allow {target}")
    return lines


class NetworkFeature(Feature):
    """``/network`` against the tools service's grants of this session."""

    name = "network"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host

    def commands(self) -> dict[str, Command]:
        return {"network": self.network}

    async def network(self, args: str) -> tuple[str, str]:
        verb, _, target = args.strip().partition(" ")
        verb, target = verb.lower(), target.strip()
        if verb not in ("", "allow", "revoke") or (verb and not target) or " " in target:
            return USAGE, json.dumps({"error": "usage"})
        try:
            found = await self.host.runner.session_egress(self.host.session.id, target if verb == "allow" else "",
                                                          target if verb == "revoke" else "")
        except Exception as exc:  # the tools service is down: one line, nothing changed
            return (f"the network grants could not be read: the tools service did not answer ({exc})",
                    json.dumps({"error": "tools_unavailable"}))
        data = {"granted": list(found.granted), "refused": [r.target for r in found.refused], "proxy": found.proxy}
        if found.error:
            return f"not changed: {found.error}", json.dumps({**data, "error": "refused"})
        head = {"allow": f"allowed {target} for this session", "revoke": f"revoked {target}"}.get(verb)
        return "\n".join(([head] if head else []) + network_lines(found)), json.dumps(data)
