"""Fenwick (binary indexed) tree: prefix sums with point updates in O(log n).

ParDNN keeps one per device over node levels to ask "how much work does this device have
within a time span" while secondary clusters are being merged.

>>> f = Fenwick(5)
>>> f.add(1, 2.0); f.add(3, 5.0); f.add(4, 1.0)
>>> f.range_sum(1, 4), f.prefix(2)
(7.0, 2.0)
"""

from __future__ import annotations

__all__ = ["Fenwick"]


class Fenwick:
    """Sums over ``[0, size)`` positions, all starting at 0."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self._tree = [0.0] * (size + 1)

    def __len__(self) -> int:
        return len(self._tree) - 1

    def add(self, i: int, value: float) -> None:
        """Add ``value`` at position ``i``."""
        if not 0 <= i < len(self):
            raise IndexError(f"position {i} out of range [0, {len(self)})")
        tree = self._tree
        i += 1
        while i < len(tree):
            tree[i] += value
            i += i & -i

    def prefix(self, i: int) -> float:
        """Sum of positions ``[0, i)``."""
        tree = self._tree
        i = min(max(i, 0), len(tree) - 1)
        total = 0.0
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def range_sum(self, lo: int, hi: int) -> float:
        """Sum of positions ``[lo, hi)`` (0 when empty)."""
        return self.prefix(hi) - self.prefix(lo) if hi > lo else 0.0
