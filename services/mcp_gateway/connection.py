"""The one place that talks to the ``mcp`` SDK: open a session, list tools, call one.

Local servers run over stdio (``stdio_client`` spawns the argv in its own
process group and kills the tree on exit); remote servers use streamable HTTP
(or, with ``transport: sse``, the SDK's legacy HTTP+SSE client) with the
configured headers and, when the server answers 401, OAuth through the SDK's
provider (see :mod:`services.mcp_gateway.oauth`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import warnings
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from services.kernel import __version__
from services.kernel.config import expand_vars
from services.kernel.errors import ConfigError
from services.kernel.host_process import DEFAULT_PATH, dies_with_parent, safe_path
from services.mcp_gateway.catalog import ToolEntry
from services.mcp_gateway.domain import CallOutcome, ElicitHandler, LogLine, Progress, ProgressSink
from services.mcp_gateway.errors import McpGatewayError, TransportFailure
from services.mcp_gateway.notices import DEFAULT_LEVEL, ServerNotices
from services.mcp_gateway.settings import ServerSettings
from services.mcp_gateway.stderr_tail import StderrTail
from services.mcp_gateway.tasks import call_as_task, is_task_only

log = logging.getLogger("ai_coding.mcp_gateway.connection")

# "legacy" = the initialize handshake every published server speaks; "auto" would
# first probe server/discover, which costs a round trip on each connect.
CONNECT_MODE = "legacy"
# Who we are in the initialize handshake (the SDK's default names the SDK itself).
CLIENT_INFO = types.Implementation(name="ai-coding", version=__version__)


def _client(transport: Any, notices: ServerNotices, elicit: ElicitHandler | None = None) -> Client:
    return Client(transport, mode=CONNECT_MODE, cache=None, client_info=CLIENT_INFO,
                  elicitation_callback=_elicitation_callback(elicit) if elicit is not None else None,
                  message_handler=notices.on_message, logging_callback=notices.on_log)


def _elicitation_callback(elicit: ElicitHandler) -> Any:
    """The SDK callback (it also makes the client announce the elicitation capability)."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if isinstance(params, types.ElicitRequestURLParams):
            reply = await elicit(params.message, "url", {}, params.url)
            return types.ElicitResult(action=reply.action)
        reply = await elicit(params.message, "form", dict(params.requested_schema or {}), "")
        content = dict(reply.content) if reply.action == "accept" else None
        return types.ElicitResult(action=reply.action, content=content)

    return callback


class SdkSession:
    """:class:`~services.mcp_gateway.domain.McpSession` over an SDK ``Client``."""

    def __init__(self, server: str, client: Client, notices: ServerNotices) -> None:
        self._server = server
        self._client = client
        self.notices = notices
        self.tools_changed = notices.tools_changed
        """Set when the server says its tool list changed (the supervisor lists the tools again)."""
        self.instructions = client.instructions or ""
        """What the server's ``initialize`` said about using it (for the model, in the catalog)."""
        self.task_tools: set[str] = set()
        """Tools that run only as MCP tasks (``execution.taskSupport: required``)."""

    async def start(self, level: str) -> None:
        """Ask a server that logs for messages at ``level`` and above (``logging/setLevel``)."""
        if self._client.server_capabilities.logging is not None:
            try:
                with warnings.catch_warnings():  # deprecated in 2026-07-28, what handshake-era servers speak
                    warnings.simplefilter("ignore")
                    await self._client.set_logging_level(level)  # type: ignore[arg-type]
            except MCPError as exc:
                log.info("mcp server %s refused logging/setLevel %s: %s", self._server, level, exc.message)

    async def list_tools(self) -> list[ToolEntry]:
        """All tools, following pagination (those that run only as MCP tasks are marked to run so)."""
        entries: list[ToolEntry] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._client.list_tools(cursor=cursor)
            for tool in page.tools:
                if is_task_only(tool):
                    self.task_tools.add(tool.name)
                schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
                read_only = bool(tool.annotations is not None and tool.annotations.read_only_hint)
                entries.append(ToolEntry(self._server, tool.name, tool.description or tool.title or "", schema,
                                         read_only))
            cursor = page.next_cursor
            if not cursor:
                break
        return entries

    async def call_tool(self, tool: str, arguments: dict[str, Any], on_progress: ProgressSink) -> CallOutcome:
        """One ``tools/call``; transport failures raise :class:`TransportFailure`."""
        class _Forward:
            async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
                await on_progress(Progress(progress, total, message))

        progress = _Forward()

        started = time.monotonic()
        try:
            if tool in self.task_tools:
                result = await call_as_task(self._client.session, tool, arguments,
                                            lambda n, message: on_progress(Progress(n, None, message)))
            else:
                result = await self._client.call_tool(tool, arguments, progress_callback=progress)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise TransportFailure(f"server {self._server!r} closed the connection: {exc.message}") from None
            return CallOutcome(False, f"MCP error {exc.code}: {exc.message}", error_code="mcp_tool_error",
                               error_message=exc.message, hint="Check the tool name and arguments in the catalog.",
                               duration_ms=(time.monotonic() - started) * 1000)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError,
                httpx2.TransportError) as exc:
            raise TransportFailure(f"connection to {self._server!r} broke: {describe_error(exc)}") from None
        return outcome_from_result(result, (time.monotonic() - started) * 1000)


    async def list_resources(self) -> CallOutcome:
        """Every resource the server lists, one line each."""
        return await self._guarded("resources/list", self._resources)

    async def read_resource(self, uri: str) -> CallOutcome:
        """One resource's contents (text as is, binaries summarized)."""

        async def read() -> CallOutcome:
            result = await self._client.read_resource(uri)
            parts = [contents_text(c) for c in result.contents]
            return CallOutcome(True, "\n".join(parts), {"uri": uri, "parts": len(parts)})

        return await self._guarded(f"resources/read {uri}", read)

    async def list_prompts(self) -> CallOutcome:
        """Every prompt the server lists with its arguments (* = required)."""
        return await self._guarded("prompts/list", self._prompts)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> CallOutcome:
        """The prompt's messages, each as ``role: text``."""

        async def get() -> CallOutcome:
            result = await self._client.get_prompt(name, arguments or None)
            messages = [{"role": str(m.role), "text": content_text(m.content)} for m in result.messages]
            text = "\n\n".join(f"{m['role']}: {m['text']}" for m in messages)
            return CallOutcome(True, text, {"name": name, "description": result.description or "",
                                            "messages": messages})

        return await self._guarded(f"prompts/get {name}", get)

    async def _resources(self) -> CallOutcome:
        found: list[dict[str, str]] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._client.list_resources(cursor=cursor)
            found += [{"uri": str(r.uri), "name": r.name, "mime_type": r.mime_type or "",
                       "description": r.description or ""} for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        templates = await self._templates()
        lines = [f"{r['uri']}  {r['name']}" + (f" ({r['mime_type']})" if r["mime_type"] else "")
                 + (f": {r['description']}" if r["description"] else "") for r in found]
        if templates:
            lines += ["templates (fill in the {parts} and read the URI):",
                      *(f"{t['uri_template']}  {t['name']}" + (f": {t['description']}" if t["description"] else "")
                        for t in templates)]
        return CallOutcome(True, "\n".join(lines) or f"server {self._server!r} lists no resources",
                           {"resources": found, "templates": templates})

    async def _templates(self) -> list[dict[str, str]]:
        """The server's resource templates (none when it offers no resources capability)."""
        found: list[dict[str, str]] = []
        if self._client.server_capabilities.resources is None:
            return found
        cursor: str | None = None
        for _ in range(100):
            page = await self._client.list_resource_templates(cursor=cursor)
            found += [{"uri_template": t.uri_template, "name": t.name, "description": t.description or ""}
                      for t in page.resource_templates]
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    async def complete_prompt(self, prompt: str, argument: str, value: str, context: dict[str, str]) -> CallOutcome:
        """Values the server suggests for one argument of ``prompt`` (``completion/complete``)."""

        async def complete() -> CallOutcome:
            if self._client.server_capabilities.completions is None:
                return CallOutcome(True, "", {"values": [], "has_more": False})
            result = await self._client.complete(types.PromptReference(type="ref/prompt", name=prompt),
                                                 {"name": argument, "value": value}, context_arguments=context or None)
            values = list(result.completion.values)
            return CallOutcome(True, "\n".join(values), {"values": values,
                                                         "has_more": bool(result.completion.has_more)})

        return await self._guarded(f"completion of {prompt}.{argument}", complete)

    async def _prompts(self) -> CallOutcome:
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(100):
            page = await self._client.list_prompts(cursor=cursor)
            found += [{"name": p.name, "description": p.description or "",
                       "arguments": [{"name": a.name, "required": bool(a.required)} for a in p.arguments or []]}
                      for p in page.prompts]
            cursor = page.next_cursor
            if not cursor:
                break
        lines = [f"{p['name']}({', '.join(a['name'] + ('*' if a['required'] else '') for a in p['arguments'])})"
                 + (f": {p['description']}" if p["description"] else "") for p in found]
        return CallOutcome(True, "\n".join(lines) or f"server {self._server!r} lists no prompts", {"prompts": found})

    async def _guarded(self, what: str, run: Callable[[], Awaitable[CallOutcome]]) -> CallOutcome:
        """``run`` with the SDK's failures mapped as for tool calls (a server error is a readable outcome)."""
        started = time.monotonic()
        try:
            outcome = await run()
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise TransportFailure(f"server {self._server!r} closed the connection: {exc.message}") from None
            hint = ("The server does not offer this; check `ai-coding mcp status`."
                    if exc.code == types.METHOD_NOT_FOUND else "Check the name or URI against the server's list.")
            return CallOutcome(False, f"{what} on {self._server!r}: MCP error {exc.code}: {exc.message}",
                               error_code="mcp_error", error_message=exc.message, hint=hint,
                               duration_ms=(time.monotonic() - started) * 1000)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError,
                httpx2.TransportError) as exc:
            raise TransportFailure(f"connection to {self._server!r} broke: {describe_error(exc)}") from None
        return CallOutcome(outcome.ok, outcome.output, outcome.data, duration_ms=(time.monotonic() - started) * 1000)


def contents_text(contents: Any) -> str:
    """One part of a read resource: its text, or a line describing a binary."""
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return text
    blob = getattr(contents, "blob", "") or ""
    return f"[binary {getattr(contents, 'mime_type', None) or 'data'}: {len(blob)} base64 chars]"


def content_text(block: Any) -> str:
    """Readable text of one content block (images and binaries are summarized)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(block, 'mime_type', '?')}, {len(getattr(block, 'data', '') or '')} base64 chars]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        return f"[resource {res.uri}]" + (f"\n{text}" if text else "")
    if kind == "resource_link":
        return f"[resource link {getattr(block, 'uri', '')}: {getattr(block, 'name', '')}]"
    return f"[{kind or 'unknown'} content]"


def outcome_from_result(result: types.CallToolResult, duration_ms: float) -> CallOutcome:
    """Map an SDK tool result to the model-visible outcome."""
    text = "\n".join(content_text(b) for b in result.content)
    data: dict[str, Any] = dict(result.structured_content or {})
    if result.is_error:
        return CallOutcome(False, text, data, error_code="mcp_tool_error", error_message=text[:500] or "tool error",
                           hint="The server reported an error; fix the arguments or try another tool.",
                           duration_ms=duration_ms)
    if not text and data:
        text = json.dumps(data, ensure_ascii=False)
    return CallOutcome(True, text, data, duration_ms=duration_ms)


def describe_error(exc: BaseException) -> str:
    """One line for a failed attempt (exception groups are unwrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpGatewayError):
        return exc.message
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"command not executable: {exc.filename or exc}"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, OAuthRegistrationError) and "Registration failed: 404" in str(exc):
        return (f"{str(exc).strip().splitlines()[0][:200]}: the server does not register clients; set "
                "oauth.client_id (and oauth.client_secret) of a client registered with it, e.g. "
                "`ai-coding mcp add NAME --url URL --client-id ID`")
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def expanded(values: Mapping[str, str], what: str, server: str) -> dict[str, str]:
    """``${VAR}`` references in environment/header values, expanded from the gateway's environment."""
    try:
        return {k: expand_vars(v) for k, v in values.items()}
    except ConfigError as exc:
        raise McpGatewayError(f"{what} of {server!r}: {exc.message}", hint=exc.hint,
                              reason="mcp_config_invalid") from None


def stdio_parameters(settings: ServerSettings) -> StdioServerParameters:
    """Spawn parameters; a missing program or working directory fails before spawning."""
    program = settings.command[0]
    # Checked here: behind the launcher, a program that cannot start would only say so on stderr.
    if "/" not in program:
        if shutil.which(program) is None:
            raise FileNotFoundError(2, "not found", program)
    else:
        where = os.path.join(settings.cwd or os.getcwd(), program)  # a relative one starts from cwd
        if not os.path.isfile(where):
            raise FileNotFoundError(2, "not found", program)
        if not os.access(where, os.X_OK):
            raise PermissionError(13, "not executable", program)
    if settings.cwd and not Path(settings.cwd).is_dir():
        raise McpGatewayError(f"working directory {settings.cwd} does not exist", hint="Fix `cwd`.",
                              reason="mcp_config_invalid")
    # Through a launcher: the server gets SIGKILL if this gateway dies without closing it.
    launch = dies_with_parent(settings.command)
    return StdioServerParameters(
        command=launch[0],
        args=launch[1:],
        # The SDK adds HOME, PATH, ... to this; ours go on top: nothing of the directory it starts
        # in (often a workspace) is picked up implicitly (services/kernel/host_process.py).
        env={"PATH": safe_path(os.environ.get("PATH", DEFAULT_PATH), settings.cwd), "PYTHONSAFEPATH": "1",
             **expanded(settings.environment, "environment", settings.name)},
        cwd=settings.cwd or None,
    )


@asynccontextmanager
async def open_session(settings: ServerSettings, auth: httpx2.Auth | None = None,
                       elicit: ElicitHandler | None = None,
                       log_lines: deque[LogLine] | None = None) -> AsyncIterator[SdkSession]:
    """Connect and handshake; leaving the block closes the session (and kills a local server).
    With ``elicit``, the client announces elicitation and the server's requests go to it; what the
    server logs (and a local server's stderr) is kept in ``log_lines``."""
    if settings.type == "local":
        async with _local_session(settings, elicit, log_lines) as session:
            yield session
        return
    headers = expanded(settings.headers, "headers", settings.name)
    notices = ServerNotices(settings.name, log_lines)
    if settings.transport == "sse":
        async with _client(sse_client(settings.url, headers=headers or None, auth=auth), notices, elicit) as client:
            yield await _started(SdkSession(settings.name, client, notices))
        return
    http = create_mcp_http_client(headers=headers or None, auth=auth)
    async with http:
        transport = streamable_http_client(settings.url, http_client=http)
        async with _client(transport, notices, elicit) as client:
            yield await _started(SdkSession(settings.name, client, notices))


async def _started(session: SdkSession) -> SdkSession:
    await session.start(DEFAULT_LEVEL)
    return session


@asynccontextmanager
async def _local_session(settings: ServerSettings, elicit: ElicitHandler | None,
                         log_lines: deque[LogLine] | None) -> AsyncIterator[SdkSession]:
    """A stdio session whose startup failure names the server's last stderr line."""
    params = stdio_parameters(settings)
    tail = StderrTail(settings.name, log_lines)
    ready = False
    try:
        await tail.start()
        assert tail.writer is not None
        transport: Any = stdio_client(params, errlog=tail.writer)
        notices = ServerNotices(settings.name, log_lines)
        async with _client(transport, notices, elicit) as client:
            tail.close_writer()
            ready = True
            yield await _started(SdkSession(settings.name, client, notices))
    except Exception as exc:
        if ready:
            raise
        last = await tail.last_line()
        if not last:
            raise
        raise McpGatewayError(f"{describe_error(exc)} (stderr: {last[:300]})", reason="mcp_start_failed") from None
    finally:
        tail.close()
