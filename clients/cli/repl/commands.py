"""The REPL's slash commands: the client's own (/diff, /cost, /last, /plan, /resume...), /memory and /mcp
straight to their services, and every other one answered by the loop."""

from __future__ import annotations

import json

from clients.cli.connection.loop import ClientError
from clients.cli.cost import cost_report
from clients.cli.diffview import diff_command
from clients.cli.render import last_tool_text
from clients.cli.repl import rewind_picker
from clients.cli.repl.host import ReplHost
from clients.cli.repl.service_commands import mcp_command, memory_command
from clients.cli.slash import REVIEW_PROMPT, SlashCommand, help_text
from clients.cli.textsafe import literal


class SlashCommands:
    """The commands of one REPL."""

    def __init__(self, repl: ReplHost) -> None:
        self.repl = repl

    async def run(self, cmd: SlashCommand) -> str:
        """Run one command; "quit" when the REPL should exit, else ""."""
        name, args = cmd.name, cmd.args
        if name == "quit":
            return "quit"
        if name == "help":
            self.repl.print(literal(help_text()))
        elif name == "last":
            last = self.repl.renderer.last_tool
            self.repl.print(literal(last_tool_text(last)) if last else literal("no tool call yet", "dim"))
        elif name == "diff":
            self.repl.print(diff_command(self.repl.renderer.diffs, args))
        elif name == "cost":
            budget = await self.repl.client.run_command(self.repl.session_id, "budget", "")
            self.repl.print(literal("\n".join(cost_report(self.repl.renderer.last_usage, budget.data_json))))
        elif name == "thinking":
            reasoning = self.repl.renderer.last_reasoning
            self.repl.print(literal(reasoning, "dim italic") if reasoning else literal("no reasoning yet", "dim"))
        elif name == "clear":
            if not self.repl.busy():
                await self.repl.switch_to(await self.repl.client.open_session(self.repl.workspace, ""), redraw=False)
        elif name == "resume":
            await self.repl.resume_session(args)
        elif name == "review":
            self.repl.send_input(REVIEW_PROMPT)
        elif name == "plan":
            self._plan(args)
        elif name in ("memory", "mcp"):
            await self._service_command(name, args)
        elif rewind_picker.opens(name, args):
            await rewind_picker.run(self.repl)
        else:
            await self._loop_command(name, args)
        return ""

    def _plan(self, topic: str) -> None:
        """``/plan <topic>`` plans and runs the steps; a bare ``/plan`` asks for the topic first."""
        if self.repl.turn_running:
            self.repl.print(literal("a turn is running: /plan when it has ended", "yellow"))
        elif not topic:
            self.repl.asking_plan = True
            self.repl.print(literal("What should I plan? (type the topic; Enter alone cancels)", "bold"))
        else:
            self.repl.send_plan(topic)

    async def _service_command(self, name: str, args: str) -> None:
        """``/memory`` and ``/mcp``: straight to the memory service / MCP gateway, not through the loop."""
        if self.repl.services is None:
            self.repl.print(literal(f"/{name} needs the {name} service's endpoint; this client was started "
                                    "without it", "yellow"))
            return
        if name == "memory":
            out = await memory_command(self.repl.services.memory, args)
            self.repl.confirm = out.confirm
        else:
            out, names = await mcp_command(self.repl.services.mcp, args, self.repl.note, self.repl.session_id)
            self.repl.mcp_names = names or self.repl.mcp_names
        self.repl.show(out)

    async def _loop_command(self, name: str, args: str) -> None:
        try:
            response = await self.repl.client.run_command(self.repl.session_id, name, args)
        except ClientError as err:
            if err.reason in ("unimplemented", "unknown_command", "not_implemented"):
                self.repl.print(literal(f"/{name} is not available in this version", "dim"))
                return
            raise
        if _data_error(response.data_json) == "unknown_command":
            self.repl.print(literal(f"/{name} is not available in this version", "dim"))
            return
        self.repl.print(literal(response.text.rstrip("\n") or f"/{name}: done"))


def _data_error(data_json: str) -> str:
    """The ``error`` field of a command's JSON answer ("" when none or not JSON)."""
    try:
        data = json.loads(data_json or "{}")
    except json.JSONDecodeError:
        return ""
    return str(data.get("error", "")) if isinstance(data, dict) else ""
