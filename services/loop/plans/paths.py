"""``outside_workspace_paths``: the paths a plan topic or item names that lie outside the workspace.

Pure and lexical (nothing is resolved on disk): a token that starts like a path (``/``,
``~``, ``./``, ``../``) or has a ``..`` segment is joined to the workspace, normalised, and
kept when it leaves it. URLs (``scheme://``) are not paths. Both /plan gates use it: the
topic before any model call, each item before its step runs.
"""

from __future__ import annotations

import posixpath
import re

# A path-looking token: starts at a word boundary the way a path does, runs to whitespace,
# a quote or closing punctuation.
_TOKEN = re.compile(r"""(?:(?<=^)|(?<=[\s'"`(\[<=,;]))(~[^\s'"`)\]>,;]*|\.{0,2}/[^\s'"`)\]>,;]*|[^\s'"`)\]>,;/]+(?:/[^\s'"`)\]>,;]*)+)""")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def outside_workspace_paths(text: str, workspace: str) -> list[str]:
    """The tokens of ``text`` that name a place outside ``workspace`` (absolute, in order, unique)."""
    root = posixpath.normpath(workspace)
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(1).rstrip(".:!?")
        if not token or _URL.match(token) or (not token.startswith(("/", "~")) and ".." not in token.split("/")):
            continue
        if token.startswith("~"):
            found.append(token)
            continue
        resolved = posixpath.normpath(posixpath.join(root, token))
        if resolved != root and not resolved.startswith(root.rstrip("/") + "/"):
            found.append(token)
    return list(dict.fromkeys(found))
