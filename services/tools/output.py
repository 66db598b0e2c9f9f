"""Output handling for commands: decoding, the head+tail cap, bounded job buffers."""

from __future__ import annotations

import codecs
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class TextDecoder:
    """Incremental UTF-8 decoding that never fails; control bytes (except tab/newline/CR) dropped."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> str:
        return _CONTROL.sub("", self._decoder.decode(data, final))


class HeadTailBuffer:
    """Keeps the first and last ``cap // 2`` characters of a stream, counting what falls between."""

    def __init__(self, cap: int) -> None:
        self.head_max = cap // 2
        self.tail_max = cap - self.head_max
        self.head = ""
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0

    def feed(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.head_max:
            room = self.head_max - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            if self._tail_len > 2 * self.tail_max:
                joined = "".join(self._tail)[-self.tail_max :]
                self._tail, self._tail_len = [joined], len(joined)

    @property
    def cut(self) -> int:
        """Characters dropped between head and tail."""
        return max(0, self.total - self.head_max - self.tail_max)

    def render(self) -> str:
        """Head, a marker saying how much was cut (when anything was), and tail."""
        tail = "".join(self._tail)
        if not self.cut:
            return self.head + tail
        tail = tail[-self.tail_max :]
        return (f"{self.head}\n[... {self.cut:,} characters cut from the middle of {self.total:,}; "
                f"redirect output to a file and grep it to see everything ...]\n{tail}")


class RingBuffer:
    """The last ``cap`` characters of a job's output, with a read cursor for job_output."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.text = ""
        self.total = 0
        self.read_upto = 0

    def feed(self, text: str) -> None:
        self.total += len(text)
        self.text = (self.text + text)[-self.cap :]

    def read_new(self, limit: int) -> tuple[str, int]:
        """Text written since the last read (at most ``limit``, newest kept) and how much was lost."""
        start = self.total - len(self.text)
        lost = max(0, start - self.read_upto)
        new = self.text[max(0, self.read_upto - start) :]
        if len(new) > limit:
            lost += len(new) - limit
            new = new[-limit:]
        self.read_upto = self.total
        return new, lost
