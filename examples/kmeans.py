"""k-means clustering (Lloyd's algorithm) on random points.

    python examples/kmeans.py                        # 10^6 x 10 points, k = 8, 10 iterations
    python examples/kmeans.py --n 20000000 --d 16 --k 16 --workers 2
    python examples/kmeans.py --check                # same code on NumPy, small data, compare

Each iteration assigns every point to its nearest center and moves each center to the
mean of its points; the loop is recorded lazily, so spartan sees all iterations at once.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "k-means"
SIZES = {"n": 1_000_000, "d": 10, "k": 8, "iters": 10}
CHECK_SIZES = {"n": 3000, "d": 5, "k": 4, "iters": 5}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    return (np.random.rand(args.n, args.d),)


def kmeans(X: Any, k: int, iters: int) -> tuple[Any, Any, Any]:
    """Centers, labels and inertia after ``iters`` Lloyd steps from the first ``k`` points."""
    centers = X[:k]
    for _ in range(iters):
        # |x - c|^2 = |x|^2 - 2 x.c + |c|^2; |x|^2 does not change which center is nearest
        dist = (centers * centers).sum(axis=1) - 2 * (X @ centers.T)
        labels = dist.argmin(axis=1)
        onehot = (labels[:, None] == np.arange(k)).astype(X.dtype)
        counts = onehot.sum(axis=0)
        sums = onehot.T @ X
        # an empty cluster keeps its center
        centers = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centers)
    inertia = (dist.min(axis=1) + (X * X).sum(axis=1)).sum()
    return centers, labels, inertia


def program(X: Any, args: Namespace) -> tuple[Any, Any, Any]:
    return kmeans(X, args.k, args.iters)


def summary(result: tuple[Any, Any, Any], args: Namespace) -> str:
    centers, labels, inertia = result
    sizes = [int((labels == c).sum()) for c in range(args.k)]
    return f"inertia before the last update {float(inertia):.6g}; cluster sizes {sizes}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
