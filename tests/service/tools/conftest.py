"""A real tool service (tests/support/tool_service.py) and a workspace for these tests."""

from tests.support.tool_service import make_service, service, workspace

__all__ = ["make_service", "service", "workspace"]
