"""Ridge linear regression by the normal equations.

    python examples/linear_regression.py             # 10^6 x 32
    python examples/linear_regression.py --check     # same code on NumPy, small data, compare

The Gram matrix ``X.T @ X`` and ``X.T @ y`` are the distributed work; the small
``d x d`` solve is cheap.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "linear regression"
SIZES = {"n": 1_000_000, "d": 32, "ridge": 1e-3}
CHECK_SIZES = {"n": 3000, "d": 8, "ridge": 1e-3}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    X = np.random.randn(args.n, args.d)
    w_true = np.linspace(-2.0, 2.0, args.d)
    y = X @ w_true + 0.1 * np.random.randn(args.n)
    return X, y


def program(X: Any, y: Any, args: Namespace) -> tuple[Any, Any]:
    d = X.shape[1]
    w = np.linalg.solve(X.T @ X + args.ridge * np.eye(d), X.T @ y)
    residual = y - X @ w
    rmse = np.sqrt((residual * residual).mean())
    return w, rmse


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    w, rmse = result
    return f"training RMSE {float(rmse):.5f}; w[:4] = {w[:4].round(4).tolist()}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
