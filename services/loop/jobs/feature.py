"""Background jobs as a session feature: ``/jobs`` lists the session's jobs with their state.

The tools service runs the jobs and owns their table; this asks it (its ``job_list`` tool, outside
any turn: nothing the model sees) so a client can show what runs in the background and notice a
job's end without a model step.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from services.loop.core.domain import ToolOutcome
from services.loop.core.feature import Command, Feature, FeatureHost

# job_list reads an in-memory table: a second is generous, and a client polling it must not hang.
JOB_LIST_TIMEOUT_SECONDS = 5.0
_calls = itertools.count(1)


def job_lines(jobs: list[dict[str, Any]]) -> list[str]:
    """'job-1  running   12.3s  npm run dev' (exit code for an ended job), one per job."""
    lines = []
    for job in jobs:
        state = str(job.get("status", "?"))
        if job.get("exit_code") is not None and state != "running":
            state += f" {job['exit_code']}"
        lines.append(f"{job.get('job_id', '?')}  {state:<10} {float(job.get('runtime_s') or 0):>8.1f}s  "
                     f"{str(job.get('command', ''))[:80]}")
        refused = [str(target) for target in job.get("egress_refused") or []]
        if refused:  # the sandbox's proxy refused it (a job cannot ask): how the user allows each
            lines.append(f"    network refused: {', '.join(refused)} (allow for this session: "
                         f"/network allow {refused[0].removesuffix(':443')})")
    return lines


class JobsFeature(Feature):
    """``/jobs``: the session's background jobs, read from the tools service."""

    name = "jobs"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host

    def commands(self) -> dict[str, Command]:
        async def jobs(args: str) -> tuple[str, str]:
            return await self.listing()

        return {"jobs": jobs}

    async def listing(self) -> tuple[str, str]:
        """``(text, JSON {"jobs": [...]})``; an ``error`` key when the tools service did not answer."""
        outcome: ToolOutcome | None = None
        async for item in self.host.runner.call(self.host.session.id, f"jobs-list-{next(_calls)}", "job_list", "{}",
                                                JOB_LIST_TIMEOUT_SECONDS):
            if isinstance(item, ToolOutcome):
                outcome = item
        if outcome is None or not outcome.ok:
            why = outcome.error_message if outcome is not None else "no answer"
            return (f"the background jobs could not be listed: {why}",
                    json.dumps({"error": outcome.error_code if outcome else "no_answer", "jobs": []}))
        jobs = [job for job in outcome.data.get("jobs") or [] if isinstance(job, dict)]
        text = "\n".join(job_lines(jobs)) if jobs else "no background jobs in this session (job_start starts one)"
        return text, json.dumps({"jobs": jobs})
