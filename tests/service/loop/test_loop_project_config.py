"""The loop applies each workspace's project config layer (trust-filtered) and re-reads changed config files.

Real loop service (and tools service where a turn runs bash) on unix sockets; the fake model is the only stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from ai_coding.v1 import loop_pb2, loop_pb2_grpc

from services.fake_model import FakeModelServer
from services.kernel.config import load_config
from services.kernel.errors import REASON_KEY
from tests.service.loop.harness import LoopStack, ServiceThread, finished, status_name

LOOPING = [
    {"match": "loop", "tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
    {"match": "one", "tool_calls": [{"name": "bash", "arguments": {"command": "echo two"}}]},
    # Reached only if the project's limit of 2 steps were ignored.
    {"match": "two", "tool_calls": [{"name": "bash", "arguments": {"command": "echo three"}}]},
    {"match": "three", "text": "ran past the project's limit"},
]


def test_a_project_config_local_lowering_max_tool_iterations_ends_the_turn_at_that_limit(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    (workspace / "ai-coding.local.yaml").write_text("ai:\n  maxToolIterations: 2\n  max_auto_continuations: 0\n")
    stack = make_stack(LOOPING, with_tools=True)
    _, events = stack.turn("loop forever")
    end = finished(events)
    assert status_name(end) == "max_iterations", end.reason
    assert end.iterations == 2
    assert len(stack.fake.chat_requests) == 2


def test_a_project_layer_pointing_a_model_elsewhere_is_dropped_with_a_warning_to_the_client(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    with FakeModelServer([{"text": "the project's endpoint answered"}]) as elsewhere:
        (workspace / "ai-coding.yaml").write_text(
            f"models:\n  fake:\n    base_url: {elsewhere.url}\n    temperature: 0.1\n")
        stack = make_stack([{"text": "the user's endpoint answered"}])
        opened = stack.open()
        dropped = [w for w in opened.warnings if "models.fake.base_url" in w]
        assert len(dropped) == 1 and "ai-coding trust -w" in dropped[0], list(opened.warnings)
        assert str(workspace / "ai-coding.yaml") in dropped[0]
        end = finished(stack.start(opened.session_id, "hello").drain())
        assert status_name(end) == "completed", end.reason
        assert end.text == "the user's endpoint answered"
        assert elsewhere.chat_requests == []
        # The behaviour key of the same entry is honoured.
        assert stack.fake.chat_requests[0].body.get("temperature") == 0.1


def test_a_list_shaped_config_yaml_above_the_workspace_is_noted_once_and_the_turn_runs(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    helm = workspace.parent / "config.yaml"
    helm.write_text("- name: web\n  image: nginx\n- name: db\n  image: postgres\n")
    stack = make_stack([{"text": "done"}, {"text": "again"}])
    opened = stack.open()
    noted = [w for w in opened.warnings if str(helm) in w]
    assert len(noted) == 1 and "not an ai-coding file" in noted[0], list(opened.warnings)
    end = finished(stack.start(opened.session_id, "hello").drain())
    assert status_name(end) == "completed", end.reason
    again = stack.open()
    assert not [w for w in again.warnings if str(helm) in w], list(again.warnings)


def test_an_ml_repositorys_config_yaml_naming_a_default_model_leaves_the_run_untouched(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    values = workspace / "config.yaml"
    values.write_text("default_model: resnet50\nepochs: 90\nai:\n  - name: inference\n    image: vllm\n")
    stack = make_stack([{"text": "done"}])
    opened = stack.open()
    assert [w for w in opened.warnings if str(values) in w and "not read" in w], list(opened.warnings)
    assert not [w for w in opened.warnings if "resnet50" in w or "must be a mapping" in w], list(opened.warnings)
    end = finished(stack.start(opened.session_id, "hello").drain())
    assert status_name(end) == "completed", end.reason
    assert stack.fake.chat_requests[0].body.get("model") != "resnet50"


def test_a_project_layer_added_while_the_loop_runs_applies_to_the_next_open_session(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack(LOOPING, with_tools=True)
    first = stack.open()
    assert not [w for w in first.warnings if "config" in w]
    (workspace / "ai-coding.local.yaml").write_text("ai:\n  max_tool_iterations: 2\n  max_auto_continuations: 0\n")
    _, events = stack.turn("loop forever")
    end = finished(events)
    assert status_name(end) == "max_iterations" and end.iterations == 2, end.reason


def test_reopening_an_idle_live_session_after_the_project_config_changed_applies_the_new_limit(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    stack = make_stack([{"text": "first turn done"}, *LOOPING], with_tools=True)
    sid, events = stack.turn("warm up")
    assert status_name(finished(events)) == "completed"
    (workspace / "ai-coding.local.yaml").write_text("ai:\n  max_tool_iterations: 2\n  max_auto_continuations: 0\n")
    assert stack.open(sid).session_id == sid
    end = finished(stack.start(sid, "loop forever").drain())
    assert status_name(end) == "max_iterations" and end.iterations == 2, end.reason


# ---- a loop whose config came from a user file, as `ai-coding serve loop` builds it ----


class FileLoop:
    """A real loop service built from ``load_config(None, user_path=...)``."""

    def __init__(self, short_dir: Path, user_path: Path) -> None:
        from services.loop.main import build

        self.services = ServiceThread()
        self.services.serve(f"unix:{short_dir}/loop.sock", build(load_config(None, user_path=user_path)))
        self.channel = grpc.insecure_channel(f"unix:{short_dir}/loop.sock")
        self.stub = loop_pb2_grpc.AgentLoopStub(self.channel)

    def open(self, workspace: Path) -> loop_pb2.OpenSessionLoopResponse:
        reply: loop_pb2.OpenSessionLoopResponse = self.stub.OpenSession(
            loop_pb2.OpenSessionLoopRequest(workspace=str(workspace), auto_approve=True), timeout=30)
        return reply

    def close(self) -> None:
        self.channel.close()
        self.services.close()


@pytest.fixture
def file_loop(short_dir: Path, isolated_home: Path) -> Iterator[tuple[FileLoop, Path]]:
    user = isolated_home / ".config" / "ai-coding" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text(f"endpoints:\n  tools: unix:{short_dir}/no-tools.sock\n"
                    "loop:\n  memory: false\n  mcp: false\n  harvest: false\n")
    loop = FileLoop(short_dir, user)
    yield loop, user
    loop.close()


def test_a_model_added_to_the_user_config_while_the_loop_runs_is_used_by_the_next_open_session(
        file_loop: tuple[FileLoop, Path], workspace: Path, fake: FakeModelServer) -> None:
    loop, user = file_loop
    with pytest.raises(grpc.RpcError) as err:
        loop.open(workspace)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert dict(err.value.trailing_metadata() or ()).get(REASON_KEY) == "config_invalid"
    message = err.value.details() or ""
    assert "no model configured" in message and "ai-coding down" in message, message
    user.write_text(user.read_text() + f"default_model: fake\nmodels:\n  fake:\n    provider: generic\n"
                    f"    base_url: {fake.url}\n    api_key: k\n    model: fake-model\n")
    fake.load_script([{"text": "hello from the new model"}])
    opened = loop.open(workspace)
    assert opened.model == "fake"
    conversation = loop.stub.ConverseBatched(iter([loop_pb2.ClientMessage(start=loop_pb2.StartTurn(
        session_id=opened.session_id, input="hi"))]), timeout=60)
    events = []
    for batch in conversation:
        events += batch.events
        if any(e.WhichOneof("event") == "turn_finished" for e in batch.events):
            break
    conversation.cancel()
    end = finished(events)
    assert status_name(end) == "completed" and end.text == "hello from the new model", end.reason


def test_a_missing_variable_in_the_user_config_says_the_services_keep_their_start_environment(
        file_loop: tuple[FileLoop, Path], workspace: Path, fake: FakeModelServer) -> None:
    loop, user = file_loop
    user.write_text(user.read_text() + f"models:\n  fake:\n    provider: generic\n    base_url: {fake.url}\n"
                    "    api_key: ${AIC_TEST_UNSET_KEY_VARIABLE}\n")
    with pytest.raises(grpc.RpcError) as err:
        loop.open(workspace)
    message = err.value.details() or ""
    assert "AIC_TEST_UNSET_KEY_VARIABLE" in message and "ai-coding down" in message, message


def test_a_session_whose_model_left_the_config_continues_with_the_default_and_says_so(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    from services.loop.core.sessions import SessionStore

    old = SessionStore(workspace).create("retired-model")  # saved when that model was configured
    old.messages.append({"role": "user", "content": "earlier work"})
    SessionStore(workspace).compact(old)
    stack = make_stack([{"match": "carry on", "text": "carried on"}])
    opened = stack.open(old.id)
    assert opened.session_id == old.id and opened.model == "fake"
    assert any("`retired-model`" in w and "continuing with `fake`" in w for w in opened.warnings), opened.warnings
    end = finished(stack.start(old.id, "carry on").drain())
    assert status_name(end) == "completed" and end.text == "carried on"
    assert stack.fake.chat_requests[0].messages[1]["content"] == "earlier work"


def test_reopening_an_idle_live_session_after_the_compaction_settings_changed_applies_the_new_threshold(
        make_stack: Callable[..., LoopStack], workspace: Path) -> None:
    def budget(sid: str) -> dict[str, int]:
        reply = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="budget"), timeout=30)
        context: dict[str, int] = json.loads(reply.data_json)["context"]
        return context

    stack = make_stack([{"text": "first turn done"}])
    sid, events = stack.turn("warm up")
    assert status_name(finished(events)) == "completed"
    before = budget(sid)
    assert before["ceiling"] != 5000
    (workspace / "ai-coding.local.yaml").write_text("compaction:\n  threshold: 5000\n")
    assert stack.open(sid).session_id == sid
    assert budget(sid) == {**before, "ceiling": 5000}
