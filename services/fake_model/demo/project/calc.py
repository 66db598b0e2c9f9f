"""Small arithmetic helpers."""


def clamp(value: int, low: int, high: int) -> int:
    """Limit value to the range [low, high]."""
    return max(low, min(value, high))


def inclusive_range_sum(start: int, end: int) -> int:
    """Sum of the integers from start to end, both included."""
    return sum(range(start, end))
