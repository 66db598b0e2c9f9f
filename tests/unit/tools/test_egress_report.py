"""A command's egress report: the first requests one by one, the rest summed per host, port, method,
verdict and rule (a trace line keeps at most 50 list items), nothing lost from the counts."""

from __future__ import annotations

from dataclasses import asdict

from services.kernel.egress_records import REPORT_RECORDS, EgressRecord, records_from, summed
from services.kernel.netrules import Decision


def test_past_the_limit_alike_requests_are_summed_and_every_byte_and_request_is_counted() -> None:
    records = [EgressRecord("a.test", 443, "CONNECT", Decision.ALLOW, "a.test", bytes_up=1, bytes_down=10,
                            started=100.0 + i, duration_ms=2.0) for i in range(REPORT_RECORDS + 30)]
    records += [EgressRecord("b.test", 80, "GET", Decision.DENY, bytes_up=5, started=200.0) for _ in range(7)]
    out = summed(records)
    assert len(out) == REPORT_RECORDS + 2
    assert all(r.count == 1 for r in out[:REPORT_RECORDS])
    folded_a, folded_b = out[REPORT_RECORDS:]
    assert (folded_a.host, folded_a.count, folded_a.bytes_down, folded_a.started) == ("a.test", 30, 300, 140.0)
    assert folded_a.duration_ms == 60.0 and (folded_b.host, folded_b.count, folded_b.bytes_up) == ("b.test", 7, 35)
    assert sum(r.count for r in out) == len(records)


def test_a_summed_record_reads_back_as_one_fact_standing_for_its_count() -> None:
    facts = records_from({"egress": [asdict(r) for r in summed(
        [EgressRecord("a.test", 80, "GET", Decision.REFUSED, reason="x")] * (REPORT_RECORDS + 3))]})
    assert sum(f.count for f in facts) == REPORT_RECORDS + 3 and not any(f.allowed for f in facts)
    assert records_from({"egress": "not a list"}) == [] and records_from(None) == []
