"""Solve a symmetric positive definite system through its Cholesky factor.

    python examples/cholesky.py                      # n = 4000
    python examples/cholesky.py --check              # same code on NumPy, small data, compare

``A = L @ L.T``; then ``L y = b`` and ``L.T x = y``.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "Cholesky solve"
SIZES = {"n": 4000}
CHECK_SIZES = {"n": 200}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    M = np.random.rand(args.n, args.n)
    A = M @ M.T / args.n + np.eye(args.n)
    b = np.random.rand(args.n)
    return A, b


def cholesky_solve(A: Any, b: Any) -> Any:
    L = np.linalg.cholesky(A)
    y = np.linalg.solve(L, b)
    return np.linalg.solve(L.T, y)


def program(A: Any, b: Any, args: Namespace) -> tuple[Any, Any]:
    x = cholesky_solve(A, b)
    residual = A @ x - b
    return x, np.sqrt(residual @ residual)


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    return f"|Ax - b| = {float(result[1]):.3e}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
