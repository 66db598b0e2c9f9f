"""The gateway's exception tree (one base, a few narrow cases).

Failures a model should see travel as tool results with these ``reason``
codes; the servicer never sends a traceback.
"""

from __future__ import annotations

from services.kernel.errors import AiCodingError


class McpGatewayError(AiCodingError):
    """Base of every error the MCP gateway raises on purpose."""

    reason = "mcp_error"


class ServerConfigError(McpGatewayError):
    """One ``mcp.servers[]`` entry is invalid (the others still run)."""

    reason = "mcp_config_invalid"


class UnknownServer(McpGatewayError):
    """No configured server has this name."""

    reason = "mcp_unknown_server"


class NeedsAuth(McpGatewayError):
    """The remote server answered 401 and no usable token is stored."""

    reason = "mcp_needs_auth"


class TransportFailure(McpGatewayError):
    """The connection to a server broke (process died, socket closed)."""

    reason = "mcp_transport_failed"
