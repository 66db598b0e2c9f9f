"""Rendering for ``ai-coding trace``: the overview table (rich) and its JSON form."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from clients.cli.textsafe import literal
from services.loop.tracing.overview import OverviewRow


def age_text(seconds: float) -> str:
    """``42s``, ``7m``, ``5h``, ``3d``."""
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def _optional(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def net_text(row: OverviewRow) -> str:
    """The sandboxed commands' requests through the egress proxy: ``12 (3 refused)``, ``-`` for none."""
    if not row.egress_requests:
        return "-"
    return f"{row.egress_requests}" + (f" ({row.egress_refused} refused)" if row.egress_refused else "")


def overview_table(rows: list[OverviewRow], total: OverviewRow) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for name in ("session", "turns", "files", "steps", "prompt", "completion", "cached", "hit", "cost", "net",
                 "age", "marks"):
        table.add_column(name, justify="left" if name in ("session", "marks") else "right",
                         no_wrap=name != "marks")
    for row in [*rows, total]:
        table.add_row(row.session[:12] if row is not total else "TOTAL", str(row.turns), str(row.files),
                      str(row.steps), str(row.prompt_tokens), str(row.completion_tokens),
                      _optional(row.cached_tokens, "d"), _optional(row.cache_hit_rate, ".0%"),
                      _optional(row.cost_usd, ".4f"), net_text(row), age_text(row.age_seconds),
                      literal("; ".join(row.marks)))
    return table


def print_overview(rows: list[OverviewRow], total: OverviewRow, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"sessions": [r.to_json() for r in rows], "total": total.to_json()}, ensure_ascii=False))
        return
    if not rows:
        print("no traced sessions (traces are written under .ai-coding/traces/ as turns run)")
        return
    # Piped output is not cut to 80 columns: a row per session stays one line for grep.
    Console(highlight=False, width=None if sys.stdout.isatty() else 200).print(overview_table(rows, total))
