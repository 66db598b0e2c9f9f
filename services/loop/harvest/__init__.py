"""The memory harvest after a turn."""
