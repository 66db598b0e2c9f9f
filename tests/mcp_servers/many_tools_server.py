"""An MCP server with 13 tools described as verbosely as real servers describe theirs.

Used by ``bench/mcp.py`` to measure what registering every remote tool as its
own function costs per step, against the gateway's one ``mcp_call`` plus catalog.

    python tests/mcp_servers/many_tools_server.py
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("many", log_level="WARNING")

_BOILERPLATE = (
    " This tool talks to the project tracker's REST API on behalf of the signed-in user and respects "
    "their permissions. Results are paginated; pass the cursor from a previous response to continue. "
    "Rate limits apply (5,000 requests per hour); on HTTP 429 wait for the number of seconds in the "
    "Retry-After header. Timestamps are ISO 8601 in UTC. Returns JSON."
)

Repo = Annotated[str, Field(description="Repository in owner/name form, e.g. octo-org/widgets. Case-insensitive.")]
Cursor = Annotated[str, Field(description="Opaque pagination cursor from the previous page; empty for the first.")]
Limit = Annotated[int, Field(description="Maximum number of items to return per page, between 1 and 100.")]


def _tool(name: str, summary: str) -> None:
    def fn(repo: Repo, query: Annotated[str, Field(description="Free-text filter applied to titles and bodies.")] = "",
           cursor: Cursor = "", limit: Limit = 30) -> str:
        return f"{name}: {repo} {query} {cursor} {limit}"

    server.add_tool(fn, name=name, description=summary + _BOILERPLATE)


for _name, _summary in [
    ("list_issues", "List issues in a repository, optionally filtered by labels, state, assignee or milestone."),
    ("get_issue", "Get one issue with its title, body, labels, assignees, milestone and reaction counts."),
    ("create_issue", "Create a new issue with a title, a Markdown body, labels and assignees."),
    ("update_issue", "Update an issue's title, body, state, labels, assignees or milestone."),
    ("add_comment", "Add a Markdown comment to an issue or pull request as the signed-in user."),
    ("list_pull_requests", "List pull requests with their head and base branches, review state and checks."),
    ("get_pull_request", "Get one pull request including its diff statistics, reviewers and mergeability."),
    ("create_pull_request", "Open a pull request from a head branch into a base branch with a description."),
    ("merge_pull_request", "Merge a pull request using merge, squash or rebase, optionally deleting the branch."),
    ("search_code", "Search code across repositories with the tracker's code search syntax and qualifiers."),
    ("get_file_contents", "Read a file or directory listing at a ref (branch, tag or commit SHA)."),
    ("list_commits", "List commits on a branch with author, date, message and verification status."),
    ("create_branch", "Create a branch from another branch or from a commit SHA."),
]:
    _tool(_name, _summary)


if __name__ == "__main__":
    server.run("stdio")
