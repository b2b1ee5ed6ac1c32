"""Conjugate gradient solve of a dense symmetric positive definite system.

    python examples/conjugate_gradient.py            # n = 8000, 20 iterations
    python examples/conjugate_gradient.py --check    # same code on NumPy, small data, compare

A fixed number of iterations keeps the whole solve one lazy graph (no early exit that
would force a value mid-loop); the final residual norm shows convergence.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "conjugate gradient"
SIZES = {"n": 8000, "iters": 20}
CHECK_SIZES = {"n": 300, "iters": 10}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    B = np.random.rand(args.n, args.n)
    # symmetric with entries in [0, 1) and n on the diagonal: diagonally dominant, so SPD
    A = (B + B.T) / 2 + args.n * np.eye(args.n)
    b = np.random.rand(args.n)
    return A, b


def conjugate_gradient(A: Any, b: Any, iters: int) -> Any:
    """``x`` after ``iters`` CG steps from ``x = 0``."""
    x = np.zeros_like(b)
    r = b
    p = r
    rs = r @ r
    for _ in range(iters):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_next = r @ r
        p = r + (rs_next / rs) * p
        rs = rs_next
    return x


def program(A: Any, b: Any, args: Namespace) -> tuple[Any, Any]:
    x = conjugate_gradient(A, b, args.iters)
    residual = b - A @ x
    return x, np.sqrt(residual @ residual) / np.sqrt(b @ b)


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    return f"relative residual |b - Ax| / |b| = {float(result[1]):.3e}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
