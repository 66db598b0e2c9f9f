"""OAuth tokens and client registrations on disk: ``~/.local/share/ai-coding/mcp-auth.json``.

One JSON object keyed by server name; each entry remembers the server URL it
belongs to so a token is never sent to a different URL. The file is 0600 in a
0700 directory and replaced atomically on every write. No SDK import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.mcp_gateway.errors import McpGatewayError

AUTH_FILE = "mcp-auth.json"


def default_auth_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/ai-coding/mcp-auth.json`` (default ``~/.local/share``)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "share")
    return Path(base) / "ai-coding" / AUTH_FILE


class AuthStore:
    """Read-modify-write access to the token file (single writer: the gateway)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise McpGatewayError(f"cannot read {self.path}: {exc}",
                                  hint="Move the file aside and sign in again.") from None
        return data if isinstance(data, dict) else {}

    def _write(self, data: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def entry(self, server: str, url: str) -> dict[str, Any]:
        """What is stored for ``server`` at ``url`` (empty if nothing, or stored for another URL)."""
        got = self._read().get(server)
        if not isinstance(got, dict) or got.get("url") != url:
            return {}
        return got

    def put(self, server: str, url: str, key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``key`` for ``server`` (an entry for another URL is replaced)."""
        data = self._read()
        current = data.get(server)
        entry = current if isinstance(current, dict) and current.get("url") == url else {"url": url}
        entry[key] = dict(value)
        data[server] = entry
        self._write(data)

    def delete(self, server: str) -> bool:
        """Forget ``server``'s tokens and registration; True when something was removed."""
        data = self._read()
        if server not in data:
            return False
        del data[server]
        self._write(data)
        return True
