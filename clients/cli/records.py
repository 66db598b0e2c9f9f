"""The client's view classes are records (:mod:`services.kernel.records`): frozen value classes
that cost nothing to define."""

from services.kernel.records import RecordField, fields_of, record

__all__ = ["RecordField", "fields_of", "record"]
