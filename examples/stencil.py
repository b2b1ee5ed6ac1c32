"""2-D heat diffusion by Jacobi iteration (5-point stencil) on a square plate.

    python examples/stencil.py                       # 4000 x 4000 float32, 20 steps
    python examples/stencil.py --check               # same code on NumPy, small data, compare

The boundary stays fixed; each step replaces every interior value by the mean of its
four neighbours, written as shifted slices of the grid.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "2-D stencil (Jacobi heat)"
SIZES = {"n": 4000, "iters": 20}
CHECK_SIZES = {"n": 64, "iters": 5}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    return (np.random.rand(args.n, args.n).astype(np.float32),)


def jacobi_step(u: Any) -> Any:
    interior = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    middle = np.concatenate([u[1:-1, :1], interior, u[1:-1, -1:]], axis=1)
    return np.concatenate([u[:1], middle, u[-1:]], axis=0)


def program(u: Any, args: Namespace) -> tuple[Any, Any]:
    for _ in range(args.iters):
        u = jacobi_step(u)
    change = np.abs(u - jacobi_step(u)).max()
    return u, change


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    u, change = result
    return f"mean temperature {float(u.mean()):.5f}; largest change in one more step {float(change):.3e}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
