"""Monte-Carlo price of an arithmetic Asian call option under geometric Brownian motion.

    python examples/monte_carlo_option.py            # 10^6 paths x 50 steps
    python examples/monte_carlo_option.py --check    # same code on NumPy, small data, compare

The log-price paths are a running sum (``cumsum`` along the time axis) of normal steps.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "Monte-Carlo option pricing"
SIZES = {"paths": 1_000_000, "steps": 50, "spot": 100.0, "strike": 100.0, "rate": 0.02, "vol": 0.3}
CHECK_SIZES = {"paths": 4000, "steps": 12, "spot": 100.0, "strike": 100.0, "rate": 0.02, "vol": 0.3}
YEARS = 1.0


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    return (np.random.randn(args.paths, args.steps),)


def asian_call(shocks: Any, spot: float, strike: float, rate: float, vol: float) -> tuple[Any, Any]:
    """Discounted price estimate and its standard error."""
    paths, steps = shocks.shape
    dt = YEARS / steps
    drift = (rate - 0.5 * vol * vol) * dt
    prices = spot * np.exp(np.cumsum(drift + vol * np.sqrt(dt) * shocks, axis=1))
    payoff = np.maximum(prices.mean(axis=1) - strike, 0.0) * np.exp(-rate * YEARS)
    return payoff.mean(), payoff.std() / np.sqrt(paths)


def program(shocks: Any, args: Namespace) -> tuple[Any, Any]:
    return asian_call(shocks, args.spot, args.strike, args.rate, args.vol)


def summary(result: tuple[Any, Any], args: Namespace) -> str:
    price, stderr = result
    return f"Asian call price {float(price):.4f} +- {float(stderr):.4f}"


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
