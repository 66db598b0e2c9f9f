"""What a planning turn and a plan step are told (their whole history: one seed message)."""

from __future__ import annotations

from services.loop.core.tasks import TaskItem, TaskState, render_items


def planning_prompt(topic: str) -> str:
    """The planning turn's seed."""
    return (
        f"[plan] Topic: {topic}\n\n"
        "Write a plan for this topic with todo_write: set `goal` to it and `add` the steps in order "
        "(`depends_on` where one step needs another). Give a step a `verify` shell command when its result "
        "can be checked (exit code 0 means done), e.g. a test that must pass. Do not do the work now: after "
        "this turn each step runs on its own. Reply with one line once the list is written."
    )


def step_seed(state: TaskState, item: TaskItem, index: int, total: int) -> str:
    """A step's seed: the goal, the plan's current state and this item's acceptance."""
    acceptance = (f"Acceptance: the harness runs `{item.verify}` when you stop; it must exit 0." if item.verify
                  else "Acceptance: none to run; mark the item completed with todo_write when it is done.")
    return (
        f"[plan step {index}/{total}] Goal: {state.goal}\n\n"
        f"Plan state:\n{render_items(state)}\n\n"
        f"Your item: {item.id}. {item.content}\n{acceptance}\n\n"
        "Work only on this item (the others have their own steps). When it is done, mark it completed with "
        "todo_write and stop with one line saying what you did."
    )
