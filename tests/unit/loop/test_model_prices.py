"""Shipped list prices fill a model entry that sets none of its own; the user's own always win."""

from __future__ import annotations

from services.loop.model.prices import Price, shipped_prices, with_shipped_prices
from services.loop.model.settings import ModelSettings


def test_the_shipped_table_prices_the_common_models() -> None:
    table = shipped_prices()
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5", "deepseek-chat", "qwen-plus"):
        assert table[model].input > 0 and table[model].output > 0
    assert all(not name.startswith("_") for name in table)


def test_an_entry_without_prices_gets_its_models_shipped_price() -> None:
    priced = with_shipped_prices(ModelSettings(model="m"), {"m": Price(1.0, 2.0, 0.5)})
    assert (priced.price_input_per_mtok, priced.price_output_per_mtok, priced.price_cached_input_per_mtok) == (
        1.0, 2.0, 0.5)


def test_an_entry_with_any_price_of_its_own_keeps_all_of_its_own() -> None:
    own = ModelSettings(model="m", price_input_per_mtok=9.0)
    assert with_shipped_prices(own, {"m": Price(1.0, 2.0, 0.5)}) == own


def test_an_unknown_model_stays_unpriced() -> None:
    assert with_shipped_prices(ModelSettings(model="fake-model")).price_input_per_mtok is None
