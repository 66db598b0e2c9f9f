"""A sandboxed command's requests through the egress proxy, as the trace shows them.

The tools service reports each request of a ``tools.sandbox.network: proxy`` command in its
result (``data.egress``, services/kernel/egress_records.py: host, port, method, verdict, rule,
reason, bytes, start, duration; past 40, alike requests summed with a ``count``); under the tool
call's span each is one client span: ``CONNECT pypi.org:443``, ``GET web.test:8080``.
"""

from __future__ import annotations

from services.kernel.egress_records import EgressRecord


def egress_attributes(fact: EgressRecord) -> dict[str, str | int | float | bool | list[str]]:
    """A request's span attributes: the HTTP client conventions where they fit (``server.*``,
    ``http.request.method``), ours as ``ai_coding.egress.*``."""
    attrs: dict[str, str | int | float | bool | list[str]] = {
        "server.address": fact.host, "server.port": fact.port, "ai_coding.egress.verdict": fact.verdict,
        "ai_coding.egress.bytes_up": fact.bytes_up, "ai_coding.egress.bytes_down": fact.bytes_down}
    if fact.method:
        attrs["http.request.method"] = fact.method
    for key, value in (("rule", fact.rule), ("reason", fact.reason), ("granted", fact.granted)):
        if value:
            attrs[f"ai_coding.egress.{key}"] = value
    if fact.count > 1:
        attrs["ai_coding.egress.count"] = fact.count
    if not fact.allowed:
        attrs["error.type"] = f"egress_{fact.verdict or 'refused'}"
    return attrs


def egress_line(records: list[EgressRecord]) -> str:
    """One line for ``/trace``: ``3 requests, 2 refused (unlisted.test:443, 169.254.169.254:80)``."""
    total = sum(r.count for r in records)
    refused = [r for r in records if not r.allowed]
    line = f"{total} request{'s' if total != 1 else ''}"
    if refused:
        names = list(dict.fromkeys(f"{r.host}:{r.port}" for r in refused if r.host))
        line += f", {sum(r.count for r in refused)} refused" + (f" ({', '.join(names[:5])})" if names else "")
    return line
