"""Our resources-and-prompts MCP test server (official SDK, stdio): a small library.

Instructions: how to use it (they reach the model through the catalog).
Resources: library://guide (text), library://logo (binary); template library://books/{title}.
Prompt: summarize(title, style) with completion of ``title`` and ``style`` (completion/complete).
Tools: find_book(title); shelve(title), which adds a tool ``read_<title>`` and sends
``notifications/tools/list_changed``; log_something(text), which sends a log message at each
level from debug to error (the client's logging/setLevel decides which arrive).

    python tests/mcp_servers/library_server.py
"""

from __future__ import annotations

import base64
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)

BOOKS = {"dune": "Dune, by Frank Herbert: a desert planet and its spice.",
         "emma": "Emma, by Jane Austen: a matchmaker in Highbury.",
         "ubik": "Ubik, by Philip K. Dick: reality decays in a spray can."}
STYLES = ("brief", "detailed", "bullet points")
INSTRUCTIONS = ("The library server knows three books (dune, emma, ubik). Look a title up with find_book "
                "before summarizing it; read library://guide for the lending rules.")

server = MCPServer("library", instructions=INSTRUCTIONS, log_level="WARNING")


@server.resource("library://guide", name="guide", description="Lending rules", mime_type="text/plain")
def guide() -> str:
    return "Lending rules: three books at a time, for two weeks. Overdue books cost nothing but an apology."


@server.resource("library://logo", name="logo", description="The library's logo", mime_type="image/png")
def logo() -> bytes:
    return base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@server.resource("library://books/{title}", name="book", description="One book's card", mime_type="text/plain")
def book(title: str) -> str:
    return BOOKS.get(title, f"no book called {title}")


@server.prompt(description="Summarize one book in a style")
def summarize(title: str, style: str = "brief") -> list[UserMessage]:
    return [UserMessage(f"Summarize the book '{title}' ({BOOKS.get(title, 'unknown')}) in a {style} style.")]


@server.completion()  # type: ignore[untyped-decorator,no-untyped-call]
async def complete(ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument,
                   context: CompletionContext | None) -> Completion | None:
    pool = STYLES if argument.name == "style" else tuple(BOOKS)
    return Completion(values=[v for v in pool if v.startswith(argument.value)], total=None, has_more=False)


@server.tool()
def find_book(title: str) -> str:
    """Look a book up by its title."""
    return BOOKS.get(title.lower(), f"no book called {title}")


@server.tool()
async def shelve(title: str, ctx: Context) -> str:
    """Put a book on the shelf: adds a tool read_<title> (the tool list changes)."""
    name = f"read_{title.lower()}"

    def read() -> str:
        return f"reading {title}: {BOOKS.get(title.lower(), 'a blank page')}"

    server.add_tool(read, name=name, description=f"Read {title} aloud.")
    await ctx.session.send_tool_list_changed()
    return f"shelved {title}; {name} is a new tool"


LEVELS = ("debug", "info", "notice", "warning", "error")
wanted = {"level": "debug"}  # what the client asked for with logging/setLevel


async def set_level(ctx: object, params: SetLevelRequestParams) -> EmptyResult:
    wanted["level"] = params.level
    return EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


@server.tool()
async def log_something(text: str, ctx: Context) -> str:
    """Send one log message per level from debug to error, those the client asked for."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in ("debug", "info", "warning", "error"):
            if LEVELS.index(level) >= LEVELS.index(wanted["level"]):
                await ctx.log(level, f"{level}: {text}", logger_name="library")
    return f"logged at {wanted['level']} and above"


if __name__ == "__main__":
    server.run("stdio")
