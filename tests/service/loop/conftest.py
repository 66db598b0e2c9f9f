"""Fixtures for the loop service tests (defined in harness.py so e2e tests can share them)."""

from tests.service.loop.harness import fake, make_stack, workspace

__all__ = ["fake", "make_stack", "workspace"]
