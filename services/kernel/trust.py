"""Trust in a workspace's execution items: a decision the user makes per workspace, kept outside it.

A project file can name programs to run (hooks, MCP servers), endpoints that receive the user's key
(``models.*.base_url``) and other execution keys (``config.EXECUTION_KEYS``); Claude Code's
``.mcp.json`` names servers. None of them is used because a file says so: the user approves them
with ``ai-coding trust -w WS``, and the approval is bound to the **content** of each item (its
command, arguments, URL, environment: a digest of the whole value). An item added or changed since,
by anyone (the agent included), is pending: it is left out, with a warning naming it and the
command that shows what changed and approves it. ``--auto-approve`` never approves one.

The record lives in the user's data dir (``trust.json``, 0600 in a 0700 directory), which no
workspace may contain and sandboxed commands cannot see.

Items: an execution key whose value is a mapping is one item per child key, and a child that is a
list of named entries (``hooks.events``, ``mcp.servers``) is one item per name, so approving a
workspace's two hooks does not approve the third one written later. Pure except ``TrustStore``'s
load/save.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from services.kernel.datadir import data_dir
from services.kernel.records import mutable_record, record

FILE_NAME = "trust.json"


@record
class Item:
    """One execution item of a workspace: ``key`` names the file and the dotted place in it."""

    key: str
    value: Any

    @property
    def digest(self) -> str:
        return content_digest(self.value)


@record
class Pending:
    """An item the user has not approved as it is now; ``previous`` is what they approved (None: new)."""

    item: Item
    previous: Any = None
    known: bool = False

    def describe(self) -> str:
        shown = json.dumps(self.item.value, sort_keys=True, default=str)
        if not self.known:
            return f"new      {self.item.key} = {shown}"
        was = json.dumps(self.previous, sort_keys=True, default=str)
        return f"changed  {self.item.key} = {shown}\n         (you approved: {was})"


def content_digest(value: Any) -> str:
    import hashlib  # here: loading OpenSSL's libcrypto costs every command ~5 ms, and most digest nothing

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def workspace_key(workspace: Path | str) -> str:
    return os.path.realpath(workspace)


def approve_hint(workspace: Path | str) -> str:
    return f"run `ai-coding trust -w {workspace_key(workspace)}` to see and approve it"


def split_items(prefix: str, path: tuple[str, ...], value: Any) -> list[tuple[Item, tuple[Any, ...]]]:
    """The items of one execution key's value, each with where it sits in the value (a child key, or
    a child key and a list index). ``prefix`` names the file (``/ws/ai-coding.yaml``)."""
    dotted = ".".join(path)
    if not isinstance(value, Mapping) or not value:
        return [(Item(f"{prefix}:{dotted}", value), ())]
    out: list[tuple[Item, tuple[Any, ...]]] = []
    for child, sub in value.items():
        if isinstance(sub, list) and sub and all(isinstance(e, Mapping) and e.get("name") for e in sub):
            out += [(Item(f"{prefix}:{dotted}.{child}[{entry['name']}]", entry), (child, i))
                    for i, entry in enumerate(sub)]
        else:
            out.append((Item(f"{prefix}:{dotted}.{child}", sub), (child,)))
    return out


def admitted_value(items: list[tuple[Item, tuple[Any, ...]]], value: Any, ok: set[str]) -> tuple[bool, Any]:
    """``value`` keeping only the items whose key is in ``ok``: (anything left, the value)."""
    if not isinstance(value, Mapping) or not value:
        return (bool(items) and items[0][0].key in ok), value
    out: dict[str, Any] = {}
    for item, where in items:
        if item.key not in ok:
            continue
        if len(where) == 1:
            out[where[0]] = value[where[0]]
        else:
            out.setdefault(where[0], []).append(value[where[0]][where[1]])
    return bool(out), out


@mutable_record
class TrustStore:
    """The user's approvals: workspace (real path) -> item key -> {digest, value, approved_at}."""

    path: Path
    workspaces: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, path: Path | None = None) -> TrustStore:
        where = path or store_path(env)
        try:
            raw = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(where)  # no decision yet (a torn file decides nothing either)
        spaces = raw.get("workspaces") if isinstance(raw, dict) else None
        if not isinstance(spaces, dict):
            return cls(where)
        return cls(where, {str(k): dict(v.get("items") or {}) for k, v in spaces.items() if isinstance(v, dict)})

    def decided(self, workspace: Path | str) -> bool:
        """Whether the user ever made a trust decision for this workspace."""
        return workspace_key(workspace) in self.workspaces

    def check(self, workspace: Path | str, item: Item) -> Pending | None:
        """None when ``item`` is approved as it is; else what is pending about it."""
        known = self.workspaces.get(workspace_key(workspace), {}).get(item.key)
        if isinstance(known, dict) and known.get("digest") == item.digest:
            return None
        if isinstance(known, dict):
            return Pending(item, known.get("value"), True)
        return Pending(item)

    def approve(self, workspace: Path | str, items: list[Item]) -> None:
        space = self.workspaces.setdefault(workspace_key(workspace), {})
        now = time.time()
        for item in items:
            space[item.key] = {"digest": item.digest, "value": item.value, "approved_at": now}

    def revoke(self, workspace: Path | str) -> bool:
        return self.workspaces.pop(workspace_key(workspace), None) is not None

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            os.chmod(self.path.parent, 0o700)
        body = json.dumps({"version": 1, "workspaces": {k: {"items": v} for k, v in sorted(self.workspaces.items())}},
                          indent=1, sort_keys=True, default=str)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)


def store_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / FILE_NAME


@mutable_record
class Admission:
    """One load of a workspace's project layer against the store: what is admitted, what is pending."""

    store: TrustStore
    workspace: Path
    pending: list[Pending] = field(default_factory=list)

    def admit(self, file: Path | str, path: tuple[str, ...], value: Any, warnings: list[str]) -> tuple[bool, Any]:
        """(keep, the admitted part of ``value``) for the execution key at ``path`` of ``file``; one
        warning per item left out, naming it and how to approve it."""
        items = split_items(str(file), path, value)
        dotted = ".".join(path)
        waiting = [p for p in (self.store.check(self.workspace, item) for item, _ in items) if p is not None]
        self.pending += waiting
        if not self.store.decided(self.workspace):
            warnings.append(f"{file}: ignored `{dotted}` (execution keys come only from the user config, or from "
                            f"a project as you approve them; {approve_hint(self.workspace)})")
            return False, None
        for p in waiting:
            what = "changed since you approved it" if p.known else "added since you trusted this workspace"
            warnings.append(f"{file}: ignored `{p.item.key.partition(':')[2]}` ({what}; "
                            f"{approve_hint(self.workspace)})")
        ok = {item.key for item, _ in items} - {p.item.key for p in waiting}
        return admitted_value(items, value, ok)


MCP_JSON = ".mcp.json"


def mcp_json_key(path: Path | str, name: str) -> str:
    """The trust record's key of one server of a workspace's ``.mcp.json``."""
    return f"{os.path.realpath(path)}:mcpServers.{name}"


def mcp_json_items(workspace: Path | str) -> list[Item]:
    """The servers of ``<workspace>/.mcp.json`` as items (none when it is missing or unreadable)."""
    path = Path(workspace) / MCP_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return []
    return [Item(mcp_json_key(path, str(name)), spec) for name, spec in servers.items()]
