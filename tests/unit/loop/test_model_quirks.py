"""Pure parts of issue 28's provider quirks: error bodies, refused fields, stated windows, <think>, parts."""

from __future__ import annotations

from typing import Any

import pytest

from services.kernel.config import Config
from services.kernel.errors import ConfigError
from services.loop.model.error_body import read_error, rejected_param, stated_window
from services.loop.model.retry import classify_status
from services.loop.model.settings import resolve_model
from services.loop.model.stream import StreamAssembler, ThinkSplitter, content_parts


def test_every_error_body_shape_yields_the_servers_own_message() -> None:
    assert read_error({"message": "bad model", "type": "invalid_request_error"}).message == "bad model"
    assert read_error("Model is not loaded.").message == "Model is not loaded."  # LM Studio via exc.body
    gemini = [{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}]
    assert read_error(gemini).message == "API key not valid."
    assert read_error("upstream connect error\n").message == "upstream connect error"
    page = "<!DOCTYPE html><html><head><title>503 Service Temporarily Unavailable</title></head><body></body></html>"
    assert read_error(page).message == "503 Service Temporarily Unavailable"
    detail = {"detail": [{"type": "extra_forbidden", "loc": ["body", "stream_options"], "msg": "Extra inputs"}]}
    assert read_error(detail).message == "stream_options: Extra inputs [extra_forbidden]"
    assert read_error(None, "Error code: 500").message == "Error code: 500"


def test_a_refused_field_is_found_only_next_to_a_word_of_refusal() -> None:
    sent = ["stream_options", "max_tokens"]
    assert rejected_param(read_error({"message": "Unknown parameter: 'stream_options'."}), sent) == "stream_options"
    vllm = {"object": "error", "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'max_tokens'), "
                                          "'msg': 'Extra inputs are not permitted'}]"}
    assert rejected_param(read_error(vllm), sent) == "max_tokens"
    assert rejected_param(read_error({"message": "max_tokens is too large for this model, use 4096"}), sent) == ""
    assert rejected_param(read_error({"message": "Unknown model 'x'"}), sent) == ""


@pytest.mark.parametrize(("body", "window"), [
    ({"error": {"type": "exceed_context_size_error", "n_ctx": 8192,
                "message": "request (9120 tokens) exceeds the available context size (8192 tokens)"}}, 8192),
    ([{"error": {"message": "The input token count (1200) exceeds the maximum number of tokens allowed (1000)."}}],
     1000),
    ({"error": {"message": "This model's maximum context length is 32000 tokens. However ..."}}, 32000),
])
def test_overflow_wordings_are_context_length_and_state_their_window(body: Any, window: int) -> None:
    reply = read_error(body)
    assert classify_status(400, reply.searchable).reason == "context_length"
    assert stated_window(reply) == window


def _split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    text = reasoning = ""
    for piece in pieces:
        t, r = splitter.feed(piece)
        text, reasoning = text + t, reasoning + r
    t, r = splitter.finish()
    return text + t, reasoning + r


def test_a_think_block_cut_anywhere_between_chunks_becomes_reasoning() -> None:
    whole = "\n<think>plan it</think>\n\nThe answer."
    for cut in range(1, len(whole)):
        assert _split([whole[:cut], whole[cut:]]) == ("The answer.", "plan it"), cut


def test_a_think_tag_after_the_answer_started_is_text_and_an_unclosed_block_is_reasoning() -> None:
    assert _split(["Use ", "<think> tags"]) == ("Use <think> tags", "")
    assert _split(["<think>still thin", "king"]) == ("", "still thinking")
    assert _split(["<thi"]) == ("<thi", "")


def test_content_parts_split_text_from_thinking() -> None:
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}, {"type": "text", "text": "ok"}]
    assert content_parts(parts) == ("ok", "hmm")
    assert content_parts([{"type": "thinking", "thinking": "flat"}]) == ("", "flat")
    assert content_parts([{"type": "image_url", "image_url": {}}]) == ("", "")


def test_done_without_finish_reason_completes_a_reply_but_not_an_empty_one() -> None:
    asm = StreamAssembler()
    asm.feed({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": ""}]})
    asm.end(saw_done=True)
    assert asm.finish_reason == "stop"
    empty = StreamAssembler()
    empty.end(saw_done=True)
    assert empty.finish_reason == ""
    cut = StreamAssembler()
    cut.feed({"choices": [{"index": 0, "delta": {"content": "hi"}}]})
    cut.end(saw_done=False)
    assert cut.finish_reason == ""  # no [DONE]: the stream broke off


def _model(**entry: Any) -> Any:
    return resolve_model(Config({"models": {"m": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", **entry}}}),
                         "m", env={})


def test_quirks_default_from_the_provider_row_and_an_entry_overrides_them() -> None:
    ds = resolve_model(Config({"models": {"d": {"provider": "deepseek", "api_key": "k"}}}), "d", env={})
    assert (ds.thinking_format, ds.echo_reasoning) == ("deepseek", True)
    generic = _model(provider="generic")
    assert (generic.thinking_format, generic.echo_reasoning, generic.think_tags) == ("effort", False, False)
    proxy = _model(provider="generic", thinking_format="deepseek", echo_reasoning=True, model="qwen3-8b")
    assert (proxy.thinking_format, proxy.echo_reasoning, proxy.think_tags) == ("deepseek", True, True)
    assert _model(model="QwQ-32B", think_tags=False).think_tags is False


def test_an_unknown_thinking_format_or_effort_for_a_qwen_format_names_the_key() -> None:
    with pytest.raises(ConfigError, match="thinking_format"):
        _model(thinking_format="anthropic")
    with pytest.raises(ConfigError, match="reasoning_effort"):
        _model(thinking_format="qwen", reasoning_effort="high")


def test_reasoning_before_a_lone_closing_tag_is_cut_from_the_steps_text() -> None:
    asm = StreamAssembler(think_tags=True)
    for piece in ("Okay, the user", " wants a greeting.</thi", "nk>\n\nHello!"):
        asm.feed({"choices": [{"index": 0, "delta": {"content": piece}}]})
    asm.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    asm.end(saw_done=True)
    assert (asm.text, asm.reasoning) == ("Hello!", "Okay, the user wants a greeting.")
    off = StreamAssembler(think_tags=False)
    off.feed({"choices": [{"index": 0, "delta": {"content": "Use </think> to close a block."},
                           "finish_reason": "stop"}]})
    off.end(saw_done=True)
    assert (off.text, off.reasoning) == ("Use </think> to close a block.", "")
