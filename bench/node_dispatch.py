"""The driver's actor calls per evaluation, with and without per-node relays.

    python bench/node_dispatch.py                      # 2 and 16 workers on this node
    python bench/node_dispatch.py --workers 2 8 16 --repeats 6

Each worker count runs in a fresh process twice, without relays and with one relay
(``SPARTAN_NODE_DISPATCH_MIN_WORKERS=2``). A k-means step and 10 logistic-regression
steps (one evaluation) run on 2 tiles of 64 rows per worker. The script reports the
actor calls the driver made in one evaluation (counted by wrapping
``ray.actor.ActorMethod._remote`` in the driver: a relay's own calls are made
elsewhere) and the driver's time. More workers than cores share the cores
(``cpus_per_worker=0``). See docs/cluster.md, "Per-node dispatch".
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy

CHILD = "--child"


def kmeans_step(sp: Any, x: Any) -> Any:
    c = x[:4]
    dist = (c * c).sum(axis=1) - 2 * (x @ c.T)
    onehot = (dist.argmin(axis=1)[:, None] == sp.arange(4)).astype(x.dtype)
    return (onehot.T @ x) / sp.maximum(onehot.sum(axis=0), 1)[:, None]


def logreg(sp: Any, x: Any, y: Any, iters: int = 10) -> Any:
    w = sp.zeros(x.shape[1])
    for _ in range(iters):
        p = 1 / (1 + sp.exp(-(x @ w)))
        w = w - 0.1 * (x.T @ (p - y)) / x.shape[0]
    return w


def child(workers: int, repeats: int) -> list[dict[str, Any]]:
    """One process: each workload's calls and driver time per evaluation."""
    import ray.actor

    import spartan

    counts: collections.Counter[str] = collections.Counter()
    made = ray.actor.ActorMethod._remote

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts[self._method_name] += 1
        return made(self, *args, **kwargs)

    ray.actor.ActorMethod._remote = counted  # type: ignore[method-assign]
    spartan.config.local_below_bytes = 0
    spartan.init(backend="ray", num_workers=workers, cpus_per_worker=0 if workers > 2 else 1)
    rng = numpy.random.default_rng(0)
    n = workers * 2 * 64
    xn, yn = rng.standard_normal((n, 8)), (rng.random(n) > 0.5).astype(float)
    x, y = spartan.asarray(xn), spartan.asarray(yn)
    spartan.evaluate(x, y)
    rows = []
    for name, program, args, nargs in (
        ("k-means step", kmeans_step, (x,), (xn,)),
        ("logreg, 10 steps", logreg, (x, y), (xn, yn)),
    ):
        runs = []
        for _ in range(repeats + 1):  # the first warms up
            before = dict(spartan.stats()["driver_seconds"])
            counts.clear()
            t0 = time.perf_counter()
            out = spartan.compute(program(spartan, *args))[0]
            wall = time.perf_counter() - t0
            calls = dict(counts)
            after = spartan.stats()["driver_seconds"]
            own = sum(after[k] - before.get(k, 0.0) for k in ("plan", "lower", "dispatch"))
            runs.append(
                {"calls": sum(calls.values()), "by_method": calls, "wall": wall, "own": own}
            )
        if not numpy.allclose(out, program(numpy, *nargs)):
            raise AssertionError(f"{name}: spartan's result differs from NumPy's")
        runs = runs[1:]
        rows.append(
            {
                "workers": workers,
                "workload": name,
                "calls": [r["calls"] for r in runs],
                "by_method": runs[-1]["by_method"],
                "wall_ms": statistics.median(r["wall"] for r in runs) * 1e3,
                "own_ms": statistics.median(r["own"] for r in runs) * 1e3,
            }
        )
    spartan.shutdown()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, nargs="+", default=[2, 16])
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument(CHILD, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.repeats)))
        return 0
    print(
        "| workers | workload | relay | calls per evaluation | median | driver's own ms | wall ms |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for workers in args.workers:
        for relay in (False, True):
            env = dict(os.environ, SPARTAN_NODE_DISPATCH_MIN_WORKERS="2" if relay else "0")
            out = subprocess.run(
                [sys.executable, __file__, CHILD, str(workers), "--repeats", str(args.repeats)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for row in json.loads(out.strip().splitlines()[-1]):
                calls = row["calls"]
                print(
                    f"| {workers} | {row['workload']} | {'yes' if relay else 'no'} | "
                    f"{min(calls)}–{max(calls)} | {statistics.median(calls):g} | "
                    f"{row['own_ms']:.1f} | {row['wall_ms']:.1f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
