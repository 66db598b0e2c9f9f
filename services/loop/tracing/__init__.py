"""Reading the turn traces services/loop/tracing/writer.py writes, and what is built from them.

``store`` finds sessions and their files (age = the trace's own last timestamp),
``report`` turns a turn's lines into typed facts (steps, tool calls, compaction
layers, degradations, refusals, subagent scopes), and the outputs are built on
those: ``overview`` (one row per session), ``spans`` (the span tree with
deterministic ids), ``otlp_json`` and ``html`` (file exports) and ``live`` (the
loop's OTLP/HTTP exporter, the only module that imports OpenTelemetry).

Pure file reading: the ``ai-coding trace`` commands use it without any service
running, and nothing here (``live`` aside) imports more than the standard library.
"""
