"""Hooks: user programs run at points of a turn (config.py: the format; engine.py: how they run)."""
