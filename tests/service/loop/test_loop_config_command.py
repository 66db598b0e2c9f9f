"""/config in a session prints the kernel's effective-config report: one masking rule for every
secret the config can hold, typed sections with their defaults, and each value's layer.

Real loop service on a unix socket; the fake model is the only stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ai_coding.v1 import loop_pb2

from tests.service.loop.harness import LoopStack

HEADER_SECRET = "Bearer sk-header-0123456789abcdef"
ENV_SECRET = "ghp_envsecret0123456789abcdef"


def test_config_masks_header_and_server_env_secrets_and_lists_typed_defaults(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(sections={"mcp": {"servers": [{"name": "gh", "command": "gh-mcp",
                                                      "env": {"GITHUB_TOKEN": ENV_SECRET}}]},
                                 "plans": {"acceptance": [{"statement": "tests pass", "command": "true"}]}})
    stack.config.data["models"]["fake"]["headers"] = {"Authorization": HEADER_SECRET}
    sid = stack.open().session_id
    answer = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="config"), timeout=10)
    assert HEADER_SECRET not in answer.text and HEADER_SECRET[-8:-4] not in answer.text
    assert ENV_SECRET not in answer.text
    values = json.loads(answer.data_json)["values"]
    assert values["models.fake.headers.Authorization"] == "****" + HEADER_SECRET[-4:]
    assert values["mcp.servers.0.env.GITHUB_TOKEN"] == "****" + ENV_SECRET[-4:]
    assert values["mcp.servers.0.command"] == "gh-mcp"  # not a secret: shown as written
    assert values["plans.acceptance.0.statement"] == "tests pass"
    assert "ai.max_tool_iterations: 50  (default)" in answer.text


def test_model_lists_the_configured_entries_and_the_acceptance_items_come_from_the_typed_section(
        make_stack: Callable[..., LoopStack]) -> None:
    stack = make_stack(sections={"plans": {"acceptance": [{"statement": "lint", "command": "ruff ."},
                                                          "junk", {"statement": "no proof"}]}})
    sid = stack.open().session_id
    model = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="model"), timeout=10)
    assert json.loads(model.data_json)["configured"] == ["fake"]
    accept = stack.stub.RunCommand(loop_pb2.RunCommandRequest(session_id=sid, command="accept"), timeout=10)
    assert "[config] lint -- ruff ." in accept.text and "no proof" not in accept.text
