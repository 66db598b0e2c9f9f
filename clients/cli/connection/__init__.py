"""The client's gRPC edge: typed aio calls to the loop, the memory service and the MCP gateway.

Only this package and :mod:`clients.cli.convert` import the generated protobuf modules; callers get view models
(:mod:`clients.cli.views`) and ``ClientError`` (one readable line, never a traceback).
"""
