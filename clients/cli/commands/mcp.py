"""``ai-coding mcp list | status | add | login | logout | retry | resources | read | prompts | prompt``.

Import-light: grpc and the generated stubs are imported inside command bodies,
and nothing here imports the ``mcp`` SDK (the gateway process does that).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from clients.cli import exit_codes
from clients.cli import services_view as view
from clients.cli.commands.common import service_stub

app = typer.Typer(name="mcp", help="MCP servers: state, tools, adding one, signing in.", no_args_is_help=True)


@contextmanager
def _gateway(command: str) -> Iterator[Any]:
    """A stub to the running MCP gateway; RPC failures become one line and an exit code."""
    from ai_coding.v1 import mcp_gateway_pb2_grpc

    with service_stub("mcp", command, "mcp_gateway", "the MCP gateway", mcp_gateway_pb2_grpc.McpGatewayStub) as stub:
        yield stub


@app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Each server's state, tool count and failure reason; exits 1 when a server has failed."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("status") as stub:
        servers = stub.ListServers(pb.ListServersRequest(), timeout=10).servers
    if as_json:
        print(json.dumps({"servers": [{"name": s.name, "type": s.type, "state": view.state_name(s), "reason": s.reason,
                                       "tools": s.tool_count, "attempts": s.attempts} for s in servers]}))
    else:
        for line in view.server_lines(servers):
            print(line)
    if any(view.state_name(s) == "failed" for s in servers):
        raise typer.Exit(exit_codes.FAILED)


@app.command("list")
def list_tools() -> None:
    """Servers and the tools the model can call on each (the catalog)."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("list") as stub:
        servers = stub.ListServers(pb.ListServersRequest(), timeout=10).servers
        entries = stub.GetCatalog(pb.GetCatalogRequest(), timeout=10).entries
    if not servers:
        print(view.server_lines(servers)[0])  # says how to add one
    for s in servers:
        print(view.server_line(s))
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
) -> None:
    """Add a server now and keep it in mcp.local.yaml (e.g. `ai-coding mcp add fs -- npx -y pkg`)."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    entry: dict[str, Any] = {"name": name, "auto_approve": auto_approve}
    if url:
        entry.update(type="remote", url=url, headers=_pairs(header or [], "--header"))
    else:
        entry.update(type="local", command=list(command or []), environment=_pairs(env or [], "--env"))
    with _gateway("add") as stub:
        got = stub.AddServer(pb.AddServerRequest(server_json=json.dumps(entry)), timeout=10).status
    print(f"added {got.name}; it is connecting (see `ai-coding mcp status`)")


def _wait(stub: Any, name: str, done: Callable[[str], bool], timeout: float) -> Any:
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    deadline = time.monotonic() + timeout
    while True:
        found = [s for s in stub.ListServers(pb.ListServersRequest(), timeout=10).servers if s.name == name]
        if (found and done(view.state_name(found[0]))) or time.monotonic() > deadline:
            return found[0] if found else None
        time.sleep(0.5)


@app.command("login")
def login(
    name: str = typer.Argument(..., help="A remote server's name."),
    wait: float = typer.Option(300.0, help="Seconds to wait for the browser sign-in to finish."),
    open_browser: bool = typer.Option(True, "--browser/--no-browser", help="Open the URL in a browser."),
) -> None:
    """Sign in to a remote server (OAuth in your browser); tokens are kept 0600 for next time."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("login") as stub:
        resp = stub.Login(pb.LoginRequest(server=name), timeout=60)
        if not resp.authorization_url:
            print(f"{name} is already signed in")
            return
        print(f"Open this URL to sign in to {name}:\n  {resp.authorization_url}")
        if open_browser:
            import webbrowser

            webbrowser.open(resp.authorization_url)
        final = _wait(stub, name, lambda state: state == "connected", wait)
    if final is None or view.state_name(final) != "connected":
        print(f"ai-coding mcp login: {name} is not signed in yet ({view.state_name(final) if final else 'gone'})",
              file=sys.stderr)
        raise typer.Exit(exit_codes.FAILED)
    print(f"signed in; {name} is connected with {final.tool_count} tools")


@app.command("logout")
def logout(name: str = typer.Argument(..., help="A remote server's name.")) -> None:
    """Forget a server's tokens; it waits for `ai-coding mcp login` again."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("logout") as stub:
        stub.Logout(pb.LogoutRequest(server=name), timeout=10)
    print(f"signed out of {name}")


@app.command("retry")
def retry(name: str = typer.Argument(..., help="Server name.")) -> None:
    """Reconnect a server now instead of waiting for its backoff."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("retry") as stub:
        stub.Reconnect(pb.ReconnectRequest(server=name), timeout=10)
        final = _wait(stub, name, lambda state: state not in view.TRANSIENT_STATES, 60)
    print(view.server_line(final) if final is not None else f"{name}: gone")


def _show(command: str, result: Any) -> None:
    """Print a resources/prompts answer; a refusal is one line on stderr and exit 1."""
    if not result.ok:
        hint = f" ({result.error.hint})" if result.error.hint else ""
        print(f"ai-coding mcp {command}: {result.output or result.error.message}{hint}", file=sys.stderr)
        raise typer.Exit(exit_codes.FAILED)
    print(result.output)


@app.command("resources")
def resources(server: str = typer.Argument(..., help="Server name.")) -> None:
    """The resources a server offers (URI, name, type)."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("resources") as stub:
        _show("resources", stub.ListResources(pb.ListResourcesRequest(server=server), timeout=90).result)


@app.command("read")
def read(server: str = typer.Argument(..., help="Server name."),
         uri: str = typer.Argument(..., help="A resource URI from `ai-coding mcp resources SERVER`.")) -> None:
    """Print one resource of a server."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("read") as stub:
        _show("read", stub.ReadResource(pb.ReadResourceRequest(server=server, uri=uri), timeout=90).result)


@app.command("prompts")
def prompts(server: str = typer.Argument(..., help="Server name.")) -> None:
    """The prompts a server offers, with their arguments (* = required)."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    with _gateway("prompts") as stub:
        _show("prompts", stub.ListPrompts(pb.ListPromptsRequest(server=server), timeout=90).result)


@app.command("prompt")
def prompt(server: str = typer.Argument(..., help="Server name."),
           name: str = typer.Argument(..., help="A prompt name from `ai-coding mcp prompts SERVER`."),
           arg: Annotated[list[str] | None, typer.Option("--arg", help="KEY=VALUE argument (repeatable).")] = None,
           ) -> None:
    """Print a server's prompt filled with its arguments."""
    from ai_coding.v1 import mcp_gateway_pb2 as pb

    arguments = json.dumps(_pairs(arg or [], "--arg"))
    with _gateway("prompt") as stub:
        _show("prompt", stub.GetPrompt(pb.GetPromptRequest(server=server, name=name, arguments_json=arguments),
                                       timeout=90).result)
