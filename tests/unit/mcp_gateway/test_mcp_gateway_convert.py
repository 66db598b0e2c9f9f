"""Proto mapping of progress, outcomes and statuses."""

from __future__ import annotations

import json

from ai_coding.v1 import mcp_gateway_pb2 as pb

from services.mcp_gateway.catalog import ToolEntry
from services.mcp_gateway.convert import entry_to_proto, outcome_to_proto, progress_to_proto, status_to_proto
from services.mcp_gateway.domain import CallOutcome, Progress, ServerView, State
from services.mcp_gateway.settings import Permissions, ServerSettings


def test_progress_becomes_a_progress_chunk_with_a_readable_text() -> None:
    with_message = progress_to_proto("c1", Progress(2, 5, "copying")).chunk
    assert (with_message.call_id, with_message.stream, with_message.text) == ("c1", "progress", "copying")
    assert (with_message.progress, with_message.total) == (2, 5)
    assert progress_to_proto("c1", Progress(2, 5, None)).chunk.text == "2/5"
    assert progress_to_proto("c1", Progress(7, None, None)).chunk.text == "7"


def test_a_failed_outcome_carries_code_hint_and_limit() -> None:
    outcome = CallOutcome(False, "slow", error_code="tool_timeout", error_message="timed out", hint="retry",
                          limit_hit="timeout")
    result = outcome_to_proto("c2", "srv__t", outcome).result
    assert not result.ok and result.tool == "srv__t" and result.limit_hit == "timeout"
    assert (result.error.code, result.error.message, result.error.hint) == ("tool_timeout", "timed out", "retry")
    ok = outcome_to_proto("c3", "srv__t", CallOutcome(True, "fine", {"n": 1})).result
    assert ok.ok and json.loads(ok.data_json) == {"n": 1} and not ok.HasField("error")


def test_status_and_catalog_entries_carry_degraded_and_permission() -> None:
    view = ServerView("srv", "local", State.FAILED, "boom", degraded=True, degraded_reason="server 'srv': boom")
    status = status_to_proto(view)
    assert status.state == pb.SERVER_STATE_FAILED and status.degraded and status.degraded_reason.endswith("boom")
    settings = ServerSettings(name="srv", permissions=Permissions(deny=("rm",)))
    entry = entry_to_proto(ToolEntry("srv", "rm", "remove", {"type": "object"}), settings)
    assert entry.qualified_name == "srv__rm" and entry.permission == "deny"
    assert json.loads(entry.input_schema_json) == {"type": "object"}
