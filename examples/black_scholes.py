"""Black-Scholes prices of European call and put options.

    python examples/black_scholes.py                 # 2 * 10^7 options
    python examples/black_scholes.py --check         # same code on NumPy, small data, compare

The normal CDF uses the Abramowitz-Stegun polynomial (NumPy has no ``erf``), as in
the classic Black-Scholes benchmark; everything fuses into one pass over the options.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from harness import run_example

import spartan as np

WHAT = "Black-Scholes"
SIZES = {"n": 20_000_000, "rate": 0.02, "vol": 0.3}
CHECK_SIZES = {"n": 5000, "rate": 0.02, "vol": 0.3}


def make_data(args: Namespace) -> tuple[Any, ...]:
    np.random.seed(args.seed)
    price = 10.0 + 90.0 * np.random.rand(args.n)
    strike = 10.0 + 90.0 * np.random.rand(args.n)
    years = 0.25 + 1.75 * np.random.rand(args.n)
    return price, strike, years


def normal_cdf(x: Any) -> Any:
    """Standard normal CDF, absolute error < 7.5e-8 (Abramowitz & Stegun 26.2.17)."""
    k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
    poly = k * (
        0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))
    )
    tail = np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi) * poly
    return np.where(x < 0, tail, 1.0 - tail)


def black_scholes(price: Any, strike: Any, years: Any, rate: float, vol: float) -> tuple[Any, Any]:
    """Call and put prices."""
    sqrt_t = np.sqrt(years)
    d1 = (np.log(price / strike) + (rate + 0.5 * vol * vol) * years) / (vol * sqrt_t)
    d2 = d1 - vol * sqrt_t
    discounted = strike * np.exp(-rate * years)
    call = price * normal_cdf(d1) - discounted * normal_cdf(d2)
    put = discounted * normal_cdf(-d2) - price * normal_cdf(-d1)
    return call, put


def program(price: Any, strike: Any, years: Any, args: Namespace) -> tuple[Any, Any, Any]:
    call, put = black_scholes(price, strike, years, args.rate, args.vol)
    # put-call parity: C - P = S - K exp(-rT)
    parity = np.abs(call - put - (price - strike * np.exp(-args.rate * years))).max()
    return call.mean(), put.mean(), parity


def summary(result: tuple[Any, Any, Any], args: Namespace) -> str:
    call, put, parity = result
    return (
        f"mean call {float(call):.4f}, mean put {float(put):.4f}; parity error {float(parity):.2e}"
    )


def main(argv: list[str] | None = None) -> int:
    return run_example(program, make_data, summary, SIZES, CHECK_SIZES, WHAT, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
