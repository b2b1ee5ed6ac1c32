"""Where distributing a small array starts to pay: ``spartan.config.local_below_bytes``.

For arrays of 64 KiB to 32 MiB, times the same NumPy code held in the driver (NumPy
directly, the small-array path) and distributed over the workers (``tiling="row"``),
side by side in one run, and prints distributed / driver: where that ratio falls below
1, the workers win. Workloads: an element-wise chain with a sum (one evaluation of
fused tiles) and a Jacobi sweep (four shifted reads and a write, forced every step).

    python bench/local_threshold.py [--workers 2] [--repeats 5] [--save]

Writes ``bench/out/local_threshold.md`` (``--save``: ``bench/results/``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy

import spartan

SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20]


def chain(x: Any) -> float:
    return float(((x * 2 + 1) ** 2).sum())


def jacobi(u: Any) -> float:
    for _ in range(3):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return float(u[1, 1])


WORKLOADS: dict[str, Callable[[Any], float]] = {"chain+sum": chain, "jacobi x3": jacobi}


def _time(f: Callable[[Any], float], data: numpy.ndarray, tiling: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        x = spartan.array(data, tiling=tiling)
        spartan.evaluate(x)
        start = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--save", action="store_true", help="write to bench/results/")
    args = p.parse_args(argv)
    spartan.init(num_workers=args.workers)
    rows = []
    for nbytes in SIZES:
        n = int((nbytes // 8) ** 0.5)
        data = numpy.random.default_rng(0).random((n, n))
        for name, f in WORKLOADS.items():
            spartan.config.local_below_bytes = nbytes + 1  # held in the driver
            driver = _time(f, data, None, args.repeats)
            spartan.config.local_below_bytes = 0
            tiled = _time(f, data, "row", args.repeats)
            rows.append((nbytes, name, driver, tiled))
            print(
                f"{nbytes >> 10:>7} KiB {name:<10} driver {driver * 1e3:8.2f} ms  "
                f"{args.workers} workers {tiled * 1e3:8.2f} ms  ratio {tiled / driver:6.2f}x",
                flush=True,
            )
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# Small-array threshold ({stamp})",
        "",
        f"Machine: {platform.node()}, {os.cpu_count()} cores; {args.workers} Ray workers. "
        f"Command: `python bench/local_threshold.py {' '.join(sys.argv[1:])}`",
        "",
        "| array | workload | driver (NumPy) | distributed | distributed / driver |",
        "|---:|---|---:|---:|---:|",
    ]
    for nbytes, name, driver, tiled in rows:
        lines.append(
            f"| {nbytes >> 10} KiB | {name} | {driver * 1e3:.2f} ms | {tiled * 1e3:.2f} ms "
            f"| {tiled / driver:.2f}x |"
        )
    folder = os.path.join(os.path.dirname(__file__), "results" if args.save else "out")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "local_threshold.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
