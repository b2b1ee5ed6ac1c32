"""Logistic regression trained by full-batch gradient descent.

    python examples/logistic_regression.py           # 10^6 x 32, 10 steps
    python examples/logistic_regression.py --n 10000000 --d 32 --workers 2
    python examples/logistic_regression.py --check   # same code on NumPy, small data, compare

The labels come from a known linear rule plus noise, so the accuracy shows learning.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "logistic regression"
SIZES = {"n": 1_000_000, "d": 32, "iters": 10, "lr": 1.0}
CHECK_SIZES = {"n": 3000, "d": 8, "iters": 5, "lr": 1.0}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    X = np.random.randn(args.n, args.d)
    w_true = np.linspace(-1.0, 1.0, args.d)
    y = (X @ w_true + 0.5 * np.random.randn(args.n) > 0).astype(np.float64)
    return X, y


def logistic_regression(X: Any, y: Any, iters: int, lr: float) -> Any:
    """Weights after ``iters`` gradient steps on the mean log-loss."""
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - lr * (X.T @ (p - y)) / X.shape[0]
    return w


def program(X: Any, y: Any, args: Namespace) -> tuple[Any, Any]:
    w = logistic_regression(X, y, args.iters, args.lr)
    accuracy = ((X @ w > 0) == (y > 0.5)).mean()
    return w, accuracy


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    w, accuracy = result
    return f"training accuracy {float(accuracy):.4f}; |w| = {float((w * w).sum()) ** 0.5:.4f}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
