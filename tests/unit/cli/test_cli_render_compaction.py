"""How compaction shows in the terminal: per-layer stats and how full the window is."""

from __future__ import annotations

from clients.cli import views
from clients.cli.render import layer_stats, status_line, window_fill


def test_compaction_ended_lists_only_the_layers_that_did_something() -> None:
    ended = views.CompactionEnded(layers=(views.LayerStat("L3", skipped=2), views.LayerStat("L2", rewritten=12),
                                          views.LayerStat("L4", removed=40)), estimated_before=30_000,
                                  estimated_after=9_000)
    assert layer_stats(ended) == "L2 12 rewritten · L4 -40 msgs"


def test_the_status_line_ends_with_used_threshold_and_window_when_the_loop_said_them() -> None:
    context = views.ContextAssembled(estimated_tokens=12_300, ceiling_tokens=25_600, window_tokens=32_000)
    assert window_fill(context) == "ctx 12.3k/25.6k/32.0k"
    finished = views.TurnFinished(status=views.TurnStatus.COMPLETED)
    assert status_line(finished, context).endswith(" · ctx 12.3k/25.6k/32.0k")
    assert "ctx" not in status_line(finished, views.ContextAssembled()) and "ctx" not in status_line(finished)
