"""Stochastic SVD (randomized range finder, Halko et al.) of a tall matrix.

    python examples/ssvd.py                          # 200,000 x 500, k = 10
    python examples/ssvd.py --check                  # same code on NumPy, small data, compare

``Y = A @ Omega`` samples the range of ``A``; ``power`` rounds of ``A @ (A.T @ Y)``
sharpen it; then ``Q = qr(Y)``, ``B = Q.T @ A`` is small and its SVD gives the
leading singular triplets.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "SSVD"
SIZES = {"n": 200_000, "d": 500, "k": 10, "oversample": 10, "power": 2}
CHECK_SIZES = {"n": 2000, "d": 60, "k": 5, "oversample": 5, "power": 2}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    # a decaying spectrum, so the leading singular values are well separated
    scale = 0.7 ** np.arange(args.d)
    A = np.random.randn(args.n, args.d) * scale
    omega = np.random.randn(args.d, args.k + args.oversample)
    return A, omega


def ssvd(A: Any, omega: Any, k: int, power: int) -> tuple[Any, Any, Any]:
    """``U[:, :k], s[:k], Vt[:k]`` of ``A`` from the random test matrix ``omega``."""
    Q, _ = np.linalg.qr(A @ omega)
    for _ in range(power):
        Z, _ = np.linalg.qr(A.T @ Q)
        Q, _ = np.linalg.qr(A @ Z)
    Ub, s, Vt = np.linalg.svd(Q.T @ A, full_matrices=False)
    return Q @ Ub[:, :k], s[:k], Vt[:k]


def program(A: Any, omega: Any, args: Namespace) -> tuple[Any, Any]:
    U, s, Vt = ssvd(A, omega, args.k, args.power)
    # singular vectors are defined up to sign: make each V row's first entry positive
    signs = np.sign(Vt[:, 0])
    return s, Vt * signs[:, None]


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    return f"leading singular values {result[0].round(3).tolist()}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
