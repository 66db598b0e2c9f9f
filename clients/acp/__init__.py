"""``ai-coding acp``: the Agent Client Protocol (JSON-RPC 2.0 over stdio) for editors.

A client of the loop service like :mod:`clients.cli` (whose connection layer it reuses): an
editor's ACP session is a loop session, so ``ai-coding attach`` and ``sessions list`` see it.
It never imports openai or mcp; :mod:`clients.acp.rpc` and :mod:`clients.acp.mapping` are
stdlib only, so ``initialize`` is answered before grpc is even imported.
"""
