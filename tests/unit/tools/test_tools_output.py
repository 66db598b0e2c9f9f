"""Output buffers: head+tail cap with a marker, job ring buffers, decoding."""

from __future__ import annotations

from services.tools.output import HeadTailBuffer, RingBuffer, TextDecoder


def test_output_under_the_cap_is_kept_whole() -> None:
    buf = HeadTailBuffer(100)
    buf.feed("x" * 60)
    buf.feed("y" * 40)
    assert buf.render() == "x" * 60 + "y" * 40 and buf.cut == 0


def test_output_over_the_cap_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    buf = HeadTailBuffer(100)
    for i in range(1000):
        buf.feed(f"{i:04d}\n")
    text = buf.render()
    assert text.startswith("0000\n") and text.endswith("0999\n")
    assert buf.cut == 5000 - 100 and f"{buf.cut:,} characters cut" in text


def test_a_job_buffer_returns_only_new_text_and_counts_what_it_dropped() -> None:
    ring = RingBuffer(10)
    ring.feed("abcdef")
    assert ring.read_new(100) == ("abcdef", 0)
    ring.feed("0123456789XY")
    new, lost = ring.read_new(100)
    assert new == "23456789XY" and lost == 2


def test_invalid_utf8_and_control_bytes_never_fail_decoding() -> None:
    assert TextDecoder().feed(b"ok\x00\x1b[31m\xff\n") == "ok[31m\ufffd\n"


def test_a_multibyte_character_split_across_reads_is_kept() -> None:
    decoder = TextDecoder()
    data = "é".encode()
    assert decoder.feed(data[:1]) + decoder.feed(data[1:]) == "é"
