"""Principal component analysis from the covariance matrix.

    python examples/pca.py                           # 10^6 x 50, 5 components
    python examples/pca.py --check                   # same code on NumPy, small data, compare

Centering and ``Xc.T @ Xc`` are the distributed work; the ``d x d`` eigenproblem is small.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "PCA"
SIZES = {"n": 1_000_000, "d": 50, "k": 5}
CHECK_SIZES = {"n": 3000, "d": 12, "k": 3}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    mixing = np.random.randn(args.d, args.d) * (0.8 ** np.arange(args.d))
    return (np.random.randn(args.n, args.d) @ mixing.T + 5.0,)


def pca(X: Any, k: int) -> tuple[Any, Any, Any]:
    """The top ``k`` components (as columns), their variances and the projected data."""
    Xc = X - X.mean(axis=0)
    cov = (Xc.T @ Xc) / (X.shape[0] - 1)
    variances, vectors = np.linalg.eigh(cov)  # ascending
    components = vectors[:, ::-1][:, :k]
    # eigenvectors are defined up to sign: make each one's first entry positive
    components = components * np.sign(components[0])
    return components, variances[::-1][:k], Xc @ components


def program(X: Any, args: Namespace) -> tuple[Any, Any, Any]:
    components, variances, projected = pca(X, args.k)
    return components, variances, projected.std(axis=0)


def summary(result: tuple[Any, Any, Any], args: Namespace) -> str:
    variances = result[1]
    return f"top {args.k} variances {variances.round(3).tolist()}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
