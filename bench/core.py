"""Core benchmarks (issue 2): fused element-wise maps and per-task overhead.

    python bench/core.py                 # 1 GiB input, 2 workers
    python bench/core.py --gib 0.25      # smaller

Runs spartan (Ray backend), single-process NumPy and Dask Array (threaded scheduler) on
the same expression in one process run and prints median times and ratios. Spartan's
and Dask's results stay distributed/in memory (``evaluate`` / ``persist``); nothing is
pulled back to the driver in the timed region.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def expression(np, a):  # noqa: ANN001 -- the same code for every library
    return np.sqrt(a * a + 1.0) * 2.0 - a / 3.0 + np.exp(-a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="input size in GiB")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=2000, help="tasks for the overhead test")
    args = parser.parse_args()

    import dask
    import dask.array as da
    import ray

    import spartan

    n = int(args.gib * (1 << 30) / 8)
    rows = n // 1024
    shape = (rows, 1024)
    print(
        f"fused element-wise map on a {rows}x1024 float64 array ({args.gib:.2f} GiB), "
        f"{args.workers} workers, median of {args.repeat}"
    )

    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    spartan.init(backend="ray", num_workers=args.workers)

    x_np = numpy.random.default_rng(0).random(shape)
    t_numpy = timed(lambda: expression(numpy, x_np), args.repeat)
    x_np = None  # free before the next library runs

    x_sp = spartan.random.rand(*shape)
    spartan.evaluate(x_sp)
    t_spartan = timed(lambda: spartan.evaluate(expression(spartan, x_sp)), args.repeat)
    moved = spartan.stats()["bytes_moved"]
    x_sp = None

    chunk = max(1, rows // (4 * args.workers))
    x_da = da.random.random(shape, chunks=(chunk, 1024)).persist(scheduler="threads")
    with dask.config.set(scheduler="threads", num_workers=args.workers):
        t_dask = timed(lambda: expression(da, x_da).persist(), args.repeat)
    x_da = None

    print(f"{'library':<22}{'median s':>10}{'vs spartan':>12}")
    for name, t in [
        ("spartan", t_spartan),
        ("numpy (1 process)", t_numpy),
        ("dask threaded", t_dask),
    ]:
        print(f"{name:<22}{t:>10.3f}{t / t_spartan:>11.2f}x")
    print(f"bytes moved between workers: {moved}")

    # per-task overhead: a map over many tiny tiles
    ntasks = args.tasks
    spartan.config.tiles_per_worker = ntasks // args.workers
    small = spartan.ones((ntasks * 4,))
    spartan.evaluate(small)
    spartan.reset_stats()
    t = timed(lambda: spartan.evaluate(small + 1), 3)
    tasks = spartan.stats()["tasks"] // 3
    print(
        f"per-task overhead: {t / tasks * 1e3:.3f} ms over {tasks} tiny tasks "
        f"({args.workers} workers, tasks submitted and waited for by the driver)"
    )


if __name__ == "__main__":
    main()
