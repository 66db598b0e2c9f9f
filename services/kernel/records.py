"""Frozen value classes that cost nothing to define: the client's views and what its start imports.

``@dataclass(frozen=True)`` writes and compiles six methods for each class it makes (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``), about 0.4 ms a class
on 2 cores. The client's views are about 60 such classes, imported by every ``ai-coding run``
before its turn is sent: ~20 ms of a warm run went to compiling them (bench/startup.py); the
value classes of the kernel modules and client modules a warm run imports before it sends its
turn (endpoints, config ranges, trust items, the run's options) were ~5 ms more.
:func:`record` makes the same classes with the same behaviour (positional or keyword arguments,
defaults and ``field(default_factory=..., repr=False, compare=False)``, frozen, compared and
hashed by their fields, the same ``repr``) from methods every record shares, so nothing is
compiled; :func:`mutable_record` does the same for a plain ``@dataclass`` (attributes can be set,
not hashable). Type checkers read it as a dataclass (``dataclass_transform``); :func:`fields_of` lists
a record's fields where ``dataclasses.fields`` would. A record is not a dataclass to
``dataclasses.is_dataclass``, ``fields``, ``replace`` or ``asdict``: a class that goes through
those (a config section, a tool's arguments) stays a dataclass.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, dataclass_transform

T = TypeVar("T")
_MISSING: Any = dataclasses.MISSING


class RecordField(NamedTuple):
    """One field of a record, in declaration order."""

    name: str
    default: Any = _MISSING
    default_factory: Callable[[], Any] | Any = _MISSING
    repr: bool = True
    compare: bool = True


def fields_of(cls_or_record: object) -> tuple[RecordField, ...]:
    """The fields of a record class or instance."""
    fields: tuple[RecordField, ...] = getattr(cls_or_record, "__record_fields__")  # noqa: B009
    return fields


def _init(self: object, *args: object, **kwargs: object) -> None:
    cls = type(self)
    fields: tuple[RecordField, ...] = cls.__record_fields__  # type: ignore[attr-defined]
    if len(args) > len(fields):
        raise TypeError(f"{cls.__name__}() takes {len(fields)} positional arguments but {len(args)} were given")
    for i, f in enumerate(fields):
        if i < len(args):
            if f.name in kwargs:
                raise TypeError(f"{cls.__name__}() got multiple values for argument '{f.name}'")
            value = args[i]
        elif f.name in kwargs:
            value = kwargs.pop(f.name)
        elif f.default is not _MISSING:
            value = f.default
        elif f.default_factory is not _MISSING:
            value = f.default_factory()
        else:
            raise TypeError(f"{cls.__name__}() missing required argument: '{f.name}'")
        object.__setattr__(self, f.name, value)
    if kwargs:
        raise TypeError(f"{cls.__name__}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _compared(self: object) -> tuple[object, ...]:
    return tuple(getattr(self, f.name) for f in fields_of(self) if f.compare)


def _eq(self: object, other: object) -> object:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: object) -> int:
    return hash(_compared(self))


def _repr(self: object) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields_of(self) if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _frozen(self: object, name: str, *value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field '{name}'")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen value class of its annotated fields (see the module docstring)."""
    return _make(cls, frozen=True)


@dataclass_transform(field_specifiers=(dataclasses.field,))
def mutable_record(cls: type[T]) -> type[T]:
    """Make ``cls`` a value class of its annotated fields whose attributes can be set, as
    ``@dataclass`` does: compared by its fields and, being mutable, not hashable."""
    return _make(cls, frozen=False)


def _make(cls: type[T], frozen: bool) -> type[T]:
    fields: dict[str, RecordField] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update({f.name: f for f in getattr(base, "__record_fields__", ())})
    for name, annotation in inspect.get_annotations(cls).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        given = cls.__dict__.get(name, _MISSING)
        if isinstance(given, dataclasses.Field):
            fields[name] = RecordField(name, given.default, given.default_factory, bool(given.repr),
                                       bool(given.compare))
            if given.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, given.default)
        else:
            fields[name] = RecordField(name, given)
    ordered = tuple(fields.values())
    seen_default = False
    for f in ordered:
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument '{f.name}' follows default argument in {cls.__name__}")
    methods: dict[str, object] = {"__record_fields__": ordered, "__init__": _init, "__repr__": _repr,
                                  "__eq__": _eq, "__match_args__": tuple(f.name for f in ordered)}
    if frozen:
        methods.update({"__hash__": _hash, "__setattr__": _frozen, "__delattr__": _frozen})
    else:
        methods["__hash__"] = None
    for name, method in methods.items():
        setattr(cls, name, method)
    return cls


__all__ = ["RecordField", "fields_of", "mutable_record", "record"]
