"""Run a placed training step on spartan workers, and the same step serially in NumPy.

Device ``d`` of a placement is spartan worker ``d``. Source tensors (inputs, weights) are put
on the worker of their node; every op is one task on its device's worker, whose inputs held
by other workers are fetched from them directly (the backend counts those bytes); a tensor
version is deleted once its last reader has been submitted, so the workers' peak bytes follow
the step's liveness. Kernels are the IR's NumPy kernels (:mod:`spartan.dnn.swap.kernels`);
in-place updates (``sgd``) write a new version of the parameter.

>>> import numpy as np, spartan
>>> from spartan.dnn.zoo import mlp
>>> g = mlp(8, [16, 16, 4])
>>> values = random_values(g, seed=0)
>>> _ = spartan.init(backend="local", num_workers=2)
>>> tg = TaskGraph.from_graph(g, op_time=lambda op: 1.0)
>>> run = run_step(g, tg, np.arange(tg.n) % 2, values)
>>> ref, _ = run_serial(g, values)
>>> all(np.allclose(run.outputs[k], ref[k]) for k in ref)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import numpy as np

from spartan.dnn.graph import Graph, TensorKind
from spartan.dnn.kernels import OpTask
from spartan.dnn.placement.simulate import SimOutcome, simulate_placement
from spartan.dnn.placement.taskgraph import Machine, TaskGraph

__all__ = [
    "StepRun",
    "LinkCost",
    "random_values",
    "run_serial",
    "run_step",
    "final_tensors",
    "calibrate",
    "profile_ops",
    "simulated_step",
    "schedule_order",
]


@dataclass(frozen=True)
class StepRun:
    """An executed step: final tensors, wall seconds, and the backend's counters."""

    outputs: dict[str, np.ndarray]
    seconds: float
    peak_bytes: list[int]
    bytes_moved: int
    tasks: int


def random_values(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Values for a graph's source tensors: small normal floats, labels in range.

    >>> from spartan.dnn.zoo import mlp
    >>> sorted(random_values(mlp(4, [8, 3])))
    ['fc1.b', 'fc1.w', 'labels', 'x']
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, t in graph.tensors.items():
        if graph.producer(name) is not None or not graph.consumers(name):
            continue
        if np.issubdtype(np.dtype(t.dtype), np.integer):
            classes = _label_range(graph, name)
            out[name] = rng.integers(0, classes, t.shape).astype(t.dtype)
        else:
            scale = 0.1 if t.kind is TensorKind.PARAM else 1.0
            out[name] = (scale * rng.standard_normal(t.shape)).astype(t.dtype)
    return out


def _label_range(graph: Graph, labels: str) -> int:
    for op in graph.consumers(labels):
        if op.type.startswith("softmax_xent"):
            return graph.tensors[op.inputs[0]].shape[-1]
    return 2


def final_tensors(graph: Graph) -> list[str]:
    """Tensors a step leaves behind: updated parameters/optimizer state and unread outputs."""
    out = [
        t for t, v in graph.tensors.items() if v.kind in (TensorKind.PARAM, TensorKind.OPT_STATE)
    ]
    read = {t for op in graph.ops for t in op.inputs}
    out += [t for op in graph.ops for t in op.outputs if t not in read and t not in out]
    return out


def run_serial(
    graph: Graph, values: Mapping[str, np.ndarray], step: int | None = None
) -> tuple[dict[str, np.ndarray], list[float]]:
    """The step in one process: final tensors and the measured seconds of every op.
    ``step`` is the 1-based optimizer step (Adam's bias correction needs it)."""
    env = {k: np.array(v, copy=True) for k, v in values.items()}
    seconds = []
    for op in graph.ops:
        kernel = OpTask(op, step)
        t0 = perf_counter()
        out = kernel(*(env[t] for t in op.inputs))
        seconds.append(perf_counter() - t0)
        env.update(zip(op.outputs, out if isinstance(out, tuple) else (out,)))
    return {t: env[t] for t in final_tensors(graph)}, seconds


def run_step(
    graph: Graph,
    tg: TaskGraph,
    assign: np.ndarray,
    values: Mapping[str, np.ndarray],
    backend: Any = None,
    order: Sequence[int] | None = None,
    step: int | None = None,
) -> StepRun:
    """Execute one step of ``graph`` placed by ``assign`` (over ``tg``'s nodes, as built by
    :meth:`TaskGraph.from_graph`) on the spartan workers; device ``d`` is worker ``d``.

    ``order`` is the order ops are sent in (indices into ``graph.ops``; default: graph
    order; producers must come before readers). It can matter on Ray: a worker serves a
    piece to another after every call sent to it earlier, so sending ops in the order a
    schedule runs them (:func:`schedule_order`) spares a reader unrelated earlier work.
    ``step`` is the 1-based optimizer step, as torch.optim.Adam counts it: a graph
    trained with Adam needs it for the bias correction (its op raises ValueError without).
    """
    import spartan

    be = backend if backend is not None else spartan.backend.current()
    a = np.asarray(assign, dtype=np.int64)
    sources = tg.source_tensors
    if len(a) != len(sources) + len(graph.ops) or tg.n != len(a):
        raise ValueError("assign must cover the task graph built from this graph")
    if a.max(initial=0) >= be.nworkers:
        raise ValueError(
            f"placement uses {a.max() + 1} devices but there are {be.nworkers} workers"
        )
    missing = [t for t in sources if t not in values]
    if missing:
        raise ValueError(f"no values for source tensors {missing}")
    keep = set(final_tensors(graph))
    # Every tensor version gets its own key; in-place writers make a new version.
    version = {t: 0 for t in sources}
    keys: list[tuple[list[tuple], list[tuple]]] = []
    for op in graph.ops:
        ins = [("placed", t, version[t]) for t in op.inputs]
        for t in op.outputs:
            version[t] = version[t] + 1 if t in version else 0
        keys.append((ins, [("placed", t, version[t]) for t in op.outputs]))
    final = {("placed", t, version[t]) for t in keep}
    sequence = list(range(len(graph.ops))) if order is None else [int(j) for j in order]
    if sorted(sequence) != list(range(len(graph.ops))):
        raise ValueError("order must list every op of the graph exactly once")
    # A tensor version is deleted once its last reader (in sending order) has been sent.
    made = {("placed", t, 0) for t in sources}
    last_read: dict[tuple, int] = {}
    for pos, j in enumerate(sequence):
        ins, outs = keys[j]
        for k in ins:
            if k not in made:
                raise ValueError(
                    f"order sends op {graph.ops[j].name!r} before the op making its input {k[1]!r}"
                )
            last_read[k] = pos
        made.update(outs)
    for i, t in enumerate(sources):
        be.put(("placed", t, 0), np.asarray(values[t]), int(a[i]))
    be.wait()
    be.reset_stats()
    t0 = perf_counter()
    for pos, j in enumerate(sequence):
        ins, outs = keys[j]
        be.submit(int(a[len(sources) + j]), OpTask(graph.ops[j], step), ins, outs)
        dead = [k for k in dict.fromkeys(ins) if last_read[k] == pos and k not in final]
        if dead:
            be.delete(dead)
    be.wait()
    seconds = perf_counter() - t0
    stats = be.stats()
    outputs = {t: np.asarray(be.fetch(("placed", t, version[t]))) for t in keep}
    be.delete(list(final))
    return StepRun(
        outputs=outputs,
        seconds=seconds,
        peak_bytes=[int(w["peak_bytes"]) for w in stats.per_worker],
        bytes_moved=int(stats.bytes_moved),
        tasks=int(stats.tasks),
    )


def schedule_order(tg: TaskGraph, outcome: SimOutcome) -> list[int]:
    """Ops (indices into the graph's ops) by their simulated start: the order to send a
    placed step in (:func:`run_step`'s ``order``). Ties keep graph order, so a producer
    always comes before its readers."""
    first = len(tg.source_tensors)
    ops = np.arange(first, tg.n)
    return (ops[np.lexsort((ops, outcome.start[first:]))] - first).tolist()


class _Profile:
    """Task function: the whole step serially on one worker, returning per-op seconds."""

    def __init__(self, graph: Graph, sources: tuple[str, ...], repeats: int) -> None:
        self.graph, self.sources, self.repeats = graph, sources, repeats

    def __call__(self, *arrays: np.ndarray) -> tuple[np.ndarray, list[float]]:
        values = dict(zip(self.sources, arrays))
        runs = [run_serial(self.graph, values)[1] for _ in range(self.repeats)]
        return np.zeros(1), np.median(runs, axis=0).tolist()


def profile_ops(
    graph: Graph, values: Mapping[str, np.ndarray], backend: Any = None, repeats: int = 3
) -> list[float]:
    """Median seconds of every op, measured inside a worker (its threads, its BLAS)."""
    import spartan

    be = backend if backend is not None else spartan.backend.current()
    sources = tuple(values)
    for t in sources:
        be.put(("profile", t), np.asarray(values[t]), 0)
    handle = be.submit(
        0,
        _Profile(graph, sources, repeats),
        [("profile", t) for t in sources],
        [("profile", "done")],
        want_result=True,
    )
    seconds = be.results([handle])[0]
    be.delete([("profile", t) for t in sources] + [("profile", "done")])
    return list(seconds)


@dataclass(frozen=True)
class LinkCost:
    """Measured costs of the workers: per-task dispatch overhead and worker-to-worker copies."""

    task_overhead: float
    latency: float
    bandwidth: float


def _echo(x: np.ndarray) -> np.ndarray:
    return x[:1].copy()


def calibrate(backend: Any = None, nbytes: int = 1 << 24, repeats: int = 5) -> LinkCost:
    """Time a tiny local task, a tiny remote fetch and an ``nbytes`` remote fetch (medians).

    >>> import spartan
    >>> _ = spartan.init(backend="local", num_workers=2)
    >>> c = calibrate(nbytes=1 << 20, repeats=2)
    >>> c.bandwidth > 0 and c.task_overhead >= 0
    True
    """
    import spartan

    be = backend if backend is not None else spartan.backend.current()
    if be.nworkers < 2:
        raise ValueError("calibrate needs at least 2 workers")
    be.put(("calibrate", "small"), np.zeros(1), 0)
    be.put(("calibrate", "big"), np.zeros(nbytes // 8), 0)

    def timed(worker: int, key: str) -> float:
        runs = []
        for r in range(repeats):
            t0 = perf_counter()
            be.submit(worker, _echo, [("calibrate", key)], [("calibrate", "out", r)])
            be.wait()
            runs.append(perf_counter() - t0)
        be.delete([("calibrate", "out", r) for r in range(repeats)])
        return float(np.median(runs))

    local, small, big = timed(0, "small"), timed(1, "small"), timed(1, "big")
    be.delete([("calibrate", "small"), ("calibrate", "big")])
    return LinkCost(
        task_overhead=local,
        latency=max(small - local, 0.0),
        bandwidth=nbytes / max(big - small, 1e-9),
    )


def simulated_step(
    graph: Graph,
    assign: np.ndarray,
    op_seconds: list[float],
    cost: LinkCost,
    memory: float = 1e18,
) -> SimOutcome:
    """The placed step as the simulator sees it, with measured op times (plus the per-task
    overhead) and the measured link cost."""
    times = {op.name: t + cost.task_overhead for op, t in zip(graph.ops, op_seconds)}
    tg = TaskGraph.from_graph(graph, op_time=lambda op: times[op.name])
    k = int(np.max(assign)) + 1
    machine = Machine(k, memory=memory, link_bw=cost.bandwidth, latency=cost.latency)
    return simulate_placement(tg, assign, machine)
