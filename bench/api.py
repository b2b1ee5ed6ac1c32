"""NumPy API benchmarks (issue 4): distributed sort, unique, tall-skinny QR, einsum.

    python bench/api.py                  # default sizes, 2 Ray workers
    python bench/api.py --scale 0.25     # smaller inputs

Runs spartan (Ray backend), single-process NumPy and Dask Array (threaded scheduler)
on the same inputs in one process run and prints median times and ratios. Dask has no
distributed sort: its row is ``x.compute()`` followed by NumPy's sort (a gather).
Spartan's and Dask's results stay distributed (``evaluate`` / ``persist``) except where
the operation itself returns to the driver. Writes ``bench/results/api.md``.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy

log = logging.getLogger("spartan")


def timed(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every input size")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "api.md"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    import dask
    import dask.array as da
    import ray

    import spartan

    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    spartan.init(backend="ray", num_workers=args.workers)
    dask.config.set(scheduler="threads", num_workers=args.workers)
    rng = numpy.random.default_rng(0)
    chunks = 2 * args.workers

    n_sort = int(4_000_000 * args.scale)
    m_qr, n_qr = int(1_000_000 * args.scale), 16
    n_ein = int(1500 * args.scale**0.5)
    cases = []

    v = rng.standard_normal(n_sort)
    labels = rng.integers(0, 1000, n_sort)
    tall = rng.standard_normal((m_qr, n_qr))
    a = rng.standard_normal((n_ein, n_ein))
    b = rng.standard_normal((n_ein, n_ein))
    batch = rng.standard_normal((64, 64, 256))

    def sp_arr(x):  # noqa: ANN001
        return spartan.array(x).evaluate()

    def da_arr(x):  # noqa: ANN001
        return da.from_array(x, chunks=(max(1, x.shape[0] // chunks),) + x.shape[1:]).persist()

    sv, sl, st, sa, sb, sbatch = map(sp_arr, (v, labels, tall, a, b, batch))
    dv, dl, dt, dA, dB, dbatch = map(da_arr, (v, labels, tall, a, b, batch))

    cases.append(
        (
            f"sort {n_sort:,} float64",
            lambda: spartan.sort(sv).evaluate(),
            lambda: numpy.sort(v),
            lambda: numpy.sort(dv.compute()),
        )
    )
    cases.append(
        (
            f"argsort {n_sort:,} float64",
            lambda: spartan.argsort(sv).evaluate(),
            lambda: numpy.argsort(v, kind="stable"),
            lambda: numpy.argsort(dv.compute(), kind="stable"),
        )
    )
    cases.append(
        (
            f"unique {n_sort:,} int64 (1000 values)",
            lambda: spartan.unique(sl).evaluate(),
            lambda: numpy.unique(labels),
            lambda: da.unique(dl).compute(),
        )
    )
    cases.append(
        (
            f"TSQR {m_qr:,}x{n_qr}",
            lambda: spartan.evaluate(*spartan.linalg.qr(st)),
            lambda: numpy.linalg.qr(tall),
            lambda: dask.persist(*da.linalg.tsqr(dt)),
        )
    )
    cases.append(
        (
            f"einsum ij,jk->ik {n_ein}x{n_ein}",
            lambda: spartan.einsum("ij,jk->ik", sa, sb).evaluate(),
            lambda: numpy.einsum("ij,jk->ik", a, b, optimize=True),
            lambda: da.einsum("ij,jk->ik", dA, dB).persist(),
        )
    )
    cases.append(
        (
            "einsum bij,bjk->bik 64x64x256 @ 64x256x64",
            lambda: spartan.einsum("bij,bjk->bik", sbatch, sbatch.transpose(0, 2, 1)).evaluate(),
            lambda: numpy.einsum("bij,bjk->bik", batch, batch.transpose(0, 2, 1)),
            lambda: da.einsum("bij,bjk->bik", dbatch, dbatch.transpose(0, 2, 1)).persist(),
        )
    )

    header = "| operation | NumPy (s) | Dask (s) | spartan (s) | spartan/NumPy | spartan/Dask |"
    rows = [header, "|---|---:|---:|---:|---:|---:|"]
    print(header)
    print(rows[1])
    for name, f_sp, f_np, f_da in cases:
        log.info("running %s", name)
        f_sp()  # warm-up (imports, pickling caches)
        t_np = timed(f_np, args.repeat)
        t_da = timed(f_da, args.repeat)
        t_sp = timed(f_sp, args.repeat)
        row = (
            f"| {name} | {t_np:.3f} | {t_da:.3f} | {t_sp:.3f} | {t_sp / t_np:.2f} | "
            f"{t_sp / t_da:.2f} |"
        )
        rows.append(row)
        print(row, flush=True)

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{os.cpu_count()}-core {platform.machine()}"
    text = "\n".join(
        [
            "# NumPy API benchmarks (bench/api.py)",
            "",
            f"Measured {when} on {machine}, spartan on {args.workers} Ray workers, Dask threaded "
            f"scheduler with {args.workers} threads, median of {args.repeat} runs, "
            f"`--scale {args.scale}`. Dask has no distributed sort: its sort rows gather with "
            "`compute()` and sort with NumPy.",
            "",
            *rows,
            "",
        ]
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    spartan.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
