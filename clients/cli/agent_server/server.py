"""``ai-coding mcp serve``: the agent as an MCP server (stdio, or Streamable HTTP on localhost).

One tool, ``run_task``: a turn of the agent in a workspace the user handed to the server, in a
permission mode the caller cannot raise above the user's. The turn runs on the loop service
(gRPC, as ``ai-coding run`` does); its events go out as progress notifications, its final text
and the files it changed come back as the result, and a ``notifications/cancelled`` from the
caller interrupts the turn. This module imports the ``mcp`` SDK: only the ``serve`` command's
body imports it (``ai-coding --version`` must not).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.shared.exceptions import MCPError

from clients.cli import views
from clients.cli.agent_server import policy
from clients.cli.agent_server.turns import TaskRunner
from services.kernel import __version__

TOOL = "run_task"
# What an HTTP caller whose stream dropped waits before reconnecting (the SSE ``retry`` field).
RETRY_MS = 1000
LOG_LEVELS: tuple[types.LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert",
                                                "emergency")
INSTRUCTIONS = (
    "ai-coding is a terminal coding agent. Hand it a task with the run_task tool: it works in the "
    "workspace (reading, editing, running commands in its sandbox) and answers with its final text "
    "and the files it changed. Pass session_id from an earlier result to continue that conversation."
)


@dataclass
class ServeOptions:
    """What the user started the server with (the caller cannot change these)."""

    roots: Sequence[Path]
    ceiling: policy.Mode
    model: str = ""
    log_level: list[types.LoggingLevel] = field(default_factory=lambda: ["info"])


def tool_definition(options: ServeOptions) -> types.Tool:
    modes = [m.label for m in policy.Mode if m <= options.ceiling]
    return types.Tool(
        name=TOOL,
        title="Run a coding task",
        description=(
            "Run one turn of the ai-coding agent: it reads and edits files and runs commands in the "
            f"workspace, then answers. Workspaces: {', '.join(str(r) for r in options.roots)}. Permission "
            f"modes up to {options.ceiling.label} ({', '.join(modes)}; readonly = no edits or commands "
            "that change anything; confirm = changes need your approval, asked through elicitation, "
            "refused when the client cannot answer one; auto = changes run without asking). Progress "
            "notifications carry the agent's steps; cancelling the request interrupts the turn."),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "What the agent should do."},
                "workspace": {"type": "string",
                              "description": "Directory to work in: one of the workspaces above or inside "
                                             "one (default: the first)."},
                "permission_mode": {"type": "string", "enum": modes,
                                    "description": f"At most {options.ceiling.label} (the default)."},
                "session_id": {"type": "string",
                               "description": "Continue this session (from an earlier result)."},
            },
            "required": ["prompt"],
        },
        output_schema={
            "type": "object",
            "properties": {
                "status": {"type": "string"}, "text": {"type": "string"}, "session_id": {"type": "string"},
                "permission_mode": {"type": "string"},
                "changed_files": {"type": "array", "items": {
                    "type": "object", "properties": {"path": {"type": "string"}, "change": {"type": "string"}},
                    "required": ["path", "change"]}},
                "changed_files_complete": {"type": "boolean"},
                "notes": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["status", "text", "session_id", "permission_mode", "changed_files"],
        },
        annotations=types.ToolAnnotations(title="Run a coding task", read_only_hint=options.ceiling == policy.Mode.READONLY,
                                          destructive_hint=options.ceiling != policy.Mode.READONLY,
                                          open_world_hint=True),
    )


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build_server(options: ServeOptions) -> Server[Any]:
    """The low-level SDK server with ``run_task``, ``logging/setLevel`` and ping."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool_definition(options)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; this server offers {TOOL}")
        args = dict(params.arguments or {})
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return error_result("prompt is empty; say what the agent should do")
        try:
            grant = policy.grant_mode(str(args.get("permission_mode") or ""), options.ceiling)
            place = policy.place_task(str(args.get("workspace") or ""), options.roots)
        except policy.TaskInputError as err:
            return error_result(str(err))
        runner = TaskRunner(place, grant, model=options.model, session_id=str(args.get("session_id") or ""),
                            progress=_Progress(ctx, options), approve=_approver(ctx))
        report = await runner.run(prompt)
        return types.CallToolResult(content=[types.TextContent(type="text", text=report.summary())],
                                    structured_content=report.structured(), is_error=not report.ok)

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        options.log_level[:] = [params.level]
        return types.EmptyResult()

    with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28, still spoken by 2025 clients
        warnings.simplefilter("ignore")
        server: Server[Any] = Server("ai-coding", version=__version__, title="ai-coding agent",
                                     instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool,
                                     on_set_logging_level=set_level)
    return server


class _Progress:
    """Sends a turn's events as ``notifications/progress`` (and warnings as log messages)."""

    def __init__(self, ctx: Any, options: ServeOptions) -> None:
        self.ctx = ctx
        self.options = options
        self.count = 0

    async def __call__(self, event: views.Event) -> None:
        message = policy.progress_message(event)
        if message is None:
            return
        self.count += 1
        with contextlib.suppress(Exception):  # a caller that went away must not end the turn
            await self.ctx.session.report_progress(float(self.count), None, message)
        if isinstance(event.body, views.Degraded | views.Notice):
            level: types.LoggingLevel = "warning" if isinstance(event.body, views.Degraded) else "info"
            if LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.options.log_level[0]):
                with contextlib.suppress(Exception), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await self.ctx.session.send_log_message(level, message, "ai-coding",
                                                            related_request_id=self.ctx.request_id)


def _approver(ctx: Any) -> Any:
    """Asks the caller to allow one WARN-level call (``confirm`` mode), through elicitation when its
    client can answer one; a client that cannot gets a refusal the agent sees."""

    async def approve(request: views.ApprovalRequested) -> tuple[views.Decision, str]:
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return views.Decision.DENY, (f"refused {request.tool}: it needs approval and this MCP client cannot "
                                         "answer elicitations; ask again with permission_mode auto if the user "
                                         "allows it")
        schema = {"type": "object", "properties": {"allow": {
            "type": "boolean", "title": f"Allow {request.tool}?", "default": False}}, "required": ["allow"]}
        text = f"ai-coding wants to run {request.tool}: {request.reason or request.arguments_json}"
        try:
            answer = await ctx.session.elicit_form(text, schema, related_request_id=ctx.request_id)
        except Exception as err:
            return views.Decision.DENY, f"refused {request.tool}: could not ask for approval ({err})"
        if answer.action == "accept" and (answer.content or {}).get("allow") is True:
            return views.Decision.ALLOW_ONCE, ""
        return views.Decision.DENY, f"refused {request.tool}: the caller did not allow it"

    return approve


async def serve_stdio(options: ServeOptions) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(options)
    init = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read, write):
        await server.run(read, write, init)


async def serve_http(options: ServeOptions, host: str, port: int) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp``; on localhost the SDK checks Host and Origin
    (DNS rebinding)."""
    import uvicorn

    from clients.cli.agent_server.events import MemoryEventStore

    server = build_server(options)
    app = server.streamable_http_app(host=host, event_store=MemoryEventStore(), retry_interval=RETRY_MS)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    print(f"ai-coding mcp serve: listening on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve()


def run(options: ServeOptions, http: tuple[str, int] | None) -> None:
    if http is None:
        anyio.run(serve_stdio, options)
    else:
        anyio.run(serve_http, options, *http)



