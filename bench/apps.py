"""Side-by-side application benchmarks: spartan vs NumPy vs Dask Array (threaded and
distributed) vs a hand-written two-actor Ray program (the ceiling), in one process run.

    python bench/apps.py --quick                 # every workload, small sizes (~3 min)
    python bench/apps.py --only kmeans logreg    # default sizes (inputs of >= 2 GB)
    python bench/apps.py --list

For each workload every system runs the same program text (the examples' functions are
rebound to each array module), alternating systems, after a warm-up, and the median
of ``--repeats`` runs is reported; each system's result is compared with NumPy's
before its time counts. Inputs are built once with NumPy and loaded into each system
before timing (spartan: ``spartan.asarray`` + evaluate; Dask distributed: persisted on
the workers). Every process (this one, Dask's workers, the ceiling's actors) keeps freed
memory for reuse, as spartan's workers do (``--default-malloc`` to not): on a VM that
hands freed pages back to the hypervisor, fresh memory costs up to 10x to touch, and
the other systems would pay that alone (glibc keeps big arrays only on a process's main
thread, so Dask's worker threads still map theirs). Peak memory is measured in one extra,
untimed run of each system (sampling processes takes the driver's GIL for a few
milliseconds every 20 ms, which would slow the timed runs of Python-heavy drivers
unevenly): the largest sum, sampled every 20 ms, of this process's private resident
memory above what it held just before the run (its heap trimmed first, so memory kept from
earlier runs does not hide the run's own) and the whole private resident memory of the
system's worker processes (spartan's Ray workers, Dask distributed's workers, the ceiling's
actors), which includes their share of the inputs, the memory they keep for reuse and
their runtime. Private: resident pages less shared ones (``rss - shared``). Ray's object
store keeps the pages of its arena mapped in every worker that touched them after the
objects are freed, so shared pages would count earlier workloads' leftovers; the object
store's own copy of the inputs sent from the driver is therefore not counted. The NumPy
inputs this process holds for every system are counted for none.
Spartan's bytes moved between workers are measured by the workers
(``spartan.stats()``) and set next to the optimizer's prediction for the last
evaluated graph (``spartan.explain``).

Before each timed run the harness waits until this process stops using the CPU
(``quiesce``): OpenBLAS's threads spin for about 0.1 s after every NumPy or Dask
call, and the next system's workers would have shared a core with them. And Dask
distributed's worker processes are stopped (SIGSTOP) while the other systems run: idle,
they used ~13% of a core at niceness 0, taken from whatever ran meanwhile.

Rows are merged into ``bench/out/apps.md`` (ignored by git), or with ``--save`` into the
tracked ``bench/results/apps.md`` (one row per workload, replaced when re-measured).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import logging
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402
import psutil  # noqa: E402

log = logging.getLogger("spartan")
#: the tracked results file (``--save``); a plain run writes ``bench/out/apps.md``
RESULTS = ROOT / "bench" / "results" / "apps.md"
OUT = ROOT / "bench" / "out" / "apps.md"
#: freed memory every process of every system keeps for reuse (main sets it)
KEEP_FREED = 0
#: seconds a Dask distributed run may take before it is cancelled and the system dropped
#: from that workload (a run in this process cannot be interrupted the same way)
PEER_TIMEOUT = 300
CORES = os.cpu_count() or 1
GB = 1e9


# ---------------------------------------------------------------- workloads


def _fused(xp: Any, a: Any) -> Any:
    return (xp.sin(a) ** 2 + xp.cos(a) ** 2).sum()


def _transpose_add(xp: Any, x: Any) -> Any:
    return (x + x.T).sum(axis=0)


def _gram(xp: Any, x: Any) -> Any:
    return x.T @ x


def _gemv(xp: Any, x: Any, w: Any) -> Any:
    return x @ w


def _matmul(xp: Any, a: Any, b: Any) -> Any:
    return a @ b


def _cumsum0(xp: Any, x: Any) -> Any:
    return xp.cumsum(x, axis=0)


def _cumsum1(xp: Any, x: Any) -> Any:
    return xp.cumsum(x, axis=1)


def _filter(xp: Any, x: Any) -> Any:
    return x[x > 0.5].sum()


def _star_stencil(xp: Any, u: Any) -> Any:
    """Radius-2 star stencil (13 points), summed so the result is small."""
    c = u[2:-2, 2:-2]
    near = u[1:-3, 2:-2] + u[3:-1, 2:-2] + u[2:-2, 1:-3] + u[2:-2, 3:-1]
    far = u[:-4, 2:-2] + u[4:, 2:-2] + u[2:-2, :-4] + u[2:-2, 4:]
    return (0.5 * c + 0.1 * near + 0.025 * far).sum(axis=0)


def _retile(xp: Any, x: Any) -> Any:
    """Re-cut an existing array by columns, then take column sums (local after the cut).

    spartan: ``retile``; Dask: ``rechunk`` to 8 column blocks; NumPy has no tiling, so it
    copies (the nearest equivalent of moving every element once)."""
    if hasattr(xp, "retile"):
        y = xp.retile(x, "column")
    elif hasattr(x, "rechunk"):
        # "tasks": the p2p default needs a distributed scheduler, and the threaded one has none
        y = x.rechunk((x.shape[0], -(-x.shape[1] // 8)), method="tasks")
    else:
        y = x.copy()
    return y.sum(axis=0)


def _example(module: str, function: str, *params: Any) -> Callable[..., Any]:
    """Workload running ``examples/<module>.<function>(*inputs, *params)`` on ``xp``."""
    import importlib

    from harness import with_module

    fn = getattr(importlib.import_module(module), function)

    def run(xp: Any, *inputs: Any) -> Any:
        return with_module(fn, xp)(*inputs, *params)

    run.__name__ = f"{module}.{function}"
    return run


def _kmeans(xp: Any, x: Any, k: int, iters: int) -> tuple[Any, Any]:
    """k-means centers and inertia, without the labels (near-ties may flip between systems)."""
    centers, _, inertia = _example("kmeans", "kmeans", k, iters)(xp, x)
    return centers, inertia


def _singular_values(ssvd: Callable[..., Any]) -> Callable[..., Any]:
    """SSVD's singular values (the vectors' signs are arbitrary, so not compared)."""

    def run(xp: Any, a: Any, omega: Any) -> Any:
        return ssvd(xp, a, omega)[1]

    return run


def _logreg_data(rng: numpy.random.Generator, n: int, d: int) -> tuple[numpy.ndarray, ...]:
    x = rng.standard_normal((n, d))
    y = (x @ numpy.linspace(-1, 1, d) + 0.5 * rng.standard_normal(n) > 0).astype(numpy.float64)
    return x, y


def _randn(rng: numpy.random.Generator, *shape: int) -> numpy.ndarray:
    return rng.standard_normal(shape)


def _rand(rng: numpy.random.Generator, *shape: int) -> numpy.ndarray:
    return rng.random(shape)


@dataclass
class Workload:
    """A program, its inputs at the default and at the ``--quick`` size."""

    name: str
    program: Callable[..., Any]
    make: Callable[[numpy.random.Generator], tuple[numpy.ndarray, ...]]
    sizes: str
    #: Dask chunk counts along each axis of the first input
    pieces: tuple[int, ...] = (8,)
    #: the hand-written actor program for this workload, with its parameters
    ceiling: str | None = None
    ceiling_params: tuple[int, ...] = ()


def _spd(rng: numpy.random.Generator, n: int) -> tuple[numpy.ndarray, numpy.ndarray]:
    b = rng.random((n, n))
    return (b + b.T) / 2 + n * numpy.eye(n), rng.random(n)


def _ratings(rng: numpy.random.Generator, users: int, items: int, rank: int) -> tuple:
    observed = rng.random((users, items)) < 0.05
    ratings = numpy.where(observed, rng.random((users, rank)) @ rng.random((items, rank)).T, 0)
    return ratings, observed.astype(numpy.float64), rng.random((items, rank))


#: k-means (n, d, k, iterations). At 2 GB one iteration: with all five systems loaded, the
#: spec's 10 (``--kmeans-iterations 10``) ran this 24 GB machine out of memory (Ray killed
#: a ceiling actor at 95%), and would take ~15 more minutes
KM = {"quick": (200_000, 32, 8, 10), "full": (8_000_000, 32, 16, 1)}
LR = {"quick": (400_000, 32), "full": (8_000_000, 32)}


def _workloads(quick: bool, kmeans_iterations: int | None = None) -> list[Workload]:
    size = "quick" if quick else "full"
    km = KM[size][:3] + (kmeans_iterations or KM[size][3],)

    def q(small: Any, big: Any) -> Any:
        return small if quick else big

    return [
        Workload(
            "fused",
            _fused,
            lambda r: (_rand(r, q(2**23, 2**27)),),
            f"{q(2**23, 2**27):,} f64",
            ceiling="fused",
        ),
        Workload(
            "transpose_add",
            _transpose_add,
            lambda r: (_rand(r, q(2000, 8000), q(2000, 8000)),),
            f"{q(2000, 8000)}^2",
            pieces=(4, 4),
        ),
        Workload(
            "gram",
            _gram,
            lambda r: (_randn(r, q(10**6, 8 * 10**6), 32),),
            f"{q(10**6, 8 * 10**6):,}x32",
        ),
        Workload(
            "gemv",
            _gemv,
            lambda r: (_randn(r, q(10**6, 8 * 10**6), 32), _randn(r, 32)),
            f"{q(10**6, 8 * 10**6):,}x32",
        ),
        Workload(
            "matmul",
            _matmul,
            lambda r: (_rand(r, q(1024, 4096), q(1024, 4096)),) * 2,
            f"{q(1024, 4096)}^2",
            pieces=(2, 2),
        ),
        Workload(
            "cumsum0",
            _cumsum0,
            lambda r: (_rand(r, q(2000, 6000), q(2000, 6000)),),
            f"{q(2000, 6000)}^2",
            pieces=(4, 4),
        ),
        Workload(
            "cumsum1",
            _cumsum1,
            lambda r: (_rand(r, q(2000, 6000), q(2000, 6000)),),
            f"{q(2000, 6000)}^2",
            pieces=(4, 4),
        ),
        Workload(
            "filter",
            _filter,
            lambda r: (_rand(r, q(2**23, 2**25)),),
            f"{q(2**23, 2**25):,} f64",
        ),
        Workload(
            "kmeans",
            lambda xp, x: _kmeans(xp, x, *km[2:]),
            lambda r: (_rand(r, *km[:2]),),
            "{:,}x{} k={} {} it".format(*km),
            ceiling="kmeans",
            ceiling_params=km[2:],
        ),
        Workload(
            "logreg",
            _example("logistic_regression", "logistic_regression", 10, 1.0),
            lambda r: _logreg_data(r, *LR[size]),
            "{:,}x{} 10 it".format(*LR[size]),
            ceiling="logreg",
            ceiling_params=(10,),
        ),
        Workload(
            "als",
            _example("als", "als", 5, 0.1),
            lambda r: _ratings(r, q(2000, 20000), q(500, 2000), 10),
            f"{q(2000, 20000)}x{q(500, 2000)} rank 10",
        ),
        Workload(
            "ssvd",
            _singular_values(_example("ssvd", "ssvd", 10, 2)),
            lambda r: (_randn(r, q(20000, 200000), 500), _randn(r, 500, 20)),
            f"{q(20000, 200000):,}x500 k=10",
        ),
        Workload(
            "pca",
            _example("pca", "pca", 5),
            lambda r: (_randn(r, q(200000, 2 * 10**6), 50),),
            f"{q(200000, 2 * 10**6):,}x50 k=5",
        ),
        Workload(
            "cg",
            _example("conjugate_gradient", "conjugate_gradient", 20),
            lambda r: _spd(r, q(2000, 8000)),
            f"n={q(2000, 8000)} 20 it",
            pieces=(4, 4),
        ),
        Workload(
            "cholesky",
            _example("cholesky", "cholesky_solve"),
            lambda r: _spd(r, q(1000, 4000)),
            f"n={q(1000, 4000)}",
            pieces=(2, 2),
        ),
        Workload(
            "retile",
            _retile,
            lambda r: (_rand(r, q(2000, 8000), q(2000, 8000)),),
            f"{q(2000, 8000)}^2 rows->cols",
            pieces=(8, 1),
        ),
        Workload(
            "stencil",
            _star_stencil,
            lambda r: (_rand(r, q(2000, 8000), q(2000, 8000)).astype(numpy.float32),),
            f"{q(2000, 8000)}^2 f32",
            pieces=(4, 4),
        ),
    ]


# ---------------------------------------------------------------- the ceiling


class HalfOfTheData:
    """A Ray actor holding a contiguous share of the rows: the hand-written ceiling."""

    def __init__(self, keep_freed: int, *parts: numpy.ndarray) -> None:
        from spartan.backend.heap import keep_freed_memory

        keep_freed_memory(keep_freed)
        self.parts = parts

    def pid(self) -> int:
        return os.getpid()

    def fused(self) -> float:
        (a,) = self.parts
        return float((numpy.sin(a) ** 2 + numpy.cos(a) ** 2).sum())

    def logreg_grad(self, w: numpy.ndarray) -> numpy.ndarray:
        x, y = self.parts
        p = 1.0 / (1.0 + numpy.exp(-(x @ w)))
        return x.T @ (p - y)

    def kmeans_step(self, centers: numpy.ndarray) -> tuple[numpy.ndarray, ...]:
        (x,) = self.parts
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        labels = dist.argmin(axis=1)
        onehot = (labels[:, None] == numpy.arange(len(centers))).astype(x.dtype)
        inertia = (dist.min(axis=1) + (x * x).sum(axis=1)).sum()
        return onehot.T @ x, onehot.sum(axis=0), inertia


class Ceiling:
    """``CORES`` actors, each given its share of the inputs once, driven by plain calls."""

    def __init__(
        self, kind: str, params: tuple[int, ...], inputs: tuple[numpy.ndarray, ...]
    ) -> None:
        import ray

        self.kind, self.params = kind, params
        self.n = inputs[0].shape[0]
        actor = ray.remote(HalfOfTheData).options(num_cpus=0)
        bounds = numpy.linspace(0, self.n, CORES + 1).astype(int)
        self.actors = [
            actor.remote(KEEP_FREED, *[ray.put(numpy.ascontiguousarray(a[lo:hi])) for a in inputs])
            for lo, hi in zip(bounds[:-1], bounds[1:])
        ]
        self.first_rows = inputs[0][: params[0]].copy() if kind == "kmeans" else inputs[0][:1]

    def run(self) -> Any:
        import ray

        if self.kind == "fused":
            return sum(ray.get([a.fused.remote() for a in self.actors]))
        if self.kind == "logreg":
            w = numpy.zeros(self.first_rows.shape[1])
            for _ in range(self.params[0]):
                w = w - sum(ray.get([a.logreg_grad.remote(w) for a in self.actors])) / self.n
            return w
        centers = self.first_rows
        for _ in range(self.params[1]):
            parts = ray.get([a.kmeans_step.remote(centers) for a in self.actors])
            sums, counts, inertia = (sum(p[i] for p in parts) for i in range(3))
            centers = numpy.where(
                counts[:, None] > 0, sums / numpy.maximum(counts, 1)[:, None], centers
            )
        return centers, inertia

    def pids(self) -> list[int]:
        import ray

        return ray.get([a.pid.remote() for a in self.actors])

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)


# ---------------------------------------------------------------- systems


class System:
    """Loads inputs once, then runs a workload program and returns NumPy results."""

    name = ""

    def load(self, w: Workload, inputs: tuple[numpy.ndarray, ...]) -> None:
        self.w, self.inputs = w, inputs

    def run(self) -> Any:
        return self.w.program(numpy, *self.inputs)

    def unload(self) -> None:
        self.inputs = ()

    def close(self) -> None:
        self.unload()

    def reset_counters(self) -> None:
        """Zero what :meth:`bytes` reports (before the untimed run it reports on)."""

    def pause(self) -> None:
        """Stop this system's own processes while another system runs (see
        :meth:`DaskSystem.pause`)."""

    def resume(self) -> None:
        """Undo :meth:`pause`."""

    def bytes(self) -> tuple[str, str]:
        return "-", "-"

    def workers(self) -> list[psutil.Process]:
        """The processes besides this one that hold this system's data and run its work
        (their memory counts toward the system's peak)."""
        return []


class NumPySystem(System):
    name = "numpy"


class SpartanSystem(System):
    name = "spartan"

    def __init__(self, workers: int) -> None:
        import spartan

        spartan.init(backend="ray", num_workers=workers)
        self.sp = spartan
        self.last: list[Any] = []

    def load(self, w: Workload, inputs: tuple[numpy.ndarray, ...]) -> None:
        self.w = w
        self.inputs = tuple(self.sp.asarray(a) for a in inputs)
        self.sp.evaluate(*self.inputs)

    def reset_counters(self) -> None:
        self.sp.reset_stats()  # a round trip to every worker: not in the timed runs

    def workers(self) -> list[psutil.Process]:
        # a local Ray's worker processes descend from this one (through its raylet), and
        # Ray titles each actor's process after its class
        return [p for p in _descendants() if _title(p).startswith("ray::RayWorker")]

    def run(self) -> Any:
        result = self.w.program(self.sp, *self.inputs)
        arrays = [r for r in _leaves(result) if isinstance(r, self.sp.Array)]
        self.last = arrays
        # one evaluation computes what the results share once; one wait fetches them all
        fetched = dict(zip(map(id, arrays), self.sp.compute(*arrays)))
        return _to_numpy(_swap_leaves(result, fetched))

    def bytes(self) -> tuple[str, str]:
        measured = self.sp.stats()["bytes_moved"]
        plans = {}
        for a in self.last:
            try:
                planned = self.sp.explain(a).planned
            except (ValueError, RuntimeError):
                continue
            plans[id(planned)] = planned.plan.total
        predicted = _mb(sum(plans.values())) if plans else "-"
        return _mb(measured), predicted

    def unload(self) -> None:
        self.inputs, self.last = (), []
        gc.collect()  # frees the tiles on the workers while they still run

    def close(self) -> None:
        self.unload()
        self.sp.shutdown()


class DaskSystem(System):
    def __init__(self, distributed: bool) -> None:
        import dask
        import dask.array

        self.da = dask.array
        self.client = None
        self._stopped: list[psutil.Process] = []
        if distributed:
            from dask.distributed import Client, LocalCluster

            cluster = LocalCluster(
                n_workers=CORES, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = Client(cluster)
            from spartan.backend.heap import keep_freed_memory

            self.client.run(keep_freed_memory, KEEP_FREED)
            self.name = "dask-dist"
        else:
            self.name = "dask"

    def load(self, w: Workload, inputs: tuple[numpy.ndarray, ...]) -> None:
        self.w = w
        arrays = []
        for i, a in enumerate(inputs):
            pieces = w.pieces if i == 0 or a.shape == inputs[0].shape else (1,)
            chunks = tuple(-(-s // p) for s, p in zip(a.shape, pieces + (1,) * a.ndim))
            arrays.append(
                self._scatter(a, chunks) if self.client else self.da.from_array(a, chunks)
            )
        self.inputs = tuple(arrays)

    def _scatter(self, a: numpy.ndarray, chunks: tuple[int, ...]) -> Any:
        """``a`` held by the workers: row blocks scattered once (not embedded in a graph)."""
        from dask.distributed import wait

        rows = chunks[0] if a.ndim else 1
        blocks = [a[lo : lo + rows] for lo in range(0, max(len(a), 1), rows)] if a.ndim else [a]
        # hash=False: matmul passes one array twice, and equal data would share one key
        futures = self.client.scatter(blocks, hash=False)
        parts = [
            self.da.from_delayed(f, shape=b.shape, dtype=a.dtype) for f, b in zip(futures, blocks)
        ]
        x = self.da.concatenate(parts) if a.ndim else parts[0]
        x = x.rechunk(chunks).persist()
        wait(x)
        return x

    def run(self) -> Any:
        import dask

        result = self.w.program(self.da, *self.inputs)
        if self.client is not None:
            from dask.distributed import wait

            futures = self.client.compute(result)  # a list for a tuple of results
            try:
                wait(futures, timeout=PEER_TIMEOUT)
            except TimeoutError:
                self.client.cancel(futures)
                raise TimeoutError(f"a run did not finish within {PEER_TIMEOUT} s") from None
            return _to_numpy(self.client.gather(futures))
        # explicit: a distributed Client, once created, becomes dask's default scheduler
        return _to_numpy(dask.compute(result, scheduler="threads", num_workers=CORES)[0])

    def pause(self) -> None:
        """Dask distributed's worker processes, idle, use ~13% of a core here (heartbeats,
        memory monitors) at niceness 0: any system timed meanwhile lost it, Ray's workers
        (niceness 15) nearly all of each wakeup. They are stopped (SIGSTOP) while other
        systems run; far shorter than the scheduler's worker time-to-live (5 minutes)."""
        if self.client is not None and not self._stopped:
            self._stopped = [psutil.Process(pid) for pid in self.client.run(os.getpid).values()]
            for p in self._stopped:
                p.suspend()

    def resume(self) -> None:
        for p in self._stopped:
            p.resume()
        self._stopped = []

    def workers(self) -> list[psutil.Process]:
        if self.client is None:
            return []
        return [psutil.Process(pid) for pid in self.client.run(os.getpid).values()]

    def close(self) -> None:
        self.resume()
        self.unload()
        if self.client is not None:
            self.client.cluster.close()
            self.client.close()


class CeilingSystem(System):
    name = "ceiling"
    ceiling: Ceiling | None = None

    def load(self, w: Workload, inputs: tuple[numpy.ndarray, ...]) -> None:
        self.w = w
        self.ceiling = Ceiling(w.ceiling, w.ceiling_params, inputs) if w.ceiling else None

    def run(self) -> Any:
        return self.ceiling.run()

    def unload(self) -> None:
        if self.ceiling is not None:
            self.ceiling.close()
        self.ceiling = None

    def workers(self) -> list[psutil.Process]:
        return [psutil.Process(pid) for pid in self.ceiling.pids()] if self.ceiling else []


def _leaves(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [x for v in result for x in _leaves(v)]
    return [result]


def _swap_leaves(result: Any, values: dict[int, Any]) -> Any:
    """``result`` with each leaf whose id is in ``values`` replaced by its value."""
    if isinstance(result, (tuple, list)):
        return tuple(_swap_leaves(v, values) for v in result)
    return values.get(id(result), result)


def _to_numpy(result: Any) -> Any:
    if isinstance(result, (tuple, list)):
        return tuple(_to_numpy(v) for v in result)
    return numpy.asarray(result)


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


# ---------------------------------------------------------------- measuring


def _descendants() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


def _title(p: psutil.Process) -> str:
    """A process's title (Ray sets it to ``ray::<actor class>``), or "" once it is gone."""
    try:
        return " ".join(p.cmdline()) or p.name()
    except psutil.Error:
        return ""


def trim_heap() -> None:
    """Hand this process's kept freed memory back (glibc), so that a run's peak is the
    memory it uses, not what an earlier run left for reuse (``--default-malloc`` aside,
    every process keeps up to 1 GB)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def private_rss(p: psutil.Process) -> int:
    """``p``'s resident memory less its shared pages (Ray's object store arena, mapped
    files, shared-memory files)."""
    m = p.memory_info()
    return m.rss - getattr(m, "shared", 0)


class PeakMemory:
    """Largest private resident memory of a system while active: this process's growth
    over its own on entry plus the whole of ``workers``' (see the module's docstring)."""

    def __init__(self, workers: list[psutil.Process], interval: float = 0.02) -> None:
        self.interval = interval
        self.me = psutil.Process()
        self.workers = workers

    def _rss(self) -> int:
        total = 0
        for p in [self.me, *self.workers]:
            try:
                total += private_rss(p)
            except psutil.Error:  # a worker that ended meanwhile holds nothing
                continue
        return total

    def __enter__(self) -> PeakMemory:
        self.base = private_rss(self.me)
        self.peak = self._rss()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.stop.wait(self.interval):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def growth(self) -> int:
        """The peak, less this process's RSS on entry."""
        return self.peak - self.base


@dataclass
class Row:
    workload: str
    sizes: str
    seconds: dict[str, float | None]
    peak: dict[str, int]
    measured: str = "-"
    predicted: str = "-"
    notes: list[str] = field(default_factory=list)


def quiesce(limit: float = 1.0) -> None:
    """Wait until this process stops using the CPU (at most ``limit`` seconds).

    After each call OpenBLAS keeps its threads spinning for about 0.1 s of CPU, at
    normal priority: a system timed right after NumPy or Dask would share a core with
    them (spartan's Ray workers, at Ray's niceness 15 until 11-24, got almost none of
    it)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        used = time.process_time()
        time.sleep(0.01)
        if time.process_time() - used < 0.001:
            return


def _alone(system: System | None, systems: list[System]) -> None:
    """Let ``system`` run with the other systems' processes stopped (None: resume all)."""
    for s in systems:
        if system is None or s is system:
            s.resume()
        else:
            s.pause()


def measure(w: Workload, systems: list[System], repeats: int, quick: bool) -> Row:
    """Median seconds of each system on ``w`` (alternating), after a checked warm-up."""
    from harness import mismatches

    rng = numpy.random.default_rng(0)
    inputs = w.make(rng)
    want = _to_numpy(w.program(numpy, *inputs))
    row = Row(w.name, w.sizes, {}, {})
    active = []
    for s in systems:
        if s.name == "ceiling" and not w.ceiling:
            continue
        try:
            s.load(w, inputs)
            problems = mismatches(s.run(), want)  # the warm-up run
        except Exception as e:  # noqa: BLE001  (a peer lacking a function must not stop the rest)
            log.warning("%s on %s failed: %s", s.name, w.name, e)
            row.notes.append(f"{s.name}: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
            s.unload()
            continue
        if problems:
            row.notes.append(f"{s.name} differs from NumPy: {problems[0]}")
            s.unload()
            continue
        active.append(s)
    times: dict[str, list[float]] = {s.name: [] for s in active}
    peaks: dict[str, int] = {s.name: 0 for s in active}
    for rep in range(repeats):
        for s in list(active):
            _alone(s, active)
            # a full collection took 100-200 ms in this process (it scans Ray's, Dask's
            # and the harness's objects, whichever system's allocations set it off) and
            # could land in any system's run; each run now starts from a collected heap
            gc.collect()
            quiesce()
            t0 = time.perf_counter()
            try:
                s.run()
            except TimeoutError as e:
                log.warning("%s on %s: %s", s.name, w.name, e)
                row.notes.append(f"{s.name}: {e}")
                s.unload()
                active.remove(s)
                del times[s.name], peaks[s.name]
                continue
            times[s.name].append(time.perf_counter() - t0)
            log.info("%s %s run %d: %.3f s", w.name, s.name, rep + 1, times[s.name][-1])
        log.info("%s: repeat %d/%d done", w.name, rep + 1, repeats)
    # memory in one more run each: sampling processes (a few ms of the driver's GIL every
    # 20 ms) would slow the timed runs of Python-heavy drivers unevenly
    for s in active:
        s.reset_counters()
        _alone(s, active)
        gc.collect()
        trim_heap()
        quiesce()
        with PeakMemory(s.workers()) as mem:
            s.run()
        peaks[s.name] = mem.growth
        if s.name == "spartan":
            row.measured, row.predicted = s.bytes()
    _alone(None, active)
    for s in active:
        s.unload()
    row.seconds = {s.name: statistics.median(times[s.name]) for s in active}
    row.peak = peaks
    del inputs
    gc.collect()
    return row


# ---------------------------------------------------------------- reporting

PEERS = ["numpy", "dask", "dask-dist", "ceiling"]
COLUMNS = (
    ["workload", "sizes", "spartan s"]
    + [f"{p} s" for p in PEERS]
    + [f"{p}/spartan" for p in PEERS]
    + ["best peer/spartan", "peak MB spartan/numpy/dask/dask-dist", "bytes moved", "predicted"]
    + ["notes"]
)
PEER_NOTES = """\
Peers tried from the package registry (2026-11-23, Python 3.11):
- NumPy {numpy}, Dask Array {dask} (threaded scheduler, {cores} threads) and Dask distributed
  {distributed} (LocalCluster, {cores} single-threaded worker processes): installed, measured.
- Hand-written ceiling: {cores} Ray actors each holding a share of the rows (fused, logreg, k-means).
- Dask on Ray (`ray.util.dask`): not measured; importing it needs pandas, which is not in the
  project's environment.
- NumS: not installable; every release but 0.0.1 requires Python < 3.10 (this is 3.11), and 0.0.1
  is an empty placeholder.
- Ramba 0.1.post157: not installed; it pins numpy==1.22.4 (no Python 3.11 wheel, and a downgrade
  of the NumPy 2 that spartan needs).
- Heat 1.8.0: not installed; it pulls torch 2.11 with the CUDA 13 wheels (several GB) and mpi4py,
  which needs an MPI library; too heavy for this 2-core machine.
"""


FINDINGS = "## Findings"


def _ratio(row: Row, peer: str) -> str:
    s, p = row.seconds.get("spartan"), row.seconds.get(peer)
    return f"{p / s:.2f}x" if s and p else "-"


def _cells(row: Row) -> list[str]:
    secs = [f"{row.seconds[n]:.3f}" if n in row.seconds else "-" for n in ["spartan", *PEERS]]
    ratios = [_ratio(row, p) for p in PEERS]
    best = min((row.seconds[p] for p in PEERS[:3] if p in row.seconds), default=None)
    best_ratio = (
        f"{best / row.seconds['spartan']:.2f}x" if best and "spartan" in row.seconds else "-"
    )
    peaks = "/".join(
        f"{row.peak[n] / 1e6:.0f}" if n in row.peak else "-"
        for n in ["spartan", "numpy", "dask", "dask-dist"]
    )
    return [row.workload, row.sizes, *secs, *ratios, best_ratio, peaks, row.measured,
            row.predicted, "; ".join(row.notes) or ""]  # fmt: skip


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths]), *map(line, rows)])


def _saved_rows(path: Path, quick: bool) -> dict[str, list[str]]:
    """Rows of the same size class already in the results file ``path``, by workload."""
    if not path.exists():
        return {}
    section, rows = None, {}
    for text in path.read_text().splitlines():
        if text.startswith("## "):
            section = text
        elif (
            section == _section(quick)
            and text.startswith("| ")
            and not text.startswith("| workload")
        ):
            cells = [c.strip() for c in text.strip("|").split("|")]
            if len(cells) == len(COLUMNS) and not set(cells[0]) <= {"-"}:
                rows[cells[0]] = cells
    return rows


def _section(quick: bool) -> str:
    return "## --quick sizes" if quick else "## default sizes"


def save(rows: list[Row], quick: bool, argv: list[str], path: Path) -> None:
    """Merge ``rows`` into the results file ``path`` (rows of other workloads stay)."""
    import dask
    import distributed

    from bench.provenance import run_header

    sections = {q: _saved_rows(path, q) for q in (True, False)}
    for r in rows:
        sections[quick][r.workload] = _cells(r)
    header = run_header(
        f"python bench/apps.py {' '.join(argv)}", "rows measured by earlier runs stay."
    )
    out = [
        "# Applications side by side: spartan vs NumPy vs Dask vs the hand-written ceiling",
        "",
        f"Last run: {header}",
        "Seconds are medians of the repeats after a warm-up; `X/spartan` > 1 means spartan is",
        "faster; peak MB, in one extra untimed run, is the driver's private resident memory",
        "(RSS less shared pages) above its own before the run (heap trimmed first) plus the",
        "whole private resident memory of the system's worker processes (spartan's Ray",
        "workers, Dask distributed's workers; their inputs, kept memory and runtime",
        "included); shared pages (Ray's object store, shared-memory files) and the driver's",
        "NumPy inputs count for no system. Bytes moved are measured between spartan workers",
        "in that run, `predicted` is the optimizer's total for the last evaluated plan",
        "(`spartan.explain`).",
        "",
        PEER_NOTES.format(
            numpy=numpy.__version__, dask=dask.__version__,
            distributed=distributed.__version__, cores=CORES,
        ),
    ]  # fmt: skip
    for q in (False, True):
        if sections[q]:
            out += [_section(q), "", table(list(sections[q].values())), ""]
    # a hand-written "## Findings" section at the end survives re-runs
    old = path.read_text() if path.exists() else ""
    if FINDINGS in old:
        out += [old[old.index(FINDINGS) :]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out))
    print(f"written to {path.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    names = [w.name for w in _workloads(True)]
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes: ~2.7 minutes for all, under 2 with --skip dask-dist",
    )
    p.add_argument("--only", nargs="+", choices=names, metavar="WORKLOAD", help=" ".join(names))
    p.add_argument("--skip", nargs="+", default=[], choices=["dask", "dask-dist", "ceiling"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--kmeans-iterations",
        type=int,
        metavar="N",
        help=f"k-means iterations (default {KM['full'][3]}, --quick {KM['quick'][3]})",
    )
    p.add_argument("--workers", type=int, default=CORES, help="spartan workers")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument(
        "--save",
        action="store_true",
        help="merge the rows into bench/results/apps.md (default: bench/out/apps.md)",
    )
    p.add_argument(
        "--default-malloc",
        action="store_true",
        help="leave malloc as it is in this process, Dask's workers and the ceiling's "
        "actors; by default they keep freed memory for reuse as spartan's workers do "
        "(spartan.backend.heap), so that no system pays for the VM's fresh pages alone",
    )
    args = p.parse_args(argv)
    if args.kmeans_iterations is not None and args.kmeans_iterations < 1:
        p.error("--kmeans-iterations must be at least 1")
    workloads = _workloads(args.quick, args.kmeans_iterations)
    if args.list:
        for w in workloads:
            quick = {q.name: q.sizes for q in _workloads(True, args.kmeans_iterations)}[w.name]
            print(f"{w.name:15s} default {w.sizes:28s} quick {quick}")
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    log.setLevel(logging.INFO)
    if not args.default_malloc:
        from spartan.backend.heap import DEFAULT_KEEP_MAX, keep_freed_memory

        global KEEP_FREED
        KEEP_FREED = DEFAULT_KEEP_MAX
        log.info("every process keeps freed memory: %s", keep_freed_memory(KEEP_FREED))
    os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")
    import ray

    ray.init(address="local", num_cpus=CORES, include_dashboard=False, log_to_driver=False)
    systems: list[System] = [SpartanSystem(args.workers), NumPySystem()]
    if "dask" not in args.skip:
        systems.append(DaskSystem(distributed=False))
    if "dask-dist" not in args.skip:
        systems.append(DaskSystem(distributed=True))
    if "ceiling" not in args.skip:
        systems.append(CeilingSystem())
    rows = []
    try:
        for w in workloads:
            if args.only and w.name not in args.only:
                continue
            log.info("workload %s (%s)", w.name, w.sizes)
            rows.append(measure(w, systems, args.repeats, args.quick))
            print(table([_cells(rows[-1])]).splitlines()[-1], flush=True)
    finally:
        for s in systems:
            s.close()
        ray.shutdown()
    print()
    print(table([_cells(r) for r in rows]))
    save(
        rows,
        args.quick,
        sys.argv[1:] if argv is None else list(argv),
        RESULTS if args.save else OUT,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
