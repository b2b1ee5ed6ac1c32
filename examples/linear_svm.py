"""Linear SVM trained by mini-batch stochastic sub-gradient descent (Pegasos).

    python examples/linear_svm.py                    # 10^6 x 32, 20 batches of 50,000
    python examples/linear_svm.py --check            # same code on NumPy, small data, compare

The rows are i.i.d., so consecutive slices serve as random mini-batches.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "linear SVM (SGD)"
SIZES = {"n": 1_000_000, "d": 32, "batch": 50_000, "iters": 20, "lam": 1e-4}
CHECK_SIZES = {"n": 3000, "d": 8, "batch": 500, "iters": 6, "lam": 1e-3}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    X = np.random.randn(args.n, args.d)
    w_true = np.linspace(-1.0, 1.0, args.d)
    y = np.sign(X @ w_true + 0.3 * np.random.randn(args.n))
    return X, y


def pegasos(X: Any, y: Any, batch: int, iters: int, lam: float) -> Any:
    """Weights after ``iters`` mini-batch steps with step size ``1 / (lam * t)``."""
    n, d = X.shape
    w = np.zeros(d)
    for t in range(1, iters + 1):
        start = ((t - 1) * batch) % (n - batch + 1)
        Xb, yb = X[start : start + batch], y[start : start + batch]
        violated = (yb * (Xb @ w) < 1).astype(X.dtype)
        grad = lam * w - (Xb.T @ (yb * violated)) / batch
        w = w - grad / (lam * t)
    return w


def program(X: Any, y: Any, args: Namespace) -> tuple[Any, Any]:
    w = pegasos(X, y, args.batch, args.iters, args.lam)
    return w, (np.sign(X @ w) == y).mean()


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    return f"training accuracy {float(result[1]):.4f}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
