"""Alternating least squares matrix factorization of a sparse-ish ratings matrix.

    python examples/als.py                           # 20000 users x 2000 items, rank 10
    python examples/als.py --check                   # same code on NumPy, small data, compare

Missing ratings are zeros with weight 0. Each half step solves one small ``k x k``
system per user (or item): ``(V.T diag(w_u) V + lambda I) u = V.T diag(w_u) r_u``.
The item factors are read by every user row, which is the thesis's example of an
array worth duplicating on all workers.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "ALS"
SIZES = {"users": 20_000, "items": 2_000, "rank": 10, "iters": 5, "density": 0.05, "lam": 0.1}
CHECK_SIZES = {"users": 300, "items": 80, "rank": 4, "iters": 3, "density": 0.2, "lam": 0.1}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    observed = np.random.rand(args.users, args.items) < args.density
    true_u = np.random.rand(args.users, args.rank)
    true_v = np.random.rand(args.items, args.rank)
    ratings = np.where(observed, true_u @ true_v.T, 0.0)
    V0 = np.random.rand(args.items, args.rank)
    return ratings, observed.astype(np.float64), V0


def half_step(R: Any, W: Any, V: Any, lam: float) -> Any:
    """The factors of the rows of ``R`` that best fit ``R ~ U @ V.T`` where ``W`` is 1."""
    items, k = V.shape
    outer = (V[:, :, None] * V[:, None, :]).reshape(items, k * k)
    A = (W @ outer).reshape(W.shape[0], k, k) + lam * np.eye(k)
    b = (R * W) @ V
    return np.linalg.solve(A, b[:, :, None])[:, :, 0]


def als(R: Any, W: Any, V: Any, iters: int, lam: float) -> tuple[Any, Any]:
    """User and item factors after ``iters`` alternations from item factors ``V``."""
    for _ in range(iters):
        U = half_step(R, W, V, lam)
        V = half_step(R.T, W.T, U, lam)
    return U, V


def program(R: Any, W: Any, V: Any, args: Namespace) -> tuple[Any, Any, Any]:
    U, V = als(R, W, V, args.iters, args.lam)
    err = (R - U @ V.T) * W
    rmse = np.sqrt((err * err).sum() / W.sum())
    return U, V, rmse


def summary(result: tuple[Any, Any, Any], args: Namespace) -> str:
    return f"training RMSE on observed ratings {float(result[2]):.5f}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
