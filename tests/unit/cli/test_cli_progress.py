"""The running turn's status line: step, what it waits for and how long, the keys, background children."""

from __future__ import annotations

import io
import threading

from clients.cli import views
from clients.cli.progress import REPL_KEYS, Progress, TerminalTicker, elapsed


def ev(body: views.Body, scope: views.SubagentScope | None = None) -> views.Event:
    return views.Event(seq=1, session_id="s", turn=1, body=body, scope=scope)


def test_elapsed_ticks_in_whole_seconds_then_minutes() -> None:
    assert [elapsed(s) for s in (0.4, 4.9, 65, 3725)] == ["0s", "4s", "1m05s", "1h02m"]


def test_a_running_call_shows_its_step_title_elapsed_and_the_keys() -> None:
    p = Progress()
    p.feed(ev(views.TurnStarted(turn=1)), now=100.0)
    p.feed(ev(views.ModelStepFinished(step=1)), now=101.0)
    p.feed(ev(views.ToolStarted(call_id="c1", tool="bash", title="Running · sleep 6")), now=101.0)
    assert p.line(101.5) == ""  # under a second: nothing drawn for a fast call
    assert p.line(105.2) == "step 1 · Running · sleep 6 · 4s · turn 5s · Ctrl-C interrupts"


def test_after_the_calls_the_line_waits_for_the_models_next_step() -> None:
    p = Progress(keys=REPL_KEYS)
    p.feed(ev(views.TurnStarted(turn=1)), now=0.0)
    assert p.line(2.0) == f"step 1 · waiting for the model · 2s · turn 2s · {REPL_KEYS}"
    p.feed(ev(views.ModelStepFinished(step=1)), now=3.0)
    p.feed(ev(views.ToolStarted(call_id="a", tool="read", title="Reading · x")), now=3.0)
    p.feed(ev(views.ToolStarted(call_id="b", tool="read", title="Reading · y")), now=3.1)
    assert p.line(5.0).startswith("step 1 · Reading · x (+1 more) · 2s")
    p.feed(ev(views.ToolFinished(result=views.ToolResult(call_id="a"))), now=5.0)
    p.feed(ev(views.ToolFinished(result=views.ToolResult(call_id="b"))), now=5.0)
    assert p.line(7.0).startswith("step 2 · waiting for the model · 2s · turn 7s")


def test_nothing_shows_while_an_approval_waits_or_after_the_turn() -> None:
    p = Progress()
    p.feed(ev(views.TurnStarted(turn=1)), now=0.0)
    p.feed(ev(views.ApprovalRequested(request_id="r", tool="bash")), now=1.0)
    assert p.line(5.0) == ""
    p.feed(ev(views.ApprovalResolved(request_id="r")), now=5.0)
    assert p.line(7.0) != ""
    p.feed(ev(views.TurnFinished()), now=8.0)
    assert p.line(10.0) == ""


def test_a_background_child_has_a_one_line_status_until_it_is_done() -> None:
    p = Progress()
    scope = views.SubagentScope(run_id="r1", name="tests")
    p.feed(ev(views.SubagentStarted(run_id="r1", background=True), scope=scope), now=0.0)
    assert p.line(40.0) == "background: tests 40s"
    p.feed(ev(views.BackgroundTaskDone(run_id="r1")), now=41.0)
    assert p.line(42.0) == ""


def test_the_terminal_ticker_erases_its_line_before_any_output_and_at_close() -> None:
    out = io.StringIO()
    rendered: list[str] = []
    gate = threading.Event()

    def render(event: views.Event) -> None:
        rendered.append(out.getvalue())
        gate.set()

    ticker = TerminalTicker(render, out, mid_line=lambda: False, interval=0.05)
    ticker.sink(ev(views.TurnStarted(turn=1)))
    ticker.progress.turn_started = ticker.progress.waiting_since = 0.0  # a turn waiting for ages
    for _ in range(100):
        if "waiting for the model" in out.getvalue():
            break
        threading.Event().wait(0.02)
    assert "⋯ step 1 · waiting for the model" in out.getvalue()
    ticker.sink(ev(views.TextDelta(text="hi")))
    assert rendered[-1].endswith("\r\x1b[2K")  # the status line was gone when the event was rendered
    ticker.close()
    assert out.getvalue().endswith("\r\x1b[2K")


def _job_result(tool: str, status: str, job_id: str = "job-1", runtime: float = 0.0, code: int | None = None
                ) -> views.ToolResult:
    import json

    return views.ToolResult(call_id=f"c-{tool}", tool=tool, ok=True, data_json=json.dumps(
        {"job_id": job_id, "name": "npm run dev", "command": "npm run dev", "status": status, "exit_code": code,
         "runtime_s": runtime}))


def test_a_started_job_is_on_the_background_line_until_a_result_or_a_listing_says_it_ended() -> None:
    from clients.cli.progress import JobState

    p = Progress()
    p.feed(ev(views.ToolFinished(result=_job_result("job_start", "running"))), now=10.0)
    assert p.in_background and p.line(22.0) == "background: $ npm run dev 12s"
    p.feed(ev(views.ToolFinished(result=_job_result("job_output", "running", runtime=5))), now=15.0)
    assert p.line(22.0) == "background: $ npm run dev 12s"  # the first sighting keeps its start
    ended = JobState.of({"job_id": "job-1", "name": "npm run dev", "status": "exited", "exit_code": 0,
                         "runtime_s": 13.2})
    assert ended is not None and p.job_seen(ended, now=23.0) and not p.in_background and p.line(24.0) == ""
    assert ended.ended_line() == "⟲ background job job-1 (npm run dev) exited 0 · 13.2s"
    assert not p.job_seen(ended, now=24.0)  # said once
    refused = JobState.of({"job_id": "job-2", "command": "pip install x", "status": "exited", "exit_code": 1,
                           "runtime_s": 2.0, "egress_refused": ["pypi.org:443", "files.pythonhosted.org:443"]})
    assert refused is not None and refused.ended_line() == (
        "⟲ background job job-2 (pip install x) exited 1 · 2.0s · network refused: pypi.org:443, "
        "files.pythonhosted.org:443 (/network allow pypi.org allows it for this session)")


def test_a_stopped_job_leaves_the_line_and_a_job_started_elsewhere_joins_it_with_its_age() -> None:
    from clients.cli.progress import JobState

    p = Progress()
    p.feed(ev(views.ToolFinished(result=_job_result("job_start", "running"))), now=0.0)
    p.feed(ev(views.ToolFinished(result=_job_result("job_stop", "stopped", code=-9))), now=1.0)
    assert not p.in_background
    other = JobState.of({"job_id": "job-2", "command": "sleep 100", "status": "running", "runtime_s": 30})
    assert other is not None and not p.job_seen(other, now=100.0)
    assert p.line(100.0) == "background: $ sleep 100 30s"
    failed = views.ToolResult(call_id="x", tool="job_start", ok=False, data_json='{"job_id": "job-3"}')
    p.feed(ev(views.ToolFinished(result=failed)), now=100.0)
    assert list(p.jobs) == ["job-2"]
