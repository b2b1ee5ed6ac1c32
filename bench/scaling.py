"""Scaling: 1 vs 2 workers, per-task overhead, and a simulated multi-node Ray cluster.

    python bench/scaling.py --quick          # small sizes (< 2 min)
    python bench/scaling.py                  # default sizes
    python bench/scaling.py --no-cluster     # skip the multi-node part

1. Workers: the same workloads with 1 and with 2 spartan workers on a local Ray
   instance (ideal speed-up 2x on this 2-core machine); medians of ``--repeats``.
2. Overhead: empty tasks per second through spartan's backend (``submit`` + ``wait``
   of a task on a 1-element block), next to a bare Ray actor call.
3. Cluster: a head and a second node started with ``ray start`` on this machine (one
   CPU each, free ports, ``RAY_AUTH_MODE=disabled`` for every node and the driver, a
   private ``--temp-dir`` so nobody else's ``ray.init()`` finds it). A driver run in a
   subprocess joins it with two spartan workers, one per node, and reports the bytes
   moved between workers and between nodes, measured by the workers, next to the
   optimizer's prediction (``spartan.explain``). The nodes are stopped in ``finally``
   by the process ids found under that temp dir (``ray stop`` would also stop every
   other Ray instance on the machine).

Results go to ``bench/results/scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402
import psutil  # noqa: E402

log = logging.getLogger("spartan")
RESULTS = ROOT / "bench" / "results" / "scaling.md"
CORES = os.cpu_count() or 1


# ---------------------------------------------------------------- workloads


def _workloads(quick: bool) -> dict[str, tuple[Callable[..., Any], Callable[[], tuple]]]:
    """name -> (program on spartan arrays, inputs built with NumPy)."""
    import kmeans as km
    import logistic_regression as lr
    from harness import with_module

    rng = numpy.random.default_rng(0)
    n = 500_000 if quick else 4_000_000
    side = 1500 if quick else 5000

    def logreg(sp: Any, x: Any, y: Any) -> Any:
        return with_module(lr.logistic_regression, sp)(x, y, 10, 1.0)

    def kmeans(sp: Any, x: Any) -> Any:
        centers, _, inertia = with_module(km.kmeans, sp)(x, 16, 10)
        return centers, inertia

    def labels(x: numpy.ndarray) -> numpy.ndarray:
        return (x @ numpy.linspace(-1, 1, x.shape[1]) > 0).astype(numpy.float64)

    def logreg_inputs() -> tuple:
        x = rng.standard_normal((n, 32))
        return x, labels(x)

    return {
        "fused": (
            lambda sp, a: (sp.sin(a) ** 2 + sp.cos(a) ** 2).sum(),
            lambda: (rng.random(8 * n),),
        ),
        "logreg": (logreg, logreg_inputs),
        "kmeans": (kmeans, lambda: (rng.random((n, 32)),)),
        "transpose_add": (lambda sp, x: (x + x.T).sum(axis=0), lambda: (rng.random((side, side)),)),
        "matmul": (lambda sp, a, b: a @ b, lambda: (rng.random((side // 2, side // 2)),) * 2),
        "gram": (lambda sp, x: x.T @ x, lambda: (rng.standard_normal((n, 32)),)),
    }


def _leaves(result: Any) -> list[Any]:
    return [x for v in result for x in _leaves(v)] if isinstance(result, tuple) else [result]


def run_on_spartan(
    program: Callable[..., Any], inputs: tuple, repeats: int
) -> tuple[float, dict[str, Any]]:
    """Median seconds of ``program`` on the current spartan workers, its stats and plan."""
    import spartan

    arrays = tuple(spartan.asarray(a) for a in inputs)
    spartan.evaluate(*arrays)
    want = program(numpy, *inputs)
    times = []
    for _ in range(repeats + 1):  # the first run warms up
        spartan.reset_stats()
        t0 = time.perf_counter()
        result = program(spartan, *arrays)
        outs = [r for r in _leaves(result) if isinstance(r, spartan.Array)]
        spartan.evaluate(*outs)
        got = [numpy.asarray(r) for r in _leaves(result)]
        times.append(time.perf_counter() - t0)
    for g, w in zip(got, _leaves(want)):
        if not numpy.allclose(g, w, rtol=1e-6, atol=1e-8):
            raise AssertionError(f"spartan's result differs from NumPy's for {program}")
    stats = spartan.stats()
    plans = {}
    for r in outs:
        try:
            planned = spartan.explain(r).planned
        except (ValueError, RuntimeError):
            continue
        plans[id(planned)] = planned.plan.total
    stats["predicted"] = sum(plans.values()) if plans else None
    return statistics.median(times[1:]), stats


# ---------------------------------------------------------------- 1 vs 2 workers


def workers_table(quick: bool, repeats: int) -> list[list[str]]:
    import ray

    import spartan

    ray.init(address="local", num_cpus=CORES, include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        for name, (program, make) in _workloads(quick).items():
            if name in ("transpose_add", "matmul", "gram"):
                continue
            inputs = make()
            secs = {}
            for workers in (1, 2):
                spartan.init(backend="ray", num_workers=workers)
                secs[workers], stats = run_on_spartan(program, inputs, repeats)
                spartan.shutdown()
                log.info("%s on %d worker(s): %.3f s", name, workers, secs[workers])
            size = " x ".join(map(str, inputs[0].shape))
            rows.append(
                [name, size, f"{secs[1]:.3f}", f"{secs[2]:.3f}", f"{secs[1] / secs[2]:.2f}x"]
            )
        rows.append(["-", "-", "-", "-", "-"])
        rows += overhead_rows()
    finally:
        spartan.shutdown()
        ray.shutdown()
    return rows


def overhead_rows(n: int = 2000) -> list[list[str]]:
    """Empty tasks per second: spartan's backend, and a bare Ray actor call."""
    import ray

    import spartan
    from spartan.backend import session

    be = spartan.init(backend="ray", num_workers=2)
    for w in range(be.nworkers):
        be.put(("one", w), numpy.zeros(1), w)
    be.wait()
    t0 = time.perf_counter()
    for i in range(n):
        w = i % be.nworkers
        be.submit(w, numpy.positive, [("one", w)], [("out", i)])
    be.wait()
    spartan_rate = n / (time.perf_counter() - t0)
    be.delete([("out", i) for i in range(n)])
    session.shutdown()

    @ray.remote(num_cpus=0)
    class Empty:
        def call(self) -> None:
            return None

    actors = [Empty.remote() for _ in range(2)]
    ray.get([a.call.remote() for a in actors])
    t0 = time.perf_counter()
    ray.get([actors[i % 2].call.remote() for i in range(n)])
    ray_rate = n / (time.perf_counter() - t0)
    for a in actors:
        ray.kill(a)
    return [
        ["empty tasks/s, spartan backend", f"{n} tasks", "-", f"{spartan_rate:,.0f}/s", "-"],
        ["empty calls/s, bare Ray actors", f"{n} calls", "-", f"{ray_rate:,.0f}/s", "-"],
    ]


# ---------------------------------------------------------------- simulated cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_nodes(temp_dir: str) -> None:
    """Stop the Ray processes of our cluster only: those whose command line names ``temp_dir``."""
    me = os.getpid()
    ours = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if p.info["pid"] != me and any(temp_dir in part for part in p.info["cmdline"] or []):
            ours.append(p)
    for p in ours:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(ours, timeout=10)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            continue


def cluster_table(quick: bool, repeats: int, nodes: int = 2) -> list[list[str]]:
    """Run the workloads on ``nodes`` Ray nodes of this machine, from a driver subprocess."""
    ray_bin = str(Path(sys.executable).with_name("ray"))
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_ACCEPT_TOOLS_WARNING="1")
    env.pop("RAY_ADDRESS", None)
    temp_dir = tempfile.mkdtemp(prefix="spartan-scaling-")
    port = _free_port()
    cpus = max(1, CORES // nodes)
    common = ["--num-cpus", str(cpus), "--disable-usage-stats"]
    try:
        subprocess.run(
            [ray_bin, "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}",
             "--include-dashboard=false", f"--node-manager-port={_free_port()}",
             f"--object-manager-port={_free_port()}", *common],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        for _ in range(nodes - 1):
            subprocess.run(
                [ray_bin, "start", f"--address=127.0.0.1:{port}",
                 f"--node-manager-port={_free_port()}", f"--object-manager-port={_free_port()}",
                 *common],
                env=env, check=True, capture_output=True,
            )  # fmt: skip
        argv = [sys.executable, __file__, "--cluster-driver", f"127.0.0.1:{port}"]
        argv += ["--repeats", str(repeats)] + (["--quick"] if quick else [])
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"the simulated cluster failed:\n{e.stderr[-3000:]}") from None
    finally:
        _stop_nodes(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def cluster_driver(address: str, quick: bool, repeats: int) -> None:
    """Inside the cluster: one spartan worker per node; print the rows as JSON."""
    import ray

    import spartan

    ray.init(address=address, log_to_driver=False)
    be = spartan.init(backend="ray", num_workers=len(ray.nodes()))
    nodes = len(set(be.nodes))
    rows = []
    for name, (program, make) in _workloads(quick).items():
        inputs = make()
        secs, stats = run_on_spartan(program, inputs, repeats)
        predicted = stats["predicted"]
        rows.append(
            [
                name,
                " x ".join(map(str, inputs[0].shape)),
                f"{be.nworkers} workers / {nodes} nodes",
                f"{secs:.3f}",
                f"{stats['bytes_moved'] / 1e6:,.2f}",
                f"{stats['bytes_moved_between_nodes'] / 1e6:,.2f}",
                "-" if predicted is None else f"{predicted / 1e6:,.2f}",
            ]
        )
    spartan.shutdown()
    ray.shutdown()
    print(json.dumps(rows))


# ---------------------------------------------------------------- reporting

WORKER_COLUMNS = ["workload", "input", "1 worker s", "2 workers s", "speed-up"]
CLUSTER_COLUMNS = ["workload", "input", "cluster", "median s", "moved MB", "between nodes MB",
                   "predicted MB"]  # fmt: skip


def table(columns: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *map(line, rows)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-cluster", action="store_true", help="skip the multi-node part")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--cluster-driver", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cluster_driver:
        cluster_driver(args.cluster_driver, args.quick, args.repeats)
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    log.setLevel(logging.INFO)
    os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")

    workers = table(WORKER_COLUMNS, workers_table(args.quick, args.repeats))
    print(workers, flush=True)
    cluster = None
    if not args.no_cluster:
        cluster = table(CLUSTER_COLUMNS, cluster_table(args.quick, args.repeats))
        print(cluster)
    if not args.no_save:
        when = subprocess.run(["date", "-u"], capture_output=True, text=True).stdout.strip()
        mem = psutil.virtual_memory().total / 2**30
        text = [
            "# Scaling: 1 vs 2 workers, task overhead, simulated multi-node cluster",
            "",
            f"Run: {when}; machine: {CORES}-core {platform.machine()}, {mem:.0f} GB; command: "
            f"`python bench/scaling.py {' '.join(sys.argv[1:] if argv is None else argv)}`.",
            f"Medians of {args.repeats} runs after a warm-up; every result checked against NumPy.",
            "",
            "## 1 vs 2 workers (local Ray), and empty-task throughput",
            "",
            workers,
            "",
        ]
        if cluster:
            text += [
                "## Simulated cluster: `ray start` head + 1 node, 1 CPU each, one spartan "
                "worker per node",
                "",
                "All nodes and the driver ran with `RAY_AUTH_MODE=disabled` (no token shared).",
                "`moved` = bytes between spartan workers, `between nodes` = the part of it that",
                "crossed nodes (both measured by the workers); `predicted` = the optimizer's total",
                "for the last evaluated plan (`spartan.explain`).",
                "",
                cluster,
                "",
            ]
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
