"""The MCP gateway service: every MCP server a user has, one ``mcp_call`` tool for the model.

Map: ``settings`` (the v2 config contract) -> ``gateway`` (all servers) ->
``supervisor`` (one owner task per server: connect, park, reconnect with
backoff) -> ``connection`` (the only SDK user: stdio, streamable HTTP).
``catalog`` renders the budgeted text, ``permissions`` is the loop's pure
permission helper, ``tool_schema`` the model-facing function, ``accounts`` /
``oauth`` / ``auth_store`` sign-in, ``servicer`` + ``convert`` the gRPC edge.
``permissions``, ``tool_schema``, ``catalog`` and ``settings`` import no SDK.
"""
