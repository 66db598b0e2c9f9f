"""Our own MCP test server (official SDK): stdio or streamable HTTP.

Tools: echo, add, count_with_progress, crash (the process exits mid-call),
hang (never answers), fail (an ordinary tool error), whoami (environment),
client (the name and version the client announced), tally (nested arguments),
signup (asks the user for a name and a plan: MCP elicitation).
Resource: demo://notes/readme. Prompt: review(path).

    python tests/mcp_servers/demo_server.py stdio
    python tests/mcp_servers/demo_server.py http PORT
    python tests/mcp_servers/demo_server.py mute        # never answers the handshake
    python tests/mcp_servers/demo_server.py slowstart FILE   # logs its start time, serves after 1 s
"""

from __future__ import annotations

import os
import sys
import time
from typing import Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

server = MCPServer("demo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"The sum of {a} and {b} is {a + b}."


@server.tool()
async def count_with_progress(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress after each step."""
    for i in range(1, steps + 1):
        await anyio.sleep(0.05)
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
    return f"counted to {steps}"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep(3600)
    return "unreachable"


@server.tool()
def fail(message: str) -> str:
    """Raise an ordinary tool error."""
    raise ToolError(message)


@server.tool()
def whoami() -> str:
    """Report this process id, its working directory and DEMO_* environment variables."""
    env = {k: v for k, v in os.environ.items() if k.startswith("DEMO_") or k.startswith("demo_")}
    return f"pid={os.getpid()} cwd={os.getcwd()} env={sorted(env.items())}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """Return one HTTP request header as the server received it (HTTP transport only)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return f"{name}={headers.get(name, '') if headers is not None else ''}"


@server.tool()
def tally(groups: list[dict[str, list[int]]]) -> str:
    """Sum every number in a list of {label: [numbers]} groups (nested arguments)."""
    return f"total {sum(n for group in groups for numbers in group.values() for n in numbers)}"


@server.tool()
def client(ctx: Context) -> str:
    """Return the clientInfo name and version the client sent in its initialize request."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return f"{info.name} {info.version}" if info is not None else "unknown"


class Signup(BaseModel):
    name: str = Field(description="Your name")
    plan: Literal["free", "pro"] = Field(default="free", description="Which plan")


@server.tool()
async def signup(ctx: Context) -> str:
    """Sign the user up: asks them for their name and plan (an elicitation), then says what it got."""
    answer = await ctx.elicit("Sign up for the demo", Signup)
    if answer.action == "accept":
        return f"signed up {answer.data.name} on the {answer.data.plan} plan"
    return f"signup {answer.action}d" if answer.action == "decline" else "signup cancelled"


@server.resource("demo://notes/readme", name="readme", mime_type="text/plain", description="The demo notes.")
def readme() -> str:
    return "demo notes: the answer is 42"


@server.prompt(description="Ask for a review of one file.")
def review(path: str) -> str:
    return f"Please review {path} for bugs."


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "mute":
        while True:
            time.sleep(3600)
    if mode == "slowstart":  # note when this process started, then take 1 s before serving
        with open(sys.argv[2], "a", encoding="utf-8") as fh:
            fh.write(f"{time.time()}\n")
        time.sleep(1.0)
        mode = "stdio"
    if mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
        return
    server.run("stdio")


if __name__ == "__main__":
    main()
