"""Scaling: 1 vs 2 workers, per-task overhead, and a simulated multi-node Ray cluster.

    python bench/scaling.py --quick          # small sizes (< 2 min)
    python bench/scaling.py                  # default sizes
    python bench/scaling.py --no-cluster     # skip the multi-node part
    python bench/scaling.py --sweep          # strong/weak scaling, 1-16 workers, vs Dask
    python bench/scaling.py --sweep-rows bench/out/scaling_sweep.json   # table -> results

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
4. Sweep (``--sweep``, for a machine with cores to spare): k-means, logistic
   regression, a stencil and ``A @ A.T`` at each of ``--workers``, strong (``--strong-gb``)
   and weak (``--weak-mb`` per worker) scaling, spartan on Ray against Dask distributed
   with as many one-thread workers; inputs made on the workers, results compared. Rows
   go to ``--json`` as they finish (a ``--deadline`` skips the rest, so a time-boxed run
   ends with its table); ``--sweep-rows`` renders them into the results file's section.

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
from typing import Any, Protocol

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


# ---------------------------------------------------------------- strong and weak scaling

SWEEP_WORKLOADS = ("kmeans", "logreg", "stencil", "matmul")
KMEANS_K, KMEANS_ITERS, LOGREG_ITERS, STENCIL_STEPS = 16, 3, 5, 4


def _noise(xp: Any, rows: int, cols: int, chunks: Any) -> Any:
    """Uniform-looking data in [0, 1) from a formula of the indices, so every system makes
    the same bits on its own workers (nothing is shipped from the driver)."""
    f8 = numpy.float64
    if chunks is None:  # spartan and NumPy
        i, j = xp.arange(rows, dtype=f8)[:, None], xp.arange(cols, dtype=f8)[None, :]
    else:  # dask.array: row chunks as a Dask user would cut them
        i = xp.arange(rows, dtype=f8, chunks=chunks[0])[:, None]
        j = xp.arange(cols, dtype=f8, chunks=chunks[1])[None, :]
    v = xp.sin(i * 12.9898 + j * 78.233) * 43758.5453
    return v - xp.floor(v)


def _sweep_inputs(xp: Any, name: str, nbytes: int, chunks: Callable[..., Any]) -> tuple:
    """The workload's inputs, about ``nbytes`` in its main array (matmul: ``nbytes`` is n,
    and the inputs are ``A`` and ``A.T``)."""
    if name in ("kmeans", "logreg"):
        n = max(nbytes // (8 * 32), 64)
        x = _noise(xp, n, 32, chunks(n, 32))
        return (x, (x[:, 0] + x[:, 1] > 1.0).astype(numpy.float64)) if name == "logreg" else (x,)
    if name == "stencil":
        m = max(int((nbytes / 8) ** 0.5), 16)
        return (_noise(xp, m, m, chunks(m, m)),)
    # A @ A.T (a Gram-like product): one formula, so spartan and Dask alike see one array
    a = _noise(xp, nbytes, nbytes, chunks(nbytes, nbytes))
    return a, a.T


def _sweep_program(xp: Any, name: str, *inputs: Any) -> Any:
    """The timed computation: a small result, except matmul's (kept on the workers)."""
    import kmeans as km
    import logistic_regression as lr
    from harness import with_module

    if name == "kmeans":
        centers, _, inertia = with_module(km.kmeans, xp)(inputs[0], KMEANS_K, KMEANS_ITERS)
        return centers, inertia
    if name == "logreg":
        return with_module(lr.logistic_regression, xp)(*inputs, LOGREG_ITERS, 1.0)
    if name == "stencil":
        u = inputs[0]
        for _ in range(STENCIL_STEPS):  # Jacobi steps on the interior, which shrinks by one
            u = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        return u.sum(axis=0)
    return inputs[0] @ inputs[1]


def _sweep_size(name: str, mode: str, workers: int, strong_bytes: int, weak_bytes: int,
                matmul_n: int) -> int:  # fmt: skip
    if name == "matmul":  # weak: the same multiply-adds per worker
        n = matmul_n if mode == "strong" else round(matmul_n / 2 * workers ** (1 / 3))
        return max(16, n - n % 16)
    return strong_bytes if mode == "strong" else weak_bytes * workers


class _SweepSystem(Protocol):
    """One system at one worker count: build inputs on the workers, time a program."""

    name: str

    def inputs(self, workload: str, size: int) -> tuple: ...
    def run(self, workload: str, inputs: tuple) -> tuple[Any, dict[str, float]]: ...
    def summary(self, workload: str, result: Any) -> list[numpy.ndarray]: ...
    def close(self) -> None: ...


class _SpartanSweep(_SweepSystem):
    name = "spartan"

    def __init__(self, workers: int) -> None:
        import spartan

        self.sp = spartan
        spartan.init(backend="ray", num_workers=workers)

    def inputs(self, workload: str, size: int) -> tuple:
        arrays = _sweep_inputs(self.sp, workload, size, lambda *shape: None)
        self.sp.evaluate(*arrays)
        return arrays

    def run(self, workload: str, inputs: tuple) -> tuple[Any, dict[str, float]]:
        self.sp.reset_stats()
        result = _sweep_program(self.sp, workload, *inputs)
        outs = [r for r in _leaves(result) if isinstance(r, self.sp.Array)]
        self.sp.evaluate(*outs)
        if workload != "matmul":
            result = tuple(numpy.asarray(r) for r in _leaves(result))
        stats = self.sp.stats()
        return result, {"moved_mb": stats["bytes_moved"] / 1e6,
                        "driver_s": stats["driver_seconds"]}  # fmt: skip

    def summary(self, workload: str, result: Any) -> list[numpy.ndarray]:
        if workload == "matmul":
            return [numpy.asarray(result.sum(axis=0))]
        return [numpy.asarray(r) for r in result]

    def close(self) -> None:
        self.sp.shutdown()


class _DaskSweep(_SweepSystem):
    name = "dask-dist"

    def __init__(self, workers: int) -> None:
        import dask.array
        from dask.distributed import Client, LocalCluster

        self.da = dask.array
        self.workers = workers
        # threads_per_worker=1 like spartan's one-CPU actors; the nanny sets
        # OMP_NUM_THREADS=1 as Ray does for a one-CPU actor, so BLAS is one thread in both
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        self.client = Client(cluster)
        self._runs = 0

    def _chunks(self, rows: int, cols: int) -> tuple[Any, Any]:
        # Dask's "auto" chunks (128 MiB), but no fewer row blocks than workers
        per = -(-rows // self.workers)
        auto = self.da.core.normalize_chunks(("auto", -1), (rows, cols), dtype=numpy.float64)
        return min(per, max(auto[0])), cols

    def inputs(self, workload: str, size: int) -> tuple:
        from dask.distributed import wait

        arrays = _sweep_inputs(self.da, workload, size, self._chunks)
        arrays = self.client.persist(list(arrays))
        wait(arrays)
        return tuple(arrays)

    def run(self, workload: str, inputs: tuple) -> tuple[Any, dict[str, float]]:
        from dask.distributed import wait

        result = _sweep_program(self.da, workload, *inputs)
        if workload == "matmul":
            # an equal graph has equal keys: the last run's product, still held, would be
            # found done. A last no-op layer named for this run makes the keys new
            self._runs += 1
            result = result.map_blocks(numpy.asarray, token=f"run{self._runs}", dtype=result.dtype)
            result = self.client.persist(result)
            wait(result)
            return result, {}
        futures = self.client.compute(list(_leaves(result)))
        return tuple(numpy.asarray(r) for r in self.client.gather(futures)), {}

    def summary(self, workload: str, result: Any) -> list[numpy.ndarray]:
        if workload == "matmul":
            return [numpy.asarray(result.sum(axis=0).compute())]
        return list(result)

    def close(self) -> None:
        self.client.cluster.close()
        self.client.close()


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Strong and weak scaling rows (one dict per system, mode, workload and worker count).

    Each row builds its inputs on the workers, runs the program until ``max_runs`` runs or
    ``run_budget`` seconds, and keeps the fastest. Results of the systems are compared with
    each other at equal sizes (and with NumPy under ``--check-numpy``); a difference is
    recorded in the row, not raised, so a long run always ends with its table."""
    import gc

    import ray

    start = time.perf_counter()
    strong = int(args.strong_gb * 2**30)
    weak = int(args.weak_mb * 2**20)
    rows: list[dict[str, Any]] = []
    reference: dict[tuple[str, int], list[numpy.ndarray]] = {}
    ray.init(address="local", num_cpus=max(args.workers), include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    systems = [_SpartanSweep] + ([_DaskSweep] if args.dask else [])
    try:
        for workers in args.workers:
            for make in systems:
                if time.perf_counter() - start > args.deadline:
                    log.warning("deadline: %s at %d workers skipped", make.name, workers)
                    continue
                system = make(workers)
                try:
                    names = args.sweep_workloads
                    if make is _DaskSweep and args.dask_workloads:
                        names = [n for n in names if n in args.dask_workloads]
                    for mode in args.modes:
                        for name in names:
                            if time.perf_counter() - start > args.deadline:
                                break
                            size = _sweep_size(name, mode, workers, strong, weak, args.matmul_n)
                            row = _sweep_one(system, name, mode, workers, size, args, reference)
                            rows.append(row)
                            log.info("%s", json.dumps(row))
                            out = Path(args.json)
                            out.parent.mkdir(parents=True, exist_ok=True)
                            out.write_text(json.dumps(rows, indent=1))
                            gc.collect()
                finally:
                    system.close()
    finally:
        ray.shutdown()
    return rows


def _sweep_one(system: _SweepSystem, name: str, mode: str, workers: int, size: int,
               args: argparse.Namespace, reference: dict) -> dict[str, Any]:  # fmt: skip
    t0 = time.perf_counter()
    inputs = system.inputs(name, size)
    build = time.perf_counter() - t0
    times, extra, result = [], {}, None
    while not times or (sum(times) < args.run_budget and len(times) < args.max_runs):
        del result
        t0 = time.perf_counter()
        result, extra = system.run(name, inputs)
        times.append(time.perf_counter() - t0)
    got = system.summary(name, result)
    del result, inputs
    key = (name, size)
    if args.check_numpy and key not in reference:
        want = _sweep_program(numpy, name, *_sweep_inputs(numpy, name, size, lambda *s: None))
        want = _leaves(want) if name != "matmul" else [want.sum(axis=0)]
        reference[key] = [numpy.asarray(w) for w in want]
    rtol = 1e-5 if name == "kmeans" else 1e-7
    if key in reference:
        same = all(numpy.allclose(g, w, rtol=rtol, atol=1e-9) for g, w in zip(got, reference[key]))
        check = "ok" if same else "DIFFERS"
    else:
        reference[key] = got
        check = "first"
    main = size if name == "matmul" else None
    return {
        "system": system.name, "mode": mode, "workload": name, "workers": workers,
        "size": f"{main} x {main}" if main else f"{size / 2**20:,.0f} MiB",
        "seconds": min(times), "runs": len(times), "times": times,
        "utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "build_s": build, "check": check, **extra,
    }  # fmt: skip


def sweep_table(rows: list[dict[str, Any]]) -> str:
    """Seconds and parallel efficiency by worker count; strong: T1 / (w Tw), weak: T1 / Tw."""
    out = []
    workers = sorted({r["workers"] for r in rows})
    for mode in ("strong", "weak"):
        sel = [r for r in rows if r["mode"] == mode]
        if not sel:
            continue
        cols = ["workload", "system", *(f"{w} w s" for w in workers)]
        cols += [f"eff {w} w" for w in workers if w > 1]
        cols += ["moved MB (max w)", "driver ms (max w)", "check"]
        body = []
        for name in dict.fromkeys(r["workload"] for r in sel):
            for system in dict.fromkeys(r["system"] for r in sel):
                mine = {r["workers"]: r for r in sel if r["workload"] == name
                        and r["system"] == system}  # fmt: skip
                if not mine:
                    continue
                t1 = mine[1]["seconds"] if 1 in mine else None
                cells = [name, system]
                cells += [f"{mine[w]['seconds']:.3f}" if w in mine else "-" for w in workers]
                for w in (w for w in workers if w > 1):
                    if t1 is None or w not in mine:
                        cells.append("-")
                        continue
                    eff = t1 / mine[w]["seconds"] / (w if mode == "strong" else 1)
                    cells.append(f"{eff:.0%}")
                last = mine[max(mine)]
                cells.append(f"{last['moved_mb']:,.1f}" if "moved_mb" in last else "-")
                own = last.get("driver_s") or {}
                own_s = sum(own.get(k, 0.0) for k in ("plan", "lower", "dispatch"))
                cells.append(f"{own_s * 1e3:,.1f}" if own else "-")
                checks = {r["check"] for r in mine.values()}
                cells.append("DIFFERS" if "DIFFERS" in checks else "ok")
                body.append(cells)
        sizes = sorted({(r["workload"], r["workers"], r["size"]) for r in sel})
        by_workload: dict[str, list[str]] = {}
        for name, w, size in sizes:
            by_workload.setdefault(name, []).append(f"{w}: {size}")
        out += [f"### {mode.capitalize()} scaling", ""]
        out += [f"- {name}: " + ", ".join(v) for name, v in by_workload.items()]
        out += ["", table(cols, body), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- reporting

WORKER_COLUMNS = ["workload", "input", "1 worker s", "2 workers s", "speed-up"]
CLUSTER_COLUMNS = ["workload", "input", "cluster", "median s", "moved MB", "between nodes MB",
                   "predicted MB"]  # fmt: skip


def table(columns: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *map(line, rows)])


SWEEP_HEADING = "## Strong and weak scaling"


def save_sweep(text: str, args: argparse.Namespace) -> None:
    """Replace the sweep's section of ``bench/results/scaling.md`` (the rest is kept)."""
    old = RESULTS.read_text() if RESULTS.exists() else ""
    head, _, tail = old.partition(SWEEP_HEADING)
    rest = tail[tail.find("\n## ") :] if "\n## " in tail else ""
    rows = json.loads(Path(args.sweep_rows).read_text())
    stamps = sorted(r["utc"] for r in rows if "utc" in r)  # (older rows: the file's time)
    mtime = Path(args.sweep_rows).stat().st_mtime
    when = stamps[-1] if stamps else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(mtime))
    section = [
        SWEEP_HEADING,
        "",
        f"Run: {when}; machine: {args.machine or platform.node()}; rows: `{args.sweep_rows}`.",
        f"k-means k = {KMEANS_K}, {KMEANS_ITERS} iterations; logistic regression "
        f"{LOGREG_ITERS} steps; stencil {STENCIL_STEPS} Jacobi steps (5 points); matmul "
        "A @ A.T (n x n), the product kept on the workers. Inputs made on the workers from a formula of the indices "
        "(the same bits in every system); the fastest of up to 3 runs, as many as fit in 4 s (a "
        "longer run is timed once, with spartan's planning and the workers' first calls); "
        "`driver ms`: spartan's own plan + lower + dispatch time per run; efficiency = T(1) / (w T(w)) strong, "
        "T(1) / T(w) weak. `check`: every result equal to the other system's (and to one "
        "worker's) at the same size.",
        "",
        text,
    ]
    RESULTS.write_text(head.rstrip() + "\n\n" + "\n".join(section).rstrip() + "\n" + rest)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--no-cluster", action="store_true", help="skip the multi-node part")
    p.add_argument("--no-save", action="store_true")
    p.add_argument("--cluster-driver", metavar="ADDRESS", help=argparse.SUPPRESS)
    s = p.add_argument_group("strong and weak scaling (--sweep)")
    s.add_argument("--sweep", action="store_true", help="run only the scaling sweep")
    s.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    s.add_argument("--modes", nargs="+", default=["strong", "weak"], choices=["strong", "weak"])
    s.add_argument("--sweep-workloads", nargs="+", default=list(SWEEP_WORKLOADS),
                   choices=SWEEP_WORKLOADS)  # fmt: skip
    s.add_argument("--strong-gb", type=float, default=2.0, help="main array, strong scaling")
    s.add_argument("--weak-mb", type=float, default=256.0, help="main array per worker, weak")
    s.add_argument("--matmul-n", type=int, default=4096, help="matmul side, strong scaling")
    s.add_argument("--max-runs", type=int, default=3)
    s.add_argument("--run-budget", type=float, default=4.0, help="runs stop after these seconds")
    s.add_argument("--deadline", type=float, default=1e9, help="seconds; later rows skipped")
    s.add_argument("--no-dask", dest="dask", action="store_false")
    s.add_argument("--dask-workloads", nargs="+", choices=SWEEP_WORKLOADS,
                   help="run Dask on these only (default: all)")  # fmt: skip
    s.add_argument("--check-numpy", action="store_true", help="also compare with NumPy")
    s.add_argument("--json", default=str(ROOT / "bench" / "out" / "scaling_sweep.json"),
                   help="write the rows here as they finish (default: bench/out/)")  # fmt: skip
    s.add_argument("--sweep-rows", help="render (and --save) rows from an earlier --json")
    s.add_argument("--machine", help="the machine's description for the saved table")
    args = p.parse_args(argv)
    if args.sweep or args.sweep_rows:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")
        if args.sweep_rows:
            rows = json.loads(Path(args.sweep_rows).read_text())
        else:
            rows = sweep(args)
        text = sweep_table(rows)
        print(text, flush=True)
        if not args.no_save and args.sweep_rows:
            save_sweep(text, args)
        return 0
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
