"""What `ai-coding mcp add` writes for its flags, and the hint a 404 on client registration gets."""

from __future__ import annotations

import pytest

from clients.cli.commands.mcp_add import OAuthFlags, add_entry


def test_a_command_is_stdio_and_a_url_is_http_unless_the_transport_says_sse() -> None:
    local = add_entry("fs", ["npx", "pkg"], "", "", {}, {"K": "v"}, False, OAuthFlags())
    assert local == {"name": "fs", "auto_approve": False, "type": "local", "command": ["npx", "pkg"],
                     "environment": {"K": "v"}}
    remote = add_entry("r", [], "https://h/mcp", "", {"A": "b"}, {}, True, OAuthFlags())
    assert remote["type"] == "remote" and "transport" not in remote and remote["headers"] == {"A": "b"}
    assert add_entry("r", [], "https://h/sse", "SSE", {}, {}, False, OAuthFlags())["transport"] == "sse"


def test_client_credentials_become_the_oauth_grant() -> None:
    entry = add_entry("m", [], "https://h/mcp", "http", {}, {}, False,
                      OAuthFlags("id", "${S}", client_credentials=True))
    assert entry["oauth"] == {"client_id": "id", "client_secret": "${S}", "grant": "client_credentials"}


@pytest.mark.parametrize(("command", "url", "transport", "oauth", "says"), [
    ([], "", "", OAuthFlags(), "a stdio server is a command"),
    (["x"], "", "ws", OAuthFlags(), "is not one of stdio, http, sse"),
    (["x"], "", "", OAuthFlags(client_id="a"), "OAuth options are for remote servers"),
    (["x"], "https://h", "http", OAuthFlags(), "needs --url URL and no command"),
    ([], "https://h", "", OAuthFlags(client_credentials=True, client_id="a"), "needs --client-id and --client-secret"),
    ([], "https://h", "", OAuthFlags(client_secret="s"), "needs the --client-id it belongs to"),
])
def test_a_flag_that_does_not_fit_says_which(command: list[str], url: str, transport: str, oauth: OAuthFlags,
                                             says: str) -> None:
    with pytest.raises(ValueError, match=says):
        add_entry("n", command, url, transport, {}, {}, False, oauth)


def test_a_404_on_registration_says_to_set_a_client_id() -> None:
    from mcp.client.auth.exceptions import OAuthRegistrationError

    from services.mcp_gateway.connection import describe_error

    text = describe_error(OAuthRegistrationError("Registration failed: 404 Not Found"))
    assert text.startswith("Registration failed: 404 Not Found: the server does not register clients")
    assert "oauth.client_id" in text and "--client-id ID" in text
