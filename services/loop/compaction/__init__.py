"""Context compaction: pure functions over a copy of a session's history.

The record (the session's messages) is never changed; compaction decides a
``CompactionState`` from which every request's history is assembled
(``build_view``). See ``pipeline.compact`` for the layer order and
``state`` for the invariants.
"""
