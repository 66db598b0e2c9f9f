"""Contracts and domain types: the loop's lowest floor (no feature, no other service)."""
