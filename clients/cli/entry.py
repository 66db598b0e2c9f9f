"""The ``ai-coding`` console script's first step: commands answered before the typer app exists.

``ai-coding --version`` and ``ai-coding serve NAME`` (what the supervisor starts for each service)
are answered here without importing typer or building the command tree (~30 ms of each start,
bench/startup.py), and so is ``ai-coding run`` in its plain forms (:mod:`clients.cli.run_fast`:
each option a word of its own, one prompt; ~40 ms of a warm run); everything else, including
every other spelling of these (options before them, ``--help``), goes to
:func:`clients.cli.main.main` unchanged.

Every other command starts with the cyclic garbage collector off, turned back on
:data:`START_GC_PAUSE_SECONDS` later (:func:`pause_gc_for_start`) with what exists then frozen
(never scanned again): a start imports a few hundred modules and allocates tens of thousands of
objects that all stay, and the collector went over them about 80 times for a few hundred garbage
objects, 17-21 ms of the ~250 ms CPU of a warm ``ai-coding run`` (its thread CPU, measured with
``gc.callbacks``).

When a command returns, the process ends with ``os._exit`` once the atexit handlers have run and
stdout and stderr are flushed (:func:`leave`): the interpreter's own shutdown tears down every
module the command imported and gRPC's core, about 25-40 ms of a warm ``ai-coding run`` on
2 cores (bench/startup.py), with nothing left to do.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading

START_GC_PAUSE_SECONDS = 2.0
"""How long a command runs before the cyclic garbage collector is back on: a warm ``run`` is done
by then on a loaded machine too, and a process that lives on (the REPL, the editor server) gets it back while it still
holds its start's objects and little else."""


def fast_path(args: list[str]) -> str:
    """``version`` or ``serve`` when ``args`` is exactly one of the two commands answered here, else ""."""
    if args in (["--version"], ["-V"]):
        return "version"
    if len(args) == 2 and args[0] == "serve" and args[1] in ("loop", "tools", "memory", "mcp_gateway"):
        return "serve"
    return ""


def main() -> None:
    args = sys.argv[1:]
    how = fast_path(args)
    if how == "version":
        from services.kernel import __version__

        print(f"ai-coding {__version__}")
        return
    if how == "serve":
        import importlib

        from services.kernel.server import run_service

        module = importlib.import_module(f"services.{args[1]}.main")
        sys.exit(run_service(module.build, args[1]))
    pause_gc_for_start()
    if args[:1] == ["run"]:
        from clients.cli import run_fast

        options = run_fast.parse(args[1:])
        if options is not None:
            from clients.cli.run_command import run_command

            try:
                code = run_command(options)
            except SystemExit as stop:
                leave(stop.code)
            leave(code)
    from clients.cli.main import main as full

    try:
        full()
    except SystemExit as stop:
        leave(stop.code)
    leave(0)


def pause_gc_for_start(seconds: float = START_GC_PAUSE_SECONDS) -> None:
    """Turn the cyclic garbage collector off now and back on after ``seconds`` (a daemon timer:
    it never holds the process up), every object made so far frozen first: the start's modules,
    classes and functions stay for the process's life, and scanning them once collections resume
    cost more than the pause saved. Reference counting frees everything else meanwhile; a cycle
    made during the pause stays (a few hundred objects in a warm ``run``)."""
    gc.disable()
    timer = threading.Timer(seconds, _resume_gc)
    timer.daemon = True
    timer.name = "gc-after-start"
    timer.start()


def _resume_gc() -> None:
    gc.freeze()
    gc.enable()


def exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` ends a process with (None is 0; a message prints and is 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def leave(code: object) -> None:
    """End the process with ``code`` as ``sys.exit`` would, without the interpreter's teardown.

    The atexit handlers still run (the client's channels and event loop close there, logging
    flushes); stdout and stderr are flushed first, and when that fails (the reader left) the
    process exits the ordinary way, as it does when a thread of its own is still running."""
    status = exit_status(code)
    busy = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        busy.append(threading.current_thread())
    if busy:
        raise SystemExit(status)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


if __name__ == "__main__":
    main()
