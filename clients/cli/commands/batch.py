"""``ai-coding batch fetch | run | collect``: many headless tasks, one workspace each.

``fetch`` and ``run`` are what a Kubernetes Indexed Job's pod runs (deploy/k8s/batch/): the
task of its completion index, from the tasks file. ``collect DIR`` prints the summary table of
the result folders copied out of the results volume.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from clients.cli.commands.common import fail

app = typer.Typer(name="batch", no_args_is_help=True,
                  help="Batch work: fetch a task's repository, run it headless, collect the results.")

TasksOpt = typer.Option(..., "--tasks", help="The tasks file: a YAML list of {id, repo, commit, prompt}.")
IndexOpt = typer.Option(..., "--index", help="Which task (the Job's completion index, from 0).")
WorkspaceOpt = typer.Option(..., "--workspace", "-w", help="The task's own workspace (empty before fetch).")
ResultsOpt = typer.Option(..., "--results", help="The folder this task's result goes to.")
DirArg = typer.Argument(..., help="The copied results volume (one folder per task).")
JsonOpt = typer.Option(False, "--json", help="Print the rows as one JSON list.")


@app.command("fetch")
def fetch_cmd(tasks: Path = TasksOpt, index: int = IndexOpt, workspace: Path = WorkspaceOpt) -> None:
    """Check the task's repository out at its commit into the empty WORKSPACE."""
    from clients.cli.batch import runner
    from clients.cli.batch.tasks import BatchError, load_tasks, task_at

    try:
        task = task_at(load_tasks(tasks), index)
        head = runner.fetch(task, workspace)
    except BatchError as err:
        raise fail("batch fetch", str(err)) from None
    print(f"task {index} ({task.id}): {task.repo} at {head} in {workspace}")


@app.command("run")
def run_cmd(tasks: Path = TasksOpt, index: int = IndexOpt, workspace: Path = WorkspaceOpt,
            results: Path = ResultsOpt) -> None:
    """Run the task with `ai-coding run --json` and write its result folder.

    Exits 0 once the result is written, whatever the turn's outcome (result.json holds the run's
    exit status), so a Job retries only a task that left no result.
    """
    from clients.cli.batch import runner
    from clients.cli.batch.tasks import BatchError, load_tasks, task_at

    try:
        task = task_at(load_tasks(tasks), index)
        record = runner.run_task(task, index, workspace.resolve(), results)
    except BatchError as err:
        raise fail("batch run", str(err)) from None
    print(f"task {index} ({task.id}): exit {record.exitStatus}, {record.filesChanged} file(s) changed, "
          f"result in {results}")


@app.command("collect")
def collect_cmd(directory: Path = DirArg, as_json: bool = JsonOpt) -> None:
    """Print one row per task (exit status, turn status, files and lines changed, final text).

    Exits 0 when every task completed, 1 when any did not or left no result.
    """
    from clients.cli.batch.results import read_results, summary_json, summary_lines
    from clients.cli.batch.tasks import BatchError

    try:
        rows = read_results(directory)
    except BatchError as err:
        raise fail("batch collect", str(err)) from None
    print(json.dumps(summary_json(rows), indent=2) if as_json else "\n".join(summary_lines(rows)))
    raise typer.Exit(0 if all(r.exit_status == 0 for r in rows) else 1)
