"""Fuzzy c-means: every point belongs to every cluster with a membership weight.

    python examples/fuzzy_kmeans.py                  # 10^6 x 10, k = 8, 10 iterations
    python examples/fuzzy_kmeans.py --check          # same code on NumPy, small data, compare

Memberships ``u[i, j] = 1 / sum_c (d[i, j] / d[i, c]) ** (2 / (m - 1))``; centers are
the ``u ** m``-weighted means of the points.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "fuzzy k-means"
SIZES = {"n": 1_000_000, "d": 10, "k": 8, "iters": 10, "m": 2.0}
CHECK_SIZES = {"n": 3000, "d": 5, "k": 4, "iters": 5, "m": 2.0}


def make_data(args: Namespace) -> tuple[Any, ...]:
    """Points around ``k`` random centers (on uniform noise fuzzy c-means makes every
    membership ~1/k: all centers collapse onto the mean)."""
    np.random.seed(args.seed)
    blob = np.floor(np.random.rand(args.n) * args.k)
    onehot = (blob[:, None] == np.arange(args.k)).astype(np.float64)
    centers = 10.0 * np.random.rand(args.k, args.d)
    return (onehot @ centers + np.random.randn(args.n, args.d),)


def fuzzy_kmeans(X: Any, k: int, iters: int, m: float) -> tuple[Any, Any]:
    """Centers and memberships after ``iters`` updates from the first ``k`` points."""
    centers = X[:k]
    sq_norms = (X * X).sum(axis=1)[:, None]
    for _ in range(iters):
        dist2 = sq_norms - 2 * (X @ centers.T) + (centers * centers).sum(axis=1)
        # a point sitting on a center would divide by zero
        inv = np.maximum(dist2, 1e-12) ** (-1.0 / (m - 1))
        u = inv / inv.sum(axis=1)[:, None]
        weights = u**m
        centers = (weights.T @ X) / weights.sum(axis=0)[:, None]
    return centers, u


def program(X: Any, args: Namespace) -> tuple[Any, Any]:
    centers, u = fuzzy_kmeans(X, args.k, args.iters, args.m)
    return centers, u.sum(axis=0)


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    centers, mass = result
    return f"cluster masses {mass.round(1).tolist()}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
