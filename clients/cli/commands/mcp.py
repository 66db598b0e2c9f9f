"""``ai-coding mcp list | status | add | login | logout | retry | resources | read | prompts | prompt``.

Import-light: grpc is imported inside command bodies (through ``clients.cli.connection``),
and nothing here imports the ``mcp`` SDK (the gateway process does that).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from clients.cli import exit_codes
from clients.cli import services_view as view
from clients.cli.commands.common import service_call
from clients.cli.commands.mcp_add import OAuthFlags, add_entry

if TYPE_CHECKING:
    from clients.cli.connection.services import McpClient
    from clients.cli.service_views import CatalogEntry, ServerStatus
    from clients.cli.views import ToolResult

T = TypeVar("T")

app = typer.Typer(name="mcp", help="MCP servers: state, tools, adding one, signing in.", no_args_is_help=True)


def _gateway(command: str, body: Callable[[McpClient], Awaitable[T]]) -> T:
    """``body`` against the running MCP gateway; failures become one line and an exit code."""
    from clients.cli.connection.services import McpClient

    return service_call("mcp", command, "mcp_gateway", "the MCP gateway", McpClient, body)


@app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
           logs: int = typer.Option(0, "--logs", min=0, max=100, metavar="N",
                                    help="Also show each server's last N log lines (its log messages and "
                                         "a local server's stderr).")) -> None:
    """Each server's state, tool count and failure reason; exits 1 when a server has failed."""
    servers = _gateway("status", lambda client: client.servers(logs))
    if as_json:
        print(json.dumps({"servers": [{"name": s.name, "type": s.type, "state": view.state_name(s), "reason": s.reason,
                                       "tools": s.tool_count, "attempts": s.attempts,
                                       **({"session": s.session_id} if s.session_id else {}),
                                       **({"log": [{"level": ln.level, "logger": ln.logger, "text": ln.text}
                                                   for ln in s.log]} if logs else {})} for s in servers]}))
    else:
        for line in view.server_lines(servers):
            print(line)
    if any(view.state_name(s) == "failed" for s in servers):
        raise typer.Exit(exit_codes.FAILED)


@app.command("list")
def list_tools() -> None:
    """Servers and the tools the model can call on each (the catalog)."""

    async def body(client: McpClient) -> tuple[list[ServerStatus], list[CatalogEntry]]:
        return await client.servers(), await client.catalog()

    servers, entries = _gateway("list", body)
    if not servers:
        print(view.server_lines(servers)[0])  # says how to add one
    for s in servers:
        print(view.server_line(s) + (f"  (an editor's, for session {s.session_id} alone)" if s.session_id else ""))
        for e in (e for e in entries if e.server == s.name):
            print(f"      {e.qualified_name:<40} {e.permission:<5} {e.description[:60]}")


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"ai-coding mcp: {what} {item!r} must be KEY=VALUE", file=sys.stderr)
            raise typer.Exit(exit_codes.USAGE)
        out[key] = value
    return out


@app.command("add")
def add(
    name: str = typer.Argument(..., help="Server name (tools show as NAME__tool)."),
    command: Annotated[list[str] | None, typer.Argument(help="argv of a local server, after `--`.")] = None,
    url: str = typer.Option("", "--url", help="URL of a remote (streamable HTTP) server."),
    header: Annotated[list[str] | None, typer.Option("--header", help="KEY=VALUE HTTP header (repeatable).")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="KEY=VALUE environment variable (repeatable).")] = None,
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Run this server's tools without asking."),
    transport: str = typer.Option("", "--transport", "-t",
                                  help="stdio (a local command), http (Streamable HTTP) or sse (legacy HTTP+SSE); "
                                       "default: http with --url, else stdio."),
    client_id: str = typer.Option("", "--client-id", help="OAuth client registered beforehand (no dynamic "
                                                          "registration); ${VAR} is expanded."),
    client_secret: str = typer.Option("", "--client-secret", help="Its secret (write ${VAR} to keep it out of "
                                                                  "the file)."),
    client_credentials: bool = typer.Option(False, "--client-credentials",
                                            help="OAuth machine to machine (no sign-in): needs --client-id and "
                                                 "--client-secret."),
    callback_port: int = typer.Option(0, "--callback-port", help="Local port of the OAuth sign-in callback."),
) -> None:
    """Add a server now and keep it in mcp.local.yaml (e.g. `ai-coding mcp add fs -- npx -y pkg`)."""
    try:
        entry = add_entry(name, list(command or []), url, transport, _pairs(header or [], "--header"),
                          _pairs(env or [], "--env"), auto_approve,
                          OAuthFlags(client_id, client_secret, client_credentials, callback_port))
    except ValueError as err:
        print(f"ai-coding mcp add: {err}", file=sys.stderr)
        raise typer.Exit(exit_codes.USAGE) from None
    got = _gateway("add", lambda client: client.add(json.dumps(entry)))
    print(f"added {got.name}; it is connecting (see `ai-coding mcp status`)")


@app.command("login")
def login(
    name: str = typer.Argument(..., help="A remote server's name."),
    wait: float = typer.Option(300.0, help="Seconds to wait for the browser sign-in to finish."),
    open_browser: bool = typer.Option(True, "--browser/--no-browser", help="Open the URL in a browser."),
) -> None:
    """Sign in to a remote server (OAuth in your browser); tokens are kept 0600 for next time."""

    async def body(client: McpClient) -> tuple[bool, ServerStatus | None]:
        url = await client.login(name)
        if not url:
            return False, None
        print(f"Open this URL to sign in to {name}:\n  {url}", flush=True)  # piped: seen now, not at exit
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        return True, await client.wait_for(name, lambda s: view.state_name(s) == "connected", wait)

    started, final = _gateway("login", body)
    if not started:
        print(f"{name} is already signed in")
        return
    if final is None or view.state_name(final) != "connected":
        print(f"ai-coding mcp login: {name} is not signed in yet ({view.state_name(final) if final else 'gone'})",
              file=sys.stderr)
        raise typer.Exit(exit_codes.FAILED)
    print(f"signed in; {name} is connected with {final.tool_count} tools")


@app.command("logout")
def logout(name: str = typer.Argument(..., help="A remote server's name.")) -> None:
    """Forget a server's tokens; it waits for `ai-coding mcp login` again."""
    _gateway("logout", lambda client: client.logout(name))
    print(f"signed out of {name}")


@app.command("retry")
def retry(name: str = typer.Argument(..., help="Server name.")) -> None:
    """Reconnect a server now instead of waiting for its backoff."""
    final = _gateway("retry", lambda client: client.retry(name, settle=60))
    print(view.server_line(final) if final is not None else f"{name}: gone")


def _show(command: str, result: ToolResult) -> None:
    """Print a resources/prompts answer; a refusal is one line on stderr and exit 1."""
    if not result.ok:
        hint = f" ({result.error.hint})" if result.error.hint else ""
        print(f"ai-coding mcp {command}: {result.output or result.error.message}{hint}", file=sys.stderr)
        raise typer.Exit(exit_codes.FAILED)
    print(result.output)


@app.command("resources")
def resources(server: str = typer.Argument(..., help="Server name.")) -> None:
    """The resources a server offers (URI, name, type)."""
    _show("resources", _gateway("resources", lambda client: client.resources(server)))


@app.command("read")
def read(server: str = typer.Argument(..., help="Server name."),
         uri: str = typer.Argument(..., help="A resource URI from `ai-coding mcp resources SERVER`.")) -> None:
    """Print one resource of a server."""
    _show("read", _gateway("read", lambda client: client.read_resource(server, uri)))


@app.command("prompts")
def prompts(server: str = typer.Argument(..., help="Server name.")) -> None:
    """The prompts a server offers, with their arguments (* = required)."""
    _show("prompts", _gateway("prompts", lambda client: client.prompts(server)))


@app.command("prompt")
def prompt(server: str = typer.Argument(..., help="Server name."),
           name: str = typer.Argument(..., help="A prompt name from `ai-coding mcp prompts SERVER`."),
           arg: Annotated[list[str] | None, typer.Option("--arg", help="KEY=VALUE argument (repeatable).")] = None,
           ) -> None:
    """Print a server's prompt filled with its arguments."""
    arguments = json.dumps(_pairs(arg or [], "--arg"))
    _show("prompt", _gateway("prompt", lambda client: client.prompt(server, name, arguments)))


@app.command("complete")
def complete(server: str = typer.Argument(..., help="Server name."),
             name: str = typer.Argument(..., help="A prompt name from `ai-coding mcp prompts SERVER`."),
             argument: str = typer.Argument(..., help="The argument to complete."),
             value: str = typer.Argument("", help="What is typed of it so far."),
             arg: Annotated[list[str] | None, typer.Option("--arg", help="KEY=VALUE of an argument already "
                                                                          "given (repeatable).")] = None,
             ) -> None:
    """Values a server suggests for a prompt's argument (completion/complete), one a line."""
    context = json.dumps(_pairs(arg or [], "--arg"))
    _show("complete", _gateway("complete", lambda client: client.complete_prompt(server, name, argument, value,
                                                                                 context)))


def _mount_serve() -> None:
    from clients.cli.commands.mcp_serve import serve

    app.command("serve")(serve)


_mount_serve()
