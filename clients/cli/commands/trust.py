"""``ai-coding trust -w WS``: see and approve a workspace's execution items (services/kernel/trust.py).

A project's hooks, MCP servers (its config's ``mcp`` and Claude Code's ``.mcp.json``), model
endpoints and other execution keys run only as you approved them here, bound to their content:
whatever was added or changed since (by anyone, the agent included) is listed with what changed
and waits for you. Import-light: typer at import time, the kernel inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from clients.cli.commands.common import cli_errors, fail


def trust(
    workspace: str = typer.Option(".", "--workspace", "-w", help="The workspace to review."),
    yes: bool = typer.Option(False, "--yes", help="Approve what is listed without asking (you read it first)."),
    revoke: bool = typer.Option(False, "--revoke", help="Forget every approval for this workspace."),
) -> None:
    """List the workspace's execution items that are new or changed since you approved them, then approve them."""
    from services.kernel.trust import TrustStore, workspace_key
    from services.kernel.trust_review import approve, review

    root = Path(workspace)
    if not root.is_dir():
        raise fail("trust", f"workspace {workspace} is not a directory; pass an existing one with -w")
    with cli_errors("trust"):
        store = TrustStore.load()
        if revoke:
            gone = store.revoke(root)
            store.save()
            print(f"{workspace_key(root)}: {'approvals forgotten' if gone else 'nothing was approved'}")
            return
        pending = review(root)
    where = workspace_key(root)
    if not pending:
        state = "trusted" if store.decided(root) else "not trusted yet"
        print(f"{where}: nothing new or changed to approve ({state})")
        if store.decided(root) or not yes:
            return
    else:
        print(f"{where}: {len(pending)} execution item(s) wait for your approval:")
        for p in pending:
            print("  " + p.describe())
    if not yes:
        if not sys.stdin.isatty():
            raise fail("trust", "nothing approved: read the list above, then re-run with --yes to approve it")
        if input("Approve these for this workspace? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing approved")
            return
    with cli_errors("trust"):
        approve(root, pending)
    print(f"approved {len(pending)} item(s) for {where}")


def register(app: typer.Typer) -> None:
    app.command(name="trust")(trust)
