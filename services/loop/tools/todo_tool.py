"""``todo_write`` as one session's tool: it changes that session's task state and reports the list.

The semantics of a call (all or nothing, dependencies) are tasks.todo_write's;
this class holds the session whose state it applies them to, which is why it
is registered per session (``tool_def``) rather than listed in local_tools.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.core.sessions import Session
from services.loop.core.tasks import TODO_DESCRIPTION, TaskState, TodoArgs, todo_write
from services.loop.core.turn_events import TaskItem, TaskListUpdated
from services.loop.policy.permissions import Level
from services.loop.tools.args import define


def task_list_event(state: TaskState) -> TaskListUpdated:
    """The ``task_list_updated`` event for ``state`` (todo_write's, and the plan runner's status marks)."""
    return TaskListUpdated(goal=state.goal, items=[
        TaskItem(id=i.id, content=i.content, status=i.status, depends_on=list(i.depends_on)) for i in state.items])


class TodoTool:
    """The task list of one session."""

    def __init__(self, session: Session, enforce_dependencies: Callable[[], bool]) -> None:
        self.session = session
        self._enforce = enforce_dependencies
        """Read at each call: a re-opened idle session may take new settings."""

    def state(self) -> TaskState:
        return copy.deepcopy(self.session.task_state)

    def open_items(self) -> list[str]:
        """Contents of the items still pending, in progress or blocked."""
        return [item.content for item in self.state().open_items()]

    def tool_def(self) -> ToolDef:
        return define("todo_write", TODO_DESCRIPTION, TodoArgs, self._handle, permission=Level.ALLOW)

    async def _handle(self, ctx: ToolContext, call: ToolCall, args: TodoArgs) -> ToolOutcome:
        # The parsed arguments' shape is checked; what they mean (ids, dependencies) is todo_write's.
        result = todo_write(self.state(), dataclasses.asdict(args), enforce_dependencies=self._enforce())
        if result.ok:
            self.session.task_state = result.state
            ctx.emit(task_list_event(result.state))
        return ToolOutcome(call.id, call.name, result.ok, result.output, data=result.data,
                           error_code=result.error_code, error_message=result.output if not result.ok else "")
