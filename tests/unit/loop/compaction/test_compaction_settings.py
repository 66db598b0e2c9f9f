"""The budget a model gets from the settings: threshold as fraction or tokens, the output reserve."""

from __future__ import annotations

import pytest

from services.kernel.config import Config
from services.loop.compaction.settings import CompactionSettings, budget_for, compaction_settings
from services.loop.compaction.tokens import should_compact


def test_a_fractional_threshold_is_a_share_of_the_window_below_the_output_reserve() -> None:
    b = budget_for(CompactionSettings(threshold=0.8), "m", 100_000, 8000)
    assert (b.window, b.reserve, b.ceiling) == (100_000, 8000, 80_000)
    assert b.target == 40_000 and b.summary_delta == 2000


def test_an_absolute_threshold_is_tokens_and_never_above_the_window_minus_the_reserve() -> None:
    assert budget_for(CompactionSettings(threshold=50_000), "m", 100_000, 8000).ceiling == 50_000
    assert budget_for(CompactionSettings(threshold=99_000), "m", 100_000, 8000).ceiling == 92_000


def test_the_reserve_defaults_to_min_20000_and_max_output_and_stays_under_half_the_window() -> None:
    assert budget_for(CompactionSettings(), "m", 200_000, None).reserve == 20_000
    assert budget_for(CompactionSettings(), "m", 200_000, 4096).reserve == 4096
    assert budget_for(CompactionSettings(), "m", 32_000, None).reserve == 16_000


def test_per_model_overrides_win_over_the_global_settings() -> None:
    s = CompactionSettings(threshold=0.8, models={"small": {"threshold": 0.5, "output_reserve": 1000}})
    assert budget_for(s, "small", 10_000, None).ceiling == 5000
    assert budget_for(s, "other", 10_000, None).ceiling == 5000  # 0.8 * 10000 capped by 10000 - 5000


def test_the_summary_delta_is_two_percent_of_the_window_with_a_floor_of_1000() -> None:
    assert budget_for(CompactionSettings(), "m", 32_000, None).summary_delta == 1000
    assert budget_for(CompactionSettings(summary_delta_tokens=3), "m", 32_000, None).summary_delta == 3


def test_the_trigger_takes_the_larger_of_the_provider_figure_and_the_estimate() -> None:
    assert should_compact(observed_tokens=900, estimated_tokens=100, ceiling=900)
    assert should_compact(observed_tokens=0, estimated_tokens=901, ceiling=900)
    assert not should_compact(observed_tokens=899, estimated_tokens=899, ceiling=900)


@pytest.mark.parametrize("section, key", [({"threshold": 0}, "threshold"), ({"target_fraction": 1.5}, "target_fraction"),
                                          ({"keep_recent_tool_results": -1}, "keep_recent_tool_results"),
                                          ({"max_messages": 10}, "max_messages"),
                                          ({"models": {"x": {"ceiling": 3}}}, "models.x"),
                                          ({"threshold": "high"}, "threshold")])
def test_bad_settings_are_ignored_with_a_warning_naming_the_key(section: dict[str, object], key: str) -> None:
    config = Config(data={"compaction": section})
    settings = compaction_settings(config)  # the loop starts: a bad value never stops it
    assert any(f"compaction.{key}" in w and "ignored" in w for w in config.warnings), config.warnings
    defaults = CompactionSettings()
    assert (settings.threshold, settings.target_fraction, settings.keep_recent_tool_results, settings.max_messages,
            settings.models) == (defaults.threshold, defaults.target_fraction, defaults.keep_recent_tool_results,
                                 defaults.max_messages, {})
