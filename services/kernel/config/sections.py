"""Typed views: a dataclass built from a section's mapping, each value checked for type and range."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from services.kernel.config_ranges import range_problem
from services.kernel.errors import ConfigError

T = TypeVar("T")


def _type_ok(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, Mapping)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s resolved field types: evaluated once per class (a model entry is read at every
    OpenSession; evaluating the string annotations each time was ~1.5 ms of the loop's CPU)."""
    return typing.get_type_hints(cls)


def from_mapping(cls: type[T], raw: Mapping[str, Any], where: str = "", refused: list[str] | None = None) -> T:
    """Build dataclass ``cls`` from ``raw``; nested dataclasses are built too.

    A value of the wrong type, or a number out of its range (``config_ranges``), is a
    :class:`ConfigError` naming the key; with ``refused`` it is left out instead (the field
    keeps its default) and the sentence is appended there, so a service starts without it.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls} is not a dataclass")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            continue
        value = raw[f.name]
        tp = hints[f.name]
        key = f"{where}.{f.name}" if where else f.name
        try:
            if dataclasses.is_dataclass(tp) and isinstance(tp, type):
                if value is None:
                    continue
                if not isinstance(value, Mapping):
                    raise ConfigError(f"config key `{key}` must be a mapping, got {type(value).__name__}")
                kwargs[f.name] = from_mapping(tp, value, key, refused)
                continue
            kwargs[f.name] = _checked_value(key, value, tp)
        except ConfigError as err:
            if refused is None:
                raise
            refused.append(f"{err.message}; it is ignored (the default applies)")
    return cls(**kwargs)


def _checked_value(key: str, value: Any, tp: Any) -> Any:
    if not _type_ok(value, tp):
        raise ConfigError(
            f"config key `{key}` has the wrong type: expected {getattr(tp, '__name__', tp)}, "
            f"got {type(value).__name__} ({value!r:.60})",
            hint="Fix the value in the file /config names as its source.",
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = range_problem(key, value)
        if problem:
            raise ConfigError(problem, hint="Fix the value in the file /config names as its source.")
    if typing.get_origin(tp) is tuple and isinstance(value, list):
        value = tuple(value)
    return value

