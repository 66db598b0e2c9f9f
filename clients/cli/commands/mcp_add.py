"""What ``ai-coding mcp add`` writes to mcp.local.yaml: a pure function over its flags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRANSPORTS = ("stdio", "http", "sse")


@dataclass(frozen=True)
class OAuthFlags:
    client_id: str = ""
    client_secret: str = ""
    client_credentials: bool = False
    callback_port: int = 0


def add_entry(name: str, command: list[str], url: str, transport: str, headers: dict[str, str],
              environment: dict[str, str], auto_approve: bool, oauth: OAuthFlags) -> dict[str, Any]:
    """The server entry, or ValueError saying which flag to fix."""
    kind = transport.strip().lower() or ("http" if url else "stdio")
    if kind not in TRANSPORTS:
        raise ValueError(f"--transport {transport!r} is not one of {', '.join(TRANSPORTS)}")
    entry: dict[str, Any] = {"name": name, "auto_approve": auto_approve}
    if kind == "stdio":
        if url or not command:
            raise ValueError("a stdio server is a command: pass it after `--` (or use --transport http --url URL)")
        if oauth != OAuthFlags():
            raise ValueError("OAuth options are for remote servers (--transport http or sse with --url)")
        entry.update(type="local", command=command, environment=environment)
        return entry
    if not url or command:
        raise ValueError(f"a {kind} server needs --url URL and no command")
    entry.update(type="remote", url=url, headers=headers)
    if kind == "sse":
        entry["transport"] = "sse"
    if oauth.client_credentials and not (oauth.client_id and oauth.client_secret):
        raise ValueError("--client-credentials needs --client-id and --client-secret")
    if oauth.client_secret and not oauth.client_id:
        raise ValueError("--client-secret needs the --client-id it belongs to")
    if not 0 <= oauth.callback_port <= 65535:
        raise ValueError("--callback-port must be 0..65535 (0: any free port)")
    options = {key: value for key, value in (("client_id", oauth.client_id), ("client_secret", oauth.client_secret),
                                             ("callback_port", oauth.callback_port)) if value}
    if oauth.client_credentials:
        options["grant"] = "client_credentials"
    if options:
        entry["oauth"] = options
    return entry
