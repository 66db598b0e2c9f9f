"""Tests for calc.py: run with `python3 -m unittest -q` (no third-party packages needed)."""

import unittest

from calc import clamp, inclusive_range_sum  # type: ignore[import-not-found]


class CalcTest(unittest.TestCase):
    def test_clamp_keeps_values_inside_the_range(self) -> None:
        self.assertEqual(clamp(15, 0, 10), 10)
        self.assertEqual(clamp(-3, 0, 10), 0)
        self.assertEqual(clamp(4, 0, 10), 4)

    def test_inclusive_range_sum_counts_both_ends(self) -> None:
        self.assertEqual(inclusive_range_sum(1, 4), 10)
        self.assertEqual(inclusive_range_sum(5, 5), 5)


if __name__ == "__main__":
    unittest.main()
