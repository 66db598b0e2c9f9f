"""A session feature registered in a test, through the one seam only: its tool runs, its step part
reaches the model's request, its listener sees the events, its slash command answers and its
state slot is saved with the session (the runtime is not touched)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_coding.v1 import loop_pb2

from services.loop.core.events import Event
from services.loop.core.feature import Command, Emit, Feature, FeatureHost, StateSlot
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.turn_events import TurnFinished
from services.loop.policy.permissions import Level
from services.loop.session.features import FEATURES
from tests.service.loop.harness import LoopStack, finished, status_name

NOTES = StateSlot[list[str]]("noteBook", decode=lambda raw: [str(n) for n in raw] if isinstance(raw, list) else [],
                             encode=lambda notes: notes or None)


class NoteFeature(Feature):
    """Notes the model takes with ``note_add``, shown to it every step and listed by /notes."""

    name = "notes"
    slots: tuple[StateSlot[Any], ...] = (NOTES,)

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        self.notes = NOTES.read(host.session)
        self.turns_finished = 0

    def tools(self) -> list[ToolDef]:
        return [ToolDef("note_add", "Keep a note.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                     "required": ["text"]},
                        permission=Level.ALLOW, handler=self._add)]

    async def _add(self, ctx: ToolContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome:
        self.notes.append(str(arguments["text"]))
        return ToolOutcome(call.id, "note_add", True, f"noted ({len(self.notes)})")

    async def step_part(self, emit: Emit) -> dict[str, str]:
        return {"notes": "\n".join(self.notes)}

    def on_event(self, event: Event) -> None:
        if isinstance(event.body, TurnFinished):
            self.turns_finished += 1

    def commands(self) -> dict[str, Command]:
        async def notes(args: str) -> tuple[str, str]:
            return "\n".join(self.notes), json.dumps({"notes": self.notes, "turns": self.turns_finished})

        return {"notes": notes}

    def before_save(self) -> None:
        NOTES.write(self.host.session, self.notes)


def test_a_feature_added_to_the_list_contributes_a_tool_a_step_part_a_listener_a_command_and_state(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([
        {"match": "remember the port", "tool_calls": [{"name": "note_add", "arguments": {"text": "port 8080"}}]},
        {"match": "noted (1)", "text": "Noted."},
    ])
    stack.runtime.deps.features = (*FEATURES, NoteFeature)
    sid, events = stack.turn("remember the port")
    assert status_name(finished(events)) == "completed", (finished(events).reason, stack.fake.errors)
    assert finished(events).text == "Noted."
    last = json.dumps(stack.fake.chat_requests[-1].body["messages"])
    assert "<notes>\\nport 8080\\n</notes>" in last  # the step part of the step after the call
    done = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="notes"), timeout=10)
    assert json.loads(done.data_json) == {"notes": ["port 8080"], "turns": 1}
    saved = json.loads((workspace / ".ai-coding" / "sessions" / f"{sid}.journal").read_text().splitlines()[-1])
    assert saved["meta"]["noteBook"] == ["port 8080"]


def test_a_state_slot_absent_from_a_session_file_decodes_to_its_empty_value() -> None:
    from services.loop.core.sessions import Session

    session = Session(id="s", workspace="/w")
    assert NOTES.read(session) == []
    NOTES.write(session, ["a"])
    assert session.meta()["noteBook"] == ["a"]
    NOTES.write(session, [])
    assert "noteBook" not in session.meta()
