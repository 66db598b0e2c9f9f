"""What the sandbox's egress proxy reports of each request: the tools service writes these records in
a bash call's result (``data.egress``), the loop's trace reads them back (services/loop/tracing/egress.py).
Plain data and pure functions only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class EgressRecord:
    """One request through the proxy, as the trace shows it."""

    host: str
    port: int
    method: str
    verdict: str
    """"allowed", "denied" (a deny rule, or an unlisted host nobody granted) or "refused" (the
    address policy, bad framing, a limit): services/kernel/netrules.Decision's values."""
    rule: str = ""
    reason: str = ""
    bytes_up: int = 0
    bytes_down: int = 0
    started: float = 0.0
    """Wall-clock seconds when the connection came (the trace's span start)."""
    duration_ms: float = 0.0
    granted: str = ""
    """"once" or "session" when the user's grant let an unlisted host through."""
    count: int = 1
    """Requests this record stands for (past REPORT_RECORDS, alike ones are summed into one)."""

    @property
    def allowed(self) -> bool:
        return self.verdict == "allowed"

    @property
    def name(self) -> str:
        """``CONNECT pypi.org:443``, ``GET web.test:8080`` (the trace's span name)."""
        target = f"{self.host}:{self.port}" if self.host else "(no request)"
        return f"{self.method or 'egress'} {target}"



# A command's report lists this many requests one by one; the rest are summed per host, port, method
# and verdict (a trace line keeps at most 50 list items: services/loop/tracing/writer.py).
REPORT_RECORDS = 40


def summed(records: list[EgressRecord]) -> list[EgressRecord]:
    """``records`` past the first REPORT_RECORDS folded into one record per (host, port, method,
    verdict, rule): counts and bytes added, the first start, the durations summed."""
    head, rest = records[:REPORT_RECORDS], records[REPORT_RECORDS:]
    folded: dict[tuple[str, int, str, str, str], EgressRecord] = {}
    for r in rest:
        key = (r.host, r.port, r.method, r.verdict, r.rule)
        into = folded.get(key)
        if into is None:
            folded[key] = EgressRecord(r.host, r.port, r.method, r.verdict, r.rule, r.reason, r.bytes_up,
                                       r.bytes_down, r.started, r.duration_ms, r.granted, r.count)
            continue
        into.count += r.count
        into.bytes_up += r.bytes_up
        into.bytes_down += r.bytes_down
        into.duration_ms += r.duration_ms
    return head + list(folded.values())




def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def records_from(data: Any) -> list[EgressRecord]:
    """The records of a tool result's ``data`` as written (none when it has no ``egress`` list)."""
    raw = data.get("egress") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return []
    return [EgressRecord(str(r.get("host", "")), _int(r.get("port")), str(r.get("method", "")),
                         str(r.get("verdict", "")), str(r.get("rule", "")), str(r.get("reason", "")),
                         _int(r.get("bytes_up")), _int(r.get("bytes_down")), _float(r.get("started")),
                         _float(r.get("duration_ms")), str(r.get("granted", "")), max(_int(r.get("count")), 1))
            for r in raw if isinstance(r, dict)]
