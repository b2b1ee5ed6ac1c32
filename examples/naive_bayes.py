"""Gaussian naive Bayes: fit per-class means and variances, then classify.

    python examples/naive_bayes.py                   # 10^6 x 20, 5 classes
    python examples/naive_bayes.py --check           # same code on NumPy, small data, compare

Per-class sums come from one matrix product with the one-hot label matrix.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "naive Bayes"
SIZES = {"n": 1_000_000, "d": 20, "classes": 5}
CHECK_SIZES = {"n": 3000, "d": 6, "classes": 3}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    labels = np.floor(np.random.rand(args.n) * args.classes)
    class_means = np.random.randn(args.classes, args.d)
    onehot = (labels[:, None] == np.arange(args.classes)).astype(np.float64)
    X = onehot @ class_means + np.random.randn(args.n, args.d)
    return X, labels


def fit(X: Any, labels: Any, classes: int) -> tuple[Any, Any, Any]:
    """Class log-priors, means and variances."""
    onehot = (labels[:, None] == np.arange(classes)).astype(X.dtype)
    counts = onehot.sum(axis=0)
    means = (onehot.T @ X) / counts[:, None]
    variances = (onehot.T @ (X * X)) / counts[:, None] - means * means + 1e-9
    return np.log(counts / X.shape[0]), means, variances


def predict(X: Any, log_prior: Any, means: Any, variances: Any) -> Any:
    # log N(x | mu, var) summed over features, expanded so it is matrix products
    inv = 1.0 / variances
    loglik = (
        -0.5 * (X * X) @ inv.T
        + X @ (means * inv).T
        - 0.5 * ((means * means) * inv).sum(axis=1)
        - 0.5 * np.log(2 * np.pi * variances).sum(axis=1)
    )
    return (loglik + log_prior).argmax(axis=1)


def program(X: Any, labels: Any, args: Namespace) -> tuple[Any, Any]:
    log_prior, means, variances = fit(X, labels, args.classes)
    predicted = predict(X, log_prior, means, variances)
    return means, (predicted == labels).mean()


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    return f"training accuracy {float(result[1]):.4f}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
