from __future__ import annotations

from typing import Any

from services.loop.model.stream import LineSplitter, StreamAssembler, arguments_error


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}}
    if finish:
        choice["finish_reason"] = finish
    return {"choices": [choice], **extra}


def call(index: int | None, *, id: str = "", name: str = "", args: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"function": {}}
    if index is not None:
        out["index"] = index
    if id:
        out["id"] = id
    if name:
        out["function"]["name"] = name
    if args:
        out["function"]["arguments"] = args
    return {"tool_calls": [out]}


def test_text_and_reasoning_deltas_are_returned_as_they_arrive() -> None:
    asm = StreamAssembler()
    assert asm.feed(chunk({"reasoning_content": "think"})).reasoning == "think"
    assert asm.feed(chunk({"reasoning": " more"})).reasoning == " more"
    d = asm.feed(chunk({"content": "Hi"}))
    assert (d.text, d.reasoning) == ("Hi", "")
    asm.feed(chunk({"content": " there"}, finish="stop"))
    assert asm.text == "Hi there"
    assert asm.reasoning == "think more"
    assert asm.finish_reason == "stop"


def test_tool_calls_are_assembled_from_partial_chunks_by_index() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="read", args='{"pa')))
    asm.feed(chunk(call(1, id="b", name="bash", args='{"command"')))
    asm.feed(chunk(call(0, args='th": "x.py"}')))
    asm.feed(chunk(call(1, args=': "ls"}'), finish="tool_calls"))
    calls = asm.tool_calls()
    assert [(c.id, c.name, c.arguments(), c.parse_error) for c in calls] == [
        ("a", "read", {"path": "x.py"}, ""),
        ("b", "bash", {"command": "ls"}, ""),
    ]


def test_calls_without_index_are_matched_by_id_then_continued() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(None, id="a", name="read", args='{"path":')))
    asm.feed(chunk(call(None, args=' "y"}')))
    asm.feed(chunk(call(None, id="b", name="glob", args="{}")))
    calls = asm.tool_calls()
    assert [(c.id, c.arguments()) for c in calls] == [("a", {"path": "y"}), ("b", {})]


def test_broken_json_arguments_set_parse_error_and_keep_the_raw_text() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="edit", args='{"path": "x", ')))
    (c,) = asm.tool_calls()
    assert c.parse_error.startswith("arguments are not valid JSON")
    assert c.arguments_json == '{"path": "x", '


def test_arguments_that_are_not_an_object_are_flagged() -> None:
    assert arguments_error("[1, 2]") == "arguments must be a JSON object, got list"
    assert arguments_error("") == ""
    assert arguments_error('{"a": 1}') == ""


def test_a_call_without_id_or_name_gets_an_id_and_an_error() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, args="{}")))
    (c,) = asm.tool_calls("call_x")
    assert c.id == "call_x_0"
    assert c.parse_error == "the tool call has no function name"


def test_empty_arguments_become_an_empty_object() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="glob")))
    (c,) = asm.tool_calls()
    assert (c.arguments_json, c.parse_error) == ("{}", "")


def test_the_usage_only_final_chunk_is_kept() -> None:
    asm = StreamAssembler()
    asm.feed(chunk({"content": "x"}, finish="stop"))
    asm.feed({"choices": [], "usage": {"prompt_tokens": 3}})
    assert asm.usage == {"prompt_tokens": 3}
    assert asm.streamed_anything


def test_choices_other_than_the_first_are_ignored() -> None:
    asm = StreamAssembler()
    asm.feed({"choices": [{"index": 1, "delta": {"content": "other"}}]})
    assert asm.text == ""
    assert not asm.streamed_anything


def test_sse_events_end_at_a_blank_line_and_join_multiline_data() -> None:
    from services.loop.model.stream import SseDecoder

    d = SseDecoder()
    assert d.feed(": keep-alive comment") == []
    assert d.feed('data: {"a":') == []
    assert d.feed('data: 1}') == []
    assert d.feed("") == [("message", '{"a":\n1}')]
    assert d.feed("event: error") == []
    assert d.feed('data:{"error": {}}') == []
    assert d.feed("") == [("error", '{"error": {}}')]
    assert d.feed("") == []
    d.feed("data: [DONE]")
    assert d.finish() == [("message", "[DONE]")]


def test_a_non_streamed_completion_is_read_as_one_chunk() -> None:
    from services.loop.model.stream import completion_as_chunk

    body = {
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "ok", "reasoning_content": "hm",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}},
                           {"id": "c2", "type": "function", "function": {"name": "glob", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 3},
    }
    asm = StreamAssembler()
    asm.feed(completion_as_chunk(body))
    assert (asm.text, asm.reasoning, asm.finish_reason, asm.usage) == ("ok", "hm", "tool_calls", {"prompt_tokens": 3})
    assert [(c.id, c.name, c.arguments()) for c in asm.tool_calls()] == [("c1", "read", {"path": "a"}), ("c2", "glob", {})]


def test_any_split_of_interleaved_tool_call_deltas_reassembles_the_same_calls() -> None:
    import itertools
    import json
    import random

    rng = random.Random(1234)
    wanted = [{"path": "src/ü.py", "text": 'a "quoted" \\ value', "n": [1, 2, {"k": None}]}, {"command": "ls -la"}]
    for _ in range(200):
        queues: list[list[str]] = []
        for args in wanted:
            raw = json.dumps(args)
            cuts = sorted(rng.sample(range(1, len(raw)), k=5))
            queues.append([raw[a:b] for a, b in itertools.pairwise([0, *cuts, len(raw)])])
        asm = StreamAssembler()
        started: set[int] = set()
        while any(queues):
            index = rng.choice([n for n, q in enumerate(queues) if q])
            first = index not in started
            started.add(index)
            asm.feed(chunk(call(index, id=f"c{index}" if first else "", name=("read", "bash")[index] if first else "",
                                args=queues[index].pop(0))))
        calls = asm.tool_calls()
        assert [c.arguments() for c in calls] == wanted
        assert [(c.id, c.name, c.parse_error) for c in calls] == [("c0", "read", ""), ("c1", "bash", "")]


def _split(chunks: list[bytes]) -> list[str]:
    splitter = LineSplitter()
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    return lines + splitter.finish()


def test_raw_stream_bytes_split_into_lines_at_lf_crlf_and_lone_cr() -> None:
    data = 'data: {"a": "é"}\r\n\r\ndata: x\n\ndata: y\r\rtail'.encode()
    assert _split([data]) == ['data: {"a": "é"}', "", "data: x", "", "data: y", "", "tail"]


def test_every_way_of_cutting_the_bytes_gives_the_same_lines() -> None:
    # Chunk boundaries fall anywhere: inside a CRLF pair and inside a multi-byte character included.
    data = 'data: {"t": "naïve ✓"}\r\n\r\n: keep-alive\r\ndata: [DONE]\r\n\r\n'.encode()
    whole = _split([data])
    assert whole == ['data: {"t": "naïve ✓"}', "", ": keep-alive", "data: [DONE]", ""]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert _split([data[:i], data[i:j], data[j:]]) == whole, (i, j)


def test_no_line_is_invented_from_an_empty_chunk_or_an_unterminated_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"") == []
    assert splitter.feed(b"data: par") == []
    assert splitter.feed(b"") == []
    assert splitter.finish() == ["data: par"]
    assert splitter.finish() == []


def test_parallel_calls_that_all_carry_index_zero_with_their_own_ids_stay_apart() -> None:
    asm = StreamAssembler()  # Ollama: every call complete in one delta, each with index 0
    asm.feed(chunk(call(0, id="a", name="read", args='{"path": "a.py"}')))
    asm.feed(chunk(call(0, id="b", name="read", args='{"path": "b.py"}'), finish="tool_calls"))
    assert [(c.id, c.name, c.arguments()) for c in asm.tool_calls()] == [
        ("a", "read", {"path": "a.py"}), ("b", "read", {"path": "b.py"})]


def test_complete_calls_without_ids_under_one_index_or_none_stay_apart() -> None:
    for index in (0, None):
        asm = StreamAssembler()
        asm.feed(chunk(call(index, name="read", args='{"path": "a.py"}')))
        asm.feed(chunk(call(index, name="glob", args='{"pattern": "*.py"}')))
        calls = asm.tool_calls()
        assert [(c.name, c.arguments(), c.parse_error) for c in calls] == [
            ("read", {"path": "a.py"}, ""), ("glob", {"pattern": "*.py"}, "")]
        assert len({c.id for c in calls}) == 2


def test_a_name_split_across_deltas_is_still_one_call() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="re")))
    asm.feed(chunk(call(0, name="ad", args='{"path": "x"}')))
    (c,) = asm.tool_calls()
    assert (c.name, c.arguments()) == ("read", {"path": "x"})


def test_a_surrogate_pair_split_across_chunks_is_joined_into_its_character() -> None:
    asm = StreamAssembler()
    first = asm.feed(chunk({"content": "ok \ud83d"}))
    second = asm.feed(chunk({"content": "\ude00!"}, finish="stop"))
    assert (first.text, second.text) == ("ok ", "\U0001F600!")
    assert asm.text == "ok \U0001F600!"
    asm.text.encode("utf-8")  # would raise on a lone surrogate


def test_a_lone_surrogate_becomes_the_replacement_character_and_never_crashes() -> None:
    asm = StreamAssembler()
    asm.feed(chunk({"content": "a\ude00b"}))
    asm.feed(chunk({"reasoning_content": "think \ud83d"}, finish="stop"))
    asm.feed(chunk(call(0, id="a", name="write", args='{"content": "x\ud83d')))
    asm.feed(chunk(call(0, args='\ude00"}')))
    assert asm.text == "a\ufffdb"
    assert asm.reasoning == "think \ufffd"
    (c,) = asm.tool_calls()
    assert c.arguments() == {"content": "x\U0001F600"}


def test_length_inside_a_call_names_the_truncation_and_asks_for_a_shorter_call() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="read", args='{"path": "a"}')))
    asm.feed(chunk(call(1, id="b", name="write", args='{"path": "big.txt", "content": "aaaa'), finish="length"))
    ok, cut = asm.tool_calls()
    assert (ok.parse_error, ok.truncated) == ("", False)
    assert cut.truncated
    assert "cut off at the model's output limit" in cut.parse_error and "shorter call" in cut.parse_error


def test_broken_json_without_length_is_not_called_truncated() -> None:
    asm = StreamAssembler()
    asm.feed(chunk(call(0, id="a", name="write", args='{"path": '), finish="tool_calls"))
    (c,) = asm.tool_calls()
    assert c.parse_error.startswith("arguments are not valid JSON") and not c.truncated


def test_chunks_carrying_message_instead_of_delta_are_read_as_deltas() -> None:
    asm = StreamAssembler()
    asm.feed({"choices": [{"index": 0, "message": {"content": "Hel"}}]})
    asm.feed({"choices": [{"index": 0, "message": {"content": "lo", "tool_calls": [
        {"id": "a", "function": {"name": "read", "arguments": '{"path": "x"}'}}]}, "finish_reason": "tool_calls"}]})
    assert asm.text == "Hello"
    assert [(c.name, c.arguments()) for c in asm.tool_calls()] == [("read", {"path": "x"})]
    assert asm.shapeless_choices == 0


def test_a_closing_message_after_deltas_is_not_counted_twice() -> None:
    asm = StreamAssembler()
    asm.feed(chunk({"content": "Hi"}))
    asm.feed({"choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}]})
    assert asm.text == "Hi"


def test_choices_with_neither_delta_nor_message_are_counted_as_unreadable() -> None:
    asm = StreamAssembler()
    asm.feed({"choices": [{"index": 0, "text": "Hi"}]})
    asm.feed({"choices": [{"index": 0, "finish_reason": "stop"}]})
    assert (asm.produced_nothing, asm.shapeless_choices) == (True, 1)
