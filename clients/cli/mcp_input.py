"""MCP in what the user types: ``/server:prompt args`` runs a server's prompt, ``@server:uri``
attaches one of its resources (as Claude Code does).

``/library:summarize dune style=brief`` becomes the prompt's text (``prompts/get``); arguments are
``key=value`` words, or bare words taken in the order the prompt declares them. ``@library:library://guide``
reads the resource (``resources/read``) and sends it with the input like an ``@file``. Parsing is
pure; :func:`expand` asks the gateway (any object with the :class:`Gateway` methods).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from clients.cli import views
from clients.cli.attachments import MAX_TEXT_BYTES, TEXT_TYPE, Attachment

_PROMPT = re.compile(r"^/([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+)(?:\s+(.*))?$", re.S)
_RESOURCE = re.compile(r"(?<![\w@])@([A-Za-z0-9_.-]+):([A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]+)")


class McpInputError(ValueError):
    """A prompt command or resource mention that cannot be used; the message says what to do."""


class Gateway(Protocol):
    async def prompts(self, server: str) -> views.ToolResult: ...

    async def prompt(self, server: str, name: str, arguments_json: str) -> views.ToolResult: ...

    async def read_resource(self, server: str, uri: str) -> views.ToolResult: ...


@dataclass(frozen=True)
class PromptCommand:
    server: str
    name: str
    args: str = ""


@dataclass(frozen=True)
class PromptArg:
    name: str
    required: bool = False


def prompt_command(text: str) -> PromptCommand | None:
    """``/server:prompt rest`` as its parts (None: not a prompt command)."""
    match = _PROMPT.match(text.strip())
    return PromptCommand(match.group(1), match.group(2), (match.group(3) or "").strip()) if match else None


def resource_mentions(text: str) -> list[tuple[str, str]]:
    """``(server, uri)`` of each ``@server:scheme://...`` in ``text``, once each, in order."""
    found: list[tuple[str, str]] = []
    for match in _RESOURCE.finditer(text):
        pair = (match.group(1), match.group(2).rstrip(".,;:!?)"))
        if pair not in found:
            found.append(pair)
    return found


def prompt_arguments(args: str, declared: Sequence[PromptArg]) -> dict[str, str]:
    """``key=value`` words by name, bare words by the declared order; a required one left out,
    an unknown name or one bare word too many is an error naming the prompt's arguments."""
    try:
        words = shlex.split(args)
    except ValueError as err:
        raise McpInputError(f"cannot read the arguments ({err}); quote values with spaces") from None
    names = [a.name for a in declared]
    usage = " ".join(f"{a.name}=…" + ("" if a.required else "?") for a in declared) or "(no arguments)"
    out: dict[str, str] = {}
    bare = iter(names)
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            out[key] = value
            continue
        if sep and key.isidentifier():
            raise McpInputError(f"the prompt has no argument {key!r}; it takes: {usage}")
        name = next((n for n in bare if n not in out), None)
        if name is None:
            raise McpInputError(f"too many arguments; the prompt takes: {usage}")
        out[name] = word
    missing = [a.name for a in declared if a.required and a.name not in out]
    if missing:
        raise McpInputError(f"missing {', '.join(missing)}; the prompt takes: {usage}")
    return out


def declared_arguments(listing: views.ToolResult, name: str) -> list[PromptArg] | None:
    """The arguments ``prompts/list`` gives prompt ``name`` (None: no such prompt)."""
    try:
        data = json.loads(listing.data_json or "{}")
    except ValueError:
        return None
    for prompt in data.get("prompts") or []:
        if prompt.get("name") == name:
            return [PromptArg(str(a.get("name")), bool(a.get("required"))) for a in prompt.get("arguments") or []]
    return None


def prompt_text(result: views.ToolResult) -> str:
    """The filled prompt as the user's input: its messages' text, one after another."""
    try:
        messages = json.loads(result.data_json or "{}").get("messages") or []
    except ValueError:
        messages = []
    return "\n\n".join(str(m.get("text", "")) for m in messages) or result.output


@dataclass
class Expanded:
    """The input to send and the resources to attach to it."""

    text: str
    attachments: list[Attachment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def wants_gateway(text: str) -> bool:
    """Whether :func:`expand` has anything to ask the gateway."""
    return prompt_command(text) is not None or bool(resource_mentions(text))


async def expand(text: str, gateway: Gateway) -> Expanded:
    """Run a prompt command and read the mentioned resources; raises McpInputError."""
    out = Expanded(text)
    command = prompt_command(text)
    if command is not None:
        listing = await gateway.prompts(command.server)
        if not listing.ok:
            raise McpInputError(f"/{command.server}:{command.name}: {listing.error.message or listing.output}")
        declared = declared_arguments(listing, command.name)
        if declared is None:
            raise McpInputError(f"server {command.server!r} has no prompt {command.name!r}; "
                                f"`ai-coding mcp prompts {command.server}` lists them")
        arguments = prompt_arguments(command.args, declared)
        filled = await gateway.prompt(command.server, command.name, json.dumps(arguments))
        if not filled.ok:
            raise McpInputError(f"/{command.server}:{command.name}: {filled.error.message or filled.output}")
        out.text = prompt_text(filled)
        out.notes.append(f"ran prompt {command.server}:{command.name}")
    for server, uri in resource_mentions(text):
        read = await gateway.read_resource(server, uri)
        if not read.ok:
            raise McpInputError(f"@{server}:{uri}: {read.error.message or read.output}")
        data = read.output.encode("utf-8")
        out.attachments.append(Attachment(f"{server}:{uri}", TEXT_TYPE, data[:MAX_TEXT_BYTES],
                                          truncated=len(data) > MAX_TEXT_BYTES))
    return out


def expand_with_services(setup: object, text: str) -> Expanded:
    """:func:`expand` against the running MCP gateway of ``setup`` (a ``control.Setup``), started
    when nothing serves; for ``ai-coding run``."""
    from clients.cli import connection, control
    from clients.cli.connection.services import McpClient

    assert isinstance(setup, control.Setup)
    control.ensure_running(setup, ["mcp_gateway"], quiet=True)

    async def call() -> Expanded:
        client = McpClient(setup.endpoints["mcp_gateway"])
        try:
            return await expand(text, client)
        finally:
            await client.close()

    return connection.run(call())


_TYPING_ARGUMENT = re.compile(r"^/([A-Za-z0-9_.-]+):([A-Za-z0-9_.-]+)\s+(?:.*\s)?([A-Za-z_][\w-]*)=(\S*)$", re.S)


def argument_being_typed(text: str) -> tuple[str, str, str, str] | None:
    """``(server, prompt, argument, typed)`` while the last word of a prompt command is ``key=...``."""
    match = _TYPING_ARGUMENT.match(text)
    return (match.group(1), match.group(2), match.group(3), match.group(4)) if match else None


def completion_values(result: views.ToolResult) -> list[str]:
    """The values of a CompletePrompt answer, quoted for the command line where needed."""
    try:
        values = json.loads(result.data_json or "{}").get("values") or []
    except ValueError:
        return []
    return [shlex.quote(str(v)) for v in values] if result.ok else []
