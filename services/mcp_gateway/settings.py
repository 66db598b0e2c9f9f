"""Typed view of ``mcp.servers[]`` (the v2 contract) and the ``mcp.local.yaml`` sidecar.

Servers come only from the user layer (the kernel's trust filter drops ``mcp``
from untrusted project layers) plus the sidecar next to the user config that
AddServer writes. A bad entry fails alone: it becomes an :class:`InvalidServer`
with one readable reason and every other server still runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from services.kernel.config import Config, from_mapping, normalize_key, read_yaml_file, user_config_path
from services.kernel.errors import ConfigError
from services.mcp_gateway.errors import ServerConfigError

SIDECAR_NAME = "mcp.local.yaml"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")


@dataclass(frozen=True)
class Timeouts:
    """Per-phase time limits in milliseconds."""

    startup: int = 60_000
    """Spawn (or HTTP connect) plus the MCP handshake. Default 60 s: a cold ``npx -y`` took ~27 s."""
    catalog: int = 10_000
    """The ``tools/list`` request after the handshake. Default 10 s."""
    execution: int = 120_000
    """One ``tools/call``. Default 120 s; a call may ask for less, never more."""


@dataclass(frozen=True)
class OAuthOptions:
    """OAuth for a remote server (dynamic client registration + PKCE through the SDK)."""

    callback_port: int = 0
    """Local port of the one-time login callback (0 = any free port, the client re-registers)."""
    scope: str = ""
    """Scope to request (empty = what the server advertises)."""
    client_metadata_url: str = ""
    """HTTPS URL of a client ID metadata document you host (SEP-991): used as the client id where the
    authorization server supports it, instead of registering a new client; empty = dynamic registration."""
    client_id: str = ""
    """A client registered beforehand with the authorization server (no dynamic registration). For the
    browser sign-in its redirect URI must be http://127.0.0.1:<callback_port>/callback."""
    client_secret: str = ""
    """That client's secret (``${VAR}`` is expanded from the environment; keep it out of the file)."""
    grant: str = "authorization_code"
    """"authorization_code" (a person signs in in the browser) or "client_credentials" (machine to
    machine with client_id and client_secret, or private_key_file: no sign-in)."""
    private_key_file: str = ""
    """client_credentials with private_key_jwt: the PEM key that signs the client's assertion."""
    signing_algorithm: str = "RS256"
    """The JWT algorithm for private_key_file (RS256, ES256, ...)."""
    issuer: str = ""
    """client_credentials: the authorization server's issuer URL the credentials belong to (they are
    then sent nowhere else); empty = whichever server the MCP server names."""


@dataclass(frozen=True)
class Permissions:
    """Which remote tools run without asking (allow) or never (deny); fnmatch patterns."""

    allow: tuple[str, ...] = ()
    """Tool names (or ``server__tool`` names) that run without approval."""
    deny: tuple[str, ...] = ()
    """Tool names that never run; deny beats allow and an "always" approval."""


@dataclass(frozen=True)
class ServerSettings:
    """One MCP server as configured."""

    name: str
    """Unique name; the catalog prefixes tools with ``{name}__``."""
    type: str = "local"
    """``local`` (a subprocess over stdio) or ``remote`` (streamable HTTP)."""
    command: tuple[str, ...] = ()
    """argv of a local server, e.g. ``["npx", "-y", "pkg"]``."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for a local server (keys kept exactly as written)."""
    cwd: str = ""
    """Working directory of a local server (empty = the gateway's)."""
    url: str = ""
    """Endpoint of a remote server."""
    transport: str = "streamable_http"
    """How a remote server is spoken to: ``streamable_http`` (current MCP) or ``sse`` (the legacy
    HTTP+SSE transport; ``type: sse`` in other agents' files selects it)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """HTTP headers sent to a remote server (keys kept exactly as written)."""
    oauth: OAuthOptions | None = None
    """OAuth settings; remote servers use OAuth on a 401 unless headers carry Authorization."""
    disabled: bool = False
    """True = keep the entry but do not connect."""
    tools: tuple[str, ...] = ()
    """Whitelist of remote tool names shown and callable (empty = all)."""
    permissions: Permissions = field(default_factory=Permissions)
    """Per-tool allow/deny for the loop's permission gate."""
    auto_approve: bool = False
    """True = this server's tools run without approval (deny still wins)."""
    trust_read_only_hint: bool = True
    """True = a tool the server marks ``readOnlyHint`` runs without approval (deny still wins);
    false for a server whose hints you do not trust."""
    timeout: Timeouts = field(default_factory=Timeouts)
    """Startup, catalog and execution limits in ms."""
    source: str = ""
    """The file this entry came from (for messages)."""


@dataclass(frozen=True)
class InvalidServer:
    """An entry that could not be read; shown as failed with ``reason``."""

    name: str
    reason: str
    source: str = ""


@dataclass(frozen=True)
class McpSettings:
    """All configured servers, valid or not, in file order (user config, then sidecar)."""

    servers: tuple[ServerSettings, ...] = ()
    """Entries that parsed."""
    invalid: tuple[InvalidServer, ...] = ()
    """Entries that did not, each with why."""


@dataclass
class _RawTimeouts:
    startup: int = 60_000
    catalog: int = 10_000
    execution: int = 120_000


@dataclass
class _RawOAuth:
    callback_port: int = 0
    scope: str = ""
    client_metadata_url: str = ""
    client_id: str = ""
    client_secret: str = ""
    grant: str = "authorization_code"
    private_key_file: str = ""
    signing_algorithm: str = "RS256"
    issuer: str = ""


@dataclass
class _RawPermissions:
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)


@dataclass
class _RawServer:
    name: str = ""
    type: str = "local"
    command: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    transport: str = "streamable_http"
    headers: dict[str, Any] = field(default_factory=dict)
    oauth: _RawOAuth = field(default_factory=_RawOAuth)
    disabled: bool = False
    tools: list[str] = field(default_factory=list)
    permissions: _RawPermissions = field(default_factory=_RawPermissions)
    auto_approve: bool = False
    trust_read_only_hint: bool = True
    timeout: _RawTimeouts = field(default_factory=_RawTimeouts)


GRANTS = ("authorization_code", "client_credentials")


def _fail(name: str, source: str, message: str, hint: str) -> ServerConfigError:
    return ServerConfigError(f"MCP server {name!r} in {source or 'config'}: {message}", hint=hint)


def _positive_ms(name: str, source: str, key: str, value: int) -> int:
    if value <= 0:
        raise _fail(name, source, f"timeout.{key} must be a positive number of ms, got {value}",
                    "Write e.g. `timeout: {startup: 60000}`.")
    return value


def parse_server(raw: Mapping[str, Any], source: str = "") -> ServerSettings:
    """Validate one ``mcp.servers[]`` item (keys already normalized); raises :class:`ServerConfigError`."""
    label = str(raw.get("name") or "?")
    try:
        r = from_mapping(_RawServer, raw, f"mcp.servers[{label}]")
    except ConfigError as exc:
        raise ServerConfigError(str(exc), hint="Fix that entry; the other servers still run.") from None
    if not _NAME.match(r.name):
        raise _fail(label, source, "needs a `name` of letters, digits, '-' or '_' (at most 48)",
                    "Add e.g. `name: github`.")
    if "__" in r.name:
        raise _fail(r.name, source, "a name may not contain '__' (it separates server and tool)",
                    "Rename it.")
    if r.type not in ("local", "remote"):
        raise _fail(r.name, source, f"`type` must be local or remote, not {r.type!r}", "Fix `type`.")
    if r.type == "local" and not r.command:
        raise _fail(r.name, source, "a local server needs `command` as an argv list",
                    'Write e.g. `command: ["npx", "-y", "@modelcontextprotocol/server-everything"]`.')
    if r.type == "local" and not all(isinstance(a, str) and a for a in r.command):
        raise _fail(r.name, source, "`command` items must be non-empty strings", "Quote each argument.")
    if r.transport not in TRANSPORTS:
        raise _fail(r.name, source, f"`transport` must be one of {', '.join(TRANSPORTS)}, not {r.transport!r}",
                    "Use sse for a server that only speaks the legacy HTTP+SSE transport.")
    if r.type == "remote" and not r.url.startswith(("http://", "https://")):
        raise _fail(r.name, source, "a remote server needs an http(s) `url`",
                    "Write e.g. `url: https://example.com/mcp`.")
    timeouts = Timeouts(
        startup=_positive_ms(r.name, source, "startup", r.timeout.startup),
        catalog=_positive_ms(r.name, source, "catalog", r.timeout.catalog),
        execution=_positive_ms(r.name, source, "execution", r.timeout.execution),
    )
    o = r.oauth
    oauth = (OAuthOptions(o.callback_port, o.scope, o.client_metadata_url, o.client_id, o.client_secret, o.grant,
                          os.path.expanduser(o.private_key_file) if o.private_key_file else "", o.signing_algorithm,
                          o.issuer)
             if raw.get("oauth") is not None else None)
    if oauth is not None and oauth.grant not in GRANTS:
        raise _fail(r.name, source, f"oauth.grant must be one of {', '.join(GRANTS)}, not {oauth.grant!r}",
                    "Use client_credentials for a machine client, or leave it out for the browser sign-in.")
    if oauth is not None and oauth.grant == "client_credentials" and not (
            oauth.client_id and (oauth.client_secret or oauth.private_key_file)):
        raise _fail(r.name, source, "oauth.grant client_credentials needs oauth.client_id and "
                    "oauth.client_secret (or oauth.private_key_file)", "Add the client's credentials.")
    if oauth is not None and oauth.client_secret and not oauth.client_id:
        raise _fail(r.name, source, "oauth.client_secret needs the oauth.client_id it belongs to",
                    "Add oauth.client_id.")
    if oauth is not None and oauth.client_metadata_url and not oauth.client_metadata_url.startswith("https://"):
        raise _fail(r.name, source, "oauth.client_metadata_url must be an https:// URL of the metadata document",
                    "Host the document over HTTPS, or remove the key to register dynamically.")
    if oauth is not None and not 0 <= oauth.callback_port <= 65535:
        raise _fail(r.name, source, "oauth.callback_port must be 0..65535", "Use 0 for any free port.")
    return ServerSettings(
        name=r.name,
        type=r.type,
        command=tuple(r.command),
        environment={str(k): str(v) for k, v in r.environment.items()},
        cwd=os.path.expanduser(r.cwd) if r.cwd else "",
        url=r.url,
        transport=r.transport,
        headers={str(k): str(v) for k, v in r.headers.items()},
        oauth=oauth,
        disabled=r.disabled,
        tools=tuple(r.tools),
        permissions=Permissions(tuple(r.permissions.allow), tuple(r.permissions.deny)),
        auto_approve=r.auto_approve,
        trust_read_only_hint=r.trust_read_only_hint,
        timeout=timeouts,
        source=source,
    )


def _normalize_entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Normalize keys like the kernel does, but keep environment/headers keys as written."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        nk = normalize_key(str(k))
        if isinstance(v, Mapping) and nk not in ("environment", "env", "headers"):
            v = _normalize_entry(v)
        out[nk] = v
    return out


_TYPE_ALIASES = {"stdio": "local", "http": "remote", "streamable-http": "remote", "streamable_http": "remote",
                 "sse": "remote"}
TRANSPORTS = ("streamable_http", "sse")


def from_common_shape(entry: dict[str, Any], source: str = "") -> dict[str, Any]:
    """An entry as other agents write it (Claude Code, Cursor, VS Code: ``command`` + ``args``,
    ``env``, ``type: stdio|http|sse``) in our shape; ours passes through unchanged (pure)."""
    out = dict(entry)
    name = str(out.get("name") or "?")
    if "env" in out:
        if "environment" in out:
            raise _fail(name, source, "has both `env` and `environment`", "Keep one of them.")
        out["environment"] = out.pop("env")
    command = out.get("command")
    program = isinstance(command, str) and command.split() == [command]  # one program name, no spaces
    if "args" in out:
        args = out.pop("args")
        if not isinstance(args, list):
            raise _fail(name, source, "`args` must be a list of strings", 'Write e.g. `args: ["-y", "pkg"]`.')
        if not (program or isinstance(command, list)):
            raise _fail(name, source, "with `args`, `command` must be the program alone",
                        'Write e.g. `command: npx` and `args: ["-y", "pkg"]`.')
        out["command"] = ([command] if program else list(command or [])) + args
    elif program:
        out["command"] = [command]
    if isinstance(out.get("type"), str):
        if out["type"].lower() == "sse":
            out.setdefault("transport", "sse")
        out["type"] = _TYPE_ALIASES.get(out["type"].lower(), out["type"])
    if "type" not in out and "url" in out and "command" not in out:
        out["type"] = "remote"
    return out


def parse_servers(items: Any, source: str) -> tuple[list[ServerSettings], list[InvalidServer]]:
    """Parse a ``servers`` list; each bad item becomes an :class:`InvalidServer`."""
    good: list[ServerSettings] = []
    bad: list[InvalidServer] = []
    if items is None:
        return good, bad
    if not isinstance(items, list):
        bad.append(InvalidServer("?", f"`mcp.servers` in {source} must be a list of servers", source))
        return good, bad
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            bad.append(InvalidServer(f"#{index + 1}", f"mcp.servers item {index + 1} in {source} is not a mapping",
                                     source))
            continue
        try:
            good.append(parse_server(from_common_shape(_normalize_entry(item), source), source))
        except ServerConfigError as exc:
            bad.append(InvalidServer(str(item.get("name") or f"#{index + 1}"), str(exc), source))
    return good, bad


def sidecar_path(env: Mapping[str, str] | None = None) -> Path:
    """``mcp.local.yaml`` next to the user config file."""
    return user_config_path(env).parent / SIDECAR_NAME


def load_mcp_settings(config: Config, sidecar: Path | None = None) -> McpSettings:
    """Servers from the merged config's ``mcp`` section plus the sidecar; later duplicates are refused."""
    source = config.source_of("mcp.servers")
    good, bad = parse_servers(config.get("mcp.servers"), source)
    path = sidecar or sidecar_path()
    if path.is_file():
        try:
            data = read_yaml_file(path)
        except ConfigError as exc:
            bad.append(InvalidServer("?", str(exc), str(path)))
        else:
            g2, b2 = parse_servers(data.get("servers"), str(path))
            good += g2
            bad += b2
    seen: set[str] = set()
    unique: list[ServerSettings] = []
    for s in good:
        if s.name in seen:
            bad.append(InvalidServer(s.name, f"MCP server {s.name!r} in {s.source} repeats an earlier name; "
                                             "it was ignored. Rename one of them.", s.source))
            continue
        seen.add(s.name)
        unique.append(s)
    return McpSettings(servers=tuple(unique), invalid=tuple(bad))


def append_to_sidecar(path: Path, entry: Mapping[str, Any]) -> None:
    """Add one server entry to the sidecar (created 0600), keeping what is there."""
    data: dict[str, Any] = read_yaml_file(path) if path.is_file() else {}
    servers = data.get("servers") or []
    if not isinstance(servers, list):
        raise ConfigError(f"{path}: `servers` must be a list", hint="Fix or remove the file.")
    servers.append(dict(entry))
    data["servers"] = servers
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh, sort_keys=False, allow_unicode=True)
    os.replace(tmp, path)
