"""GPU benchmark (issue 7): spartan with CuPy tiles vs hand-written CuPy vs NumPy.

    python bench/gpu.py                       # sizes that fill several GB of GPU memory
    python bench/gpu.py --scale 0.1           # quick

The three workloads (k-means, logistic regression, a large matmul) are written once
against an array module ``xp`` and run with ``xp`` = spartan (GPU tiles, one worker per
GPU), ``cupy`` (hand-written single-GPU code) and ``numpy`` (CPU). Times are medians of
``--repeat`` runs after a warm-up; spartan's results stay on the GPU workers.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy


def kmeans(xp, X, k: int, iters: int):  # noqa: ANN001 -- one body for every module
    centers = X[:k]
    for _ in range(iters):
        dist = (centers * centers).sum(axis=1) - 2 * (X @ centers.T)
        labels = dist.argmin(axis=1)
        onehot = (labels[:, None] == xp.arange(k)).astype(X.dtype)
        counts = onehot.sum(axis=0)
        centers = (onehot.T @ X) / xp.maximum(counts, 1)[:, None]
    return centers


def logreg(xp, X, y, iters: int):  # noqa: ANN001
    w = xp.zeros((X.shape[1],), dtype=X.dtype)
    for _ in range(iters):
        p = 1.0 / (1.0 + xp.exp(-(X @ w)))
        w = w - 0.1 * (X.T @ (p - y)) / X.shape[0]
    return w


def matmul(xp, A, B):  # noqa: ANN001
    return A @ B


def timed(run: Callable[[], object], sync: Callable[[object], object], repeat: int) -> float:
    sync(run())  # warm-up: compile kernels, allocate pools
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        sync(run())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--skip-numpy", action="store_true")
    parser.add_argument("--out", default=None, help="write the table (markdown) here")
    args = parser.parse_args()

    import cupy

    import spartan

    spartan.init(backend="local", device="gpu", num_workers=1)
    n, d, k = int(20_000_000 * args.scale), 32, 16
    m = int(16384 * min(1.0, args.scale**0.5))
    gb = n * d * 8 / 1e9
    print(
        f"k-means/logreg: {n} x {d} float64 ({gb:.1f} GB), k={k}, {args.iters} iterations; "
        f"matmul {m}x{m} float64; GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}"
    )

    def cp_sync(x):
        cupy.cuda.Device().synchronize()
        return x

    def sp_sync(x):
        return spartan.evaluate(*x) if isinstance(x, tuple) else spartan.evaluate(x)

    rows = []
    # data, generated on each device once
    Xs = spartan.random.rand(n, d)
    ys = (spartan.random.rand(n) > 0.5).astype(numpy.float64)
    As, Bs = spartan.random.rand(m, m), spartan.random.rand(m, m)
    spartan.evaluate(Xs, ys, As, Bs)
    rng = cupy.random.default_rng(0)
    Xc, yc = rng.random((n, d)), (rng.random(n) > 0.5).astype(cupy.float64)
    Ac, Bc = rng.random((m, m)), rng.random((m, m))
    work = {
        "k-means": (
            lambda: kmeans(spartan, Xs, k, args.iters),
            lambda: kmeans(cupy, Xc, k, args.iters),
        ),
        "logistic regression": (
            lambda: logreg(spartan, Xs, ys, args.iters),
            lambda: logreg(cupy, Xc, yc, args.iters),
        ),
        "matmul": (lambda: matmul(spartan, As, Bs), lambda: matmul(cupy, Ac, Bc)),
    }
    for name, (run_sp, run_cp) in work.items():
        t_sp = timed(run_sp, sp_sync, args.repeat)
        t_cp = timed(run_cp, cp_sync, args.repeat)
        rows.append([name, t_sp, t_cp])
        print(f"  {name}: spartan {t_sp:.3f} s, cupy {t_cp:.3f} s", flush=True)
    work.clear()
    Xc = yc = Ac = Bc = None  # free GPU memory for the NumPy runs
    cupy.get_default_memory_pool().free_all_blocks()
    if not args.skip_numpy:
        gen = numpy.random.default_rng(0)
        Xn, yn = gen.random((n, d)), (gen.random(n) > 0.5).astype(numpy.float64)
        An, Bn = gen.random((m, m)), gen.random((m, m))
        np_runs = [
            lambda: kmeans(numpy, Xn, k, args.iters),
            lambda: logreg(numpy, Xn, yn, args.iters),
            lambda: matmul(numpy, An, Bn),
        ]
        for row, run in zip(rows, np_runs):
            row.append(timed(run, lambda x: x, 1))
    lines = [
        "| workload | spartan GPU s | CuPy s | NumPy s | spartan / CuPy | NumPy / spartan |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, t_sp, t_cp, *t_np in rows:
        tn = t_np[0] if t_np else float("nan")
        lines.append(
            f"| {name} | {t_sp:.3f} | {t_cp:.3f} | {tn:.3f} | {t_sp / t_cp:.2f}x | {tn / t_sp:.1f}x |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
