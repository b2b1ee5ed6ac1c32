"""PageRank by power iteration on a random directed graph (dense link matrix).

    python examples/pagerank.py                      # 8000 pages, 20 iterations
    python examples/pagerank.py --check              # same code on NumPy, small data, compare

``links[i, j] = 1`` when page ``j`` links to page ``i``. Pages without out-links
spread their rank evenly over all pages.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "PageRank"
SIZES = {"n": 8000, "iters": 20, "density": 0.001, "damping": 0.85}
CHECK_SIZES = {"n": 300, "iters": 10, "density": 0.02, "damping": 0.85}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    return ((np.random.rand(args.n, args.n) < args.density).astype(np.float64),)


def pagerank(links: Any, iters: int, damping: float) -> Any:
    """Rank vector (sums to 1) after ``iters`` power-iteration steps."""
    n = links.shape[0]
    out_degree = links.sum(axis=0)
    dangling = out_degree == 0
    transition = links / np.maximum(out_degree, 1)
    rank = np.full(n, 1.0 / n)
    for _ in range(iters):
        spread = (rank * dangling).sum() / n
        rank = damping * (transition @ rank + spread) + (1 - damping) / n
    return rank


def program(links: Any, args: Namespace) -> tuple[Any, Any]:
    rank = pagerank(links, args.iters, args.damping)
    return rank, rank.sum()


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    rank, total = result
    top = rank.argsort()[::-1][:5]
    return f"rank sums to {float(total):.6f}; top pages {top.tolist()}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
