"""Helpers shared by several test folders (real services, never patches)."""
