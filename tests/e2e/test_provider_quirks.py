"""Issue 28, providers: each server quirk, played by the fake model, through ``ai-coding run --json``.

Every quirk is a setting of the model entry (or its provider row's default), so each test picks
the entry (`-m NAME`) whose settings face that server. One set of real services serves the module;
each test loads its own script into the same fake model and reads what the loop sent back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.runtime import descendants, pid_alive
from services.fake_model import FakeModelServer

pytestmark = pytest.mark.slow


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clients.cli.entry", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def _entry(url: str, name: str, model: str, *extra: str, retries: int = 0) -> str:
    lines = [f"  {name}:", "    provider: generic", f"    model: {model}", f"    base_url: {url}",
             "    api_key: test-key", f"    max_retries: {retries}", "    retry_budget_seconds: 5"]
    return "\n".join(lines + [f"    {line}" for line in extra]) + "\n"


def _config(url: str) -> str:
    return ("default_model: plain\nmodels:\n"
            + _entry(url, "plain", "fake-model")
            + _entry(url, "patient", "fake-model", retries=4)  # a retry would show as a second request
            + _entry(url, "strict", "fake-model")
            + _entry(url, "strict_pydantic", "fake-model")
            + _entry(url, "tuned", "fake-model", "temperature: 0.3", "extra_body: {top_k: 20, min_p: 0.05}",
                     "headers: {X-Team: infra}", "drop_params: [temperature]")
            + _entry(url, "ds_proxy", "deepseek-v4", "thinking: on", "echo_reasoning: on",
                     "thinking_format: deepseek")
            + _entry(url, "ds_proxy_unset", "deepseek-v4", "thinking: on")
            + _entry(url, "qwen3", "qwen3-32b")
            + "loop:\n  harvest: false\n")


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """Services, a fake model and a workspace shared by this module; everything stopped at the end."""
    root = Path(tempfile.mkdtemp(prefix="aic-pq-", dir="/tmp"))
    os.chmod(root, 0o700)
    home = root / "home"
    (home / ".config").mkdir(parents=True)
    with FakeModelServer([]) as model, pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        mp.setenv("AI_CODING_RUNTIME_DIR", str(root / "run"))
        for var in ("AI_CODING_TRUST_PROJECT", "AI_CODING_MODEL", "AI_CODING_BASE_URL", "AI_CODING_API_KEY",
                    "AI_CODING_PROVIDER", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
            mp.delenv(var, raising=False)
        config = root / "config.yaml"
        config.write_text(_config(model.url))
        mp.setenv("AI_CODING_CONFIG", str(config))
        workspace = root / "ws"
        workspace.mkdir()
        try:
            yield {"model": model, "workspace": workspace}
        finally:
            try:
                sup_pid: int | None = int((root / "run" / "supervisor.pid").read_text())
            except (OSError, ValueError):
                sup_pid = None
            left = descendants(sup_pid) if sup_pid else []
            cli("down")
            for pid in [*left, *([sup_pid] if sup_pid else [])]:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
    subprocess.run(["rm", "-rf", str(root)], check=False)


def run_turn(stack: dict[str, Any], script: list[dict[str, Any]] | None, prompt: str, *extra: str
             ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    model: FakeModelServer = stack["model"]
    if script is not None:
        model.load_script(script)
    done = cli("run", "--json", "--auto-approve", "-w", str(stack["workspace"]), *extra, prompt)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    return done, events


def finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    end: dict[str, Any] = events[-1]["turnFinished"]
    return end


def reasoning(events: list[dict[str, Any]]) -> str:
    return "".join(e["reasoningDelta"]["text"] for e in events if "reasoningDelta" in e)


def notices(events: list[dict[str, Any]]) -> list[str]:
    return [e["notice"]["text"] for e in events if "notice" in e]


def new_requests(model: FakeModelServer, before: int) -> list[Any]:
    return model.chat_requests[before:]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout[-2000:] + done.stderr[-2000:]


# -- 1. content arrays -------------------------------------------------------------------------------


def test_content_as_a_list_of_parts_is_read_as_the_answer_streamed_or_whole(stack: dict[str, Any]) -> None:
    (stack["workspace"] / "parts.txt").write_text("content-of-parts\n")
    done, events = run_turn(stack, [
        {"wire": "content_parts", "text": "Reading it.", "tool_calls": [{"name": "read",
                                                                          "arguments": {"path": "parts.txt"}}]},
        {"wire": "json_parts", "match": "content-of-parts", "text": "parts.txt holds content-of-parts"},
    ], "read parts.txt")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"] == "parts.txt holds content-of-parts"
    texts = "".join(e["textDelta"]["text"] for e in events if "textDelta" in e)
    assert texts.startswith("Reading it.")


def test_magistral_thinking_parts_are_reasoning_and_its_text_parts_the_answer(stack: dict[str, Any]) -> None:
    done, events = run_turn(stack, [{"wire": "magistral", "reasoning": "Let me weigh it.", "text": "Forty-two."}],
                            "what is the answer")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"] == "Forty-two."
    assert reasoning(events) == "Let me weigh it."


# -- 2. refused parameters, extra body, headers, dropped parameters ----------------------------------


@pytest.mark.parametrize(("entry", "style"), [("strict", "openai"), ("strict_pydantic", "pydantic")])
def test_a_refused_stream_options_is_dropped_once_said_once_and_remembered(
        stack: dict[str, Any], entry: str, style: str) -> None:
    model: FakeModelServer = stack["model"]
    script = [{"text": "first answer", "reject_params": ["stream_options"], "reject_style": style},
              {"text": "second answer", "reject_params": ["stream_options"], "reject_style": style}]
    before = len(model.chat_requests)
    first, events = run_turn(stack, script, "hello", "-m", entry)
    assert first.returncode == 0, ok(first)
    assert finished(events)["text"] == "first answer"
    said = [n for n in notices(events) if "stream_options" in n]
    assert len(said) == 1 and f"models.{entry}.drop_params" in said[0], notices(events)
    second, events = run_turn(stack, None, "again", "-m", entry, "--session", events[0]["sessionId"])
    assert second.returncode == 0, ok(second)
    assert finished(events)["text"] == "second answer"
    assert not [n for n in notices(events) if "stream_options" in n]  # remembered: not said again
    sent = new_requests(model, before)
    assert [("stream_options" in r.body, r.status) for r in sent] == [(True, 400), (False, 200), (False, 200)]
    assert model.errors == []


def test_extra_body_headers_and_drop_params_shape_every_request(stack: dict[str, Any]) -> None:
    model: FakeModelServer = stack["model"]
    before = len(model.chat_requests)
    done, _events = run_turn(stack, [{"text": "tuned"}], "hi", "-m", "tuned")
    assert done.returncode == 0, ok(done)
    (request,) = new_requests(model, before)
    assert request.body["top_k"] == 20 and request.body["min_p"] == 0.05
    assert "temperature" not in request.body
    assert {k.lower(): v for k, v in request.headers.items()}["x-team"] == "infra"


# -- 3. [DONE] without a finish_reason ---------------------------------------------------------------


@pytest.mark.parametrize("wire", ["no_finish_reason", "empty_finish_reason"])
def test_done_without_a_finish_reason_is_a_complete_answer_not_a_broken_stream(
        stack: dict[str, Any], wire: str) -> None:
    model: FakeModelServer = stack["model"]
    (stack["workspace"] / "done.txt").write_text("content-of-done\n")
    before = len(model.chat_requests)
    done, events = run_turn(stack, [
        {"wire": wire, "tool_calls": [{"name": "read", "arguments": {"path": "done.txt"}}]},
        {"wire": wire, "match": "content-of-done", "text": "done.txt holds content-of-done"},
    ], "read done.txt", "-m", "patient")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"] == "done.txt holds content-of-done"
    assert len(new_requests(model, before)) == 2  # no retry of either step
    assert not [n for n in notices(events) if "retrying" in n]


# -- 4. error bodies of any shape --------------------------------------------------------------------


@pytest.mark.parametrize(("status", "body", "words"), [
    (400, "string", "Model is not loaded. Load it in LM Studio first."),
    (400, "list", "API key not valid for this project region."),
    (502, "text", "upstream connect error or disconnect/reset before headers"),
    (503, "html", "Service Temporarily Unavailable"),
])
def test_an_error_body_of_any_shape_shows_the_servers_own_words(
        stack: dict[str, Any], status: int, body: str, words: str) -> None:
    _done, events = run_turn(stack, [{"fault": {"kind": "http_error", "status": status, "body": body,
                                               "message": words}}], "hi")
    end = finished(events)
    assert end["status"] == "TURN_STATUS_FAILED", end
    assert words in end["reason"], end["reason"]
    assert f"HTTP {status}: " in end["reason"] and "Error code:" not in end["reason"]
    assert "<html" not in end["reason"].lower()


# -- 6. DeepSeek's reasoning echo behind `provider: generic` -----------------------------------------


def _echo_script() -> list[dict[str, Any]]:
    return [
        {"name": "read", "reasoning": "R1 read it", "require_reasoning_echo": True,
         "tool_calls": [{"name": "read", "arguments": {"path": "echo.txt"}}]},
        {"name": "answer", "reasoning": "R2 answer", "match": "echo-content", "text": "one line",
         "require_reasoning_echo": True},
    ]


def test_deepseek_reasoning_echo_is_a_setting_that_works_behind_a_generic_proxy(stack: dict[str, Any]) -> None:
    model: FakeModelServer = stack["model"]
    (stack["workspace"] / "echo.txt").write_text("echo-content\n")
    before = len(model.chat_requests)
    done, events = run_turn(stack, _echo_script(), "read echo.txt", "-m", "ds_proxy")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"] == "one line"
    second = new_requests(model, before)[1].body
    assert [m.get("reasoning_content") for m in second["messages"] if m["role"] == "assistant"] == ["R1 read it"]
    assert second["thinking"] == {"type": "enabled"}  # thinking_format: deepseek


def test_without_echo_reasoning_a_generic_proxy_of_deepseek_names_the_setting_in_its_refusal(
        stack: dict[str, Any]) -> None:
    (stack["workspace"] / "echo.txt").write_text("echo-content\n")
    _done, events = run_turn(stack, _echo_script(), "read echo.txt", "-m", "ds_proxy_unset")
    end = finished(events)
    assert end["status"] == "TURN_STATUS_FAILED"
    assert "must be passed back" in end["reason"] and "models.ds_proxy_unset.echo_reasoning: on" in end["reason"]


# -- 7. <think> in the answer text -------------------------------------------------------------------


def test_a_think_block_in_the_answer_is_reasoning_for_a_qwen3_model_and_never_sent_back(
        stack: dict[str, Any]) -> None:
    model: FakeModelServer = stack["model"]
    before = len(model.chat_requests)
    done, events = run_turn(stack, [
        {"wire": "think_tags", "reasoning": "The user greets; answer briefly.", "text": "Hello there!"},
        {"text": "bye"},
    ], "hello", "-m", "qwen3")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"] == "Hello there!"
    assert reasoning(events) == "The user greets; answer briefly."
    assert "<think>" not in done.stdout
    again, _ = run_turn(stack, None, "bye", "-m", "qwen3", "--session", events[0]["sessionId"])
    assert again.returncode == 0, ok(again)
    sent = new_requests(model, before)[-1].body
    assistant = [m for m in sent["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == "Hello there!"


def test_a_think_block_stays_text_for_a_model_whose_entry_does_not_say_so(stack: dict[str, Any]) -> None:
    done, events = run_turn(stack, [{"wire": "think_tags", "reasoning": "inner", "text": "outer"}], "hi")
    assert done.returncode == 0, ok(done)
    assert finished(events)["text"].startswith("<think>inner</think>")


# -- 8. an Anthropic Messages endpoint at the URL ----------------------------------------------------


@pytest.mark.parametrize("wire", ["anthropic", "anthropic_json"])
def test_an_anthropic_messages_reply_says_the_endpoint_is_not_chat_completions_without_retrying(
        stack: dict[str, Any], wire: str) -> None:
    model: FakeModelServer = stack["model"]
    before = len(model.chat_requests)
    _done, events = run_turn(stack, [{"wire": wire, "text": "Hello from Claude"}], "hi", "-m", "patient")
    end = finished(events)
    assert end["status"] == "TURN_STATUS_FAILED", end
    assert "Anthropic's Messages format" in end["reason"] and "not serving Chat Completions" in end["reason"]
    assert "models.patient.base_url" in end["reason"]
    assert len([r for r in new_requests(model, before) if r.status == 200]) == 1  # no retries
