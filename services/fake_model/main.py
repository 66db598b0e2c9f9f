"""``ai-coding fake-model``: run the scripted model server as a process until SIGTERM or ^C.

The CLI wires its Typer command to ``main``; ``python -m services.fake_model``
works too. The first stdout line is the base URL (ending in ``/v1``) so a
parent process can read it; bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from services.fake_model.errors import FakeModelError
from services.fake_model.server import FakeModelServer


def build_parser() -> argparse.ArgumentParser:
    """The command-line options of the fake model."""
    parser = argparse.ArgumentParser(prog="ai-coding fake-model",
                                     description="Serve a scripted OpenAI-compatible model over HTTP.")
    parser.add_argument("--script", help="YAML or JSON script file (format: services.fake_model docs).")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default 0: any free port)")
    parser.add_argument("--api-key", default=None, help="require this bearer key (default: accept any)")
    parser.add_argument("--context-window", type=int, default=None,
                        help="refuse requests over this many tokens with the context_length error "
                             "(default: the script's context_window, else unlimited)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; returns the process exit code."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    try:
        server = FakeModelServer(args.script, host=args.host, port=args.port, api_key=args.api_key,
                                 context_window=args.context_window).start()
    except FakeModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        print(server.url, flush=True)
        left = server.remaining()
        print(f"fake model at {server.url}: {'unbounded' if left is None else left} scripted replies; "
              "stop with ^C", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
