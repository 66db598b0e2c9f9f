"""Shipped list prices (``prices.json``) for the common models: a ``models:`` entry without any
``price_*`` key of its own gets its model's row; an entry that sets one keeps all of its own."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path

from services.loop.model.settings import ModelSettings

PRICES_FILE = Path(__file__).with_name("prices.json")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None


@functools.cache
def shipped_prices() -> dict[str, Price]:
    """The shipped table, model id -> price (rows starting with ``_`` are notes)."""
    raw = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    return {name: Price(float(row["input"]), float(row["output"]),
                        None if row.get("cached_input") is None else float(row["cached_input"]))
            for name, row in raw.items() if not name.startswith("_")}


def with_shipped_prices(settings: ModelSettings, table: dict[str, Price] | None = None) -> ModelSettings:
    """``settings`` with its model's shipped price when the entry set no price of its own."""
    if any(p is not None for p in (settings.price_input_per_mtok, settings.price_output_per_mtok,
                                   settings.price_cached_input_per_mtok)):
        return settings
    price = (shipped_prices() if table is None else table).get(settings.model)
    if price is None:
        return settings
    return replace(settings, price_input_per_mtok=price.input, price_output_per_mtok=price.output,
                   price_cached_input_per_mtok=price.cached_input)
