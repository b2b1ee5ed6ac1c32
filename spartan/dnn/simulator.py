"""Discrete-event simulator for task graphs on exclusive resources (streams, devices, links).

Both the swap planner (compute / swap-in / swap-out streams of one GPU) and the placement
planners (one compute stream per device plus transfer links) score candidate plans with it.

Model
-----
* A :class:`Task` has a ``name``, the ``resource`` it occupies (any hashable: ``"compute"``,
  ``("gpu", 3)``, ``("link", 0, 1)``; ``None`` means no resource, e.g. a pure latency), a
  ``duration`` and the names of the tasks it depends on (``deps``).
* A resource runs one task at a time. Under ``policy="fixed"`` it runs its tasks in the order
  they appear in the task list (or in ``order[resource]``); under ``policy="fifo"`` it runs,
  whenever it is idle, the ready task that became ready first (ties: list order), i.e. a
  ready-queue list scheduler.
* A task starts at ``max(resource free, end of every dep)`` and ends ``duration`` later.
* Memory: ``Task.alloc`` (``{pool: bytes}``) is taken when the task starts and ``Task.free`` is
  given back when it ends; a :class:`Buffer` lives from the start of ``alloc_at`` (or time 0
  when ``None``) until every task in ``free_after`` has ended (or the end when empty). At equal
  times frees are applied before allocations. Pools are any hashable (a device id).

Example
-------
>>> from spartan.dnn.simulator import Task, simulate
>>> r = simulate([
...     Task("fwd", "compute", 2.0, alloc={"gpu": 100}),
...     Task("out", "d2h", 1.0, deps=("fwd",)),
...     Task("bwd", "compute", 3.0, deps=("fwd",), free={"gpu": 100}),
... ])
>>> r.makespan, r.start["out"], r.busy["compute"], r.peak_memory["gpu"]
(5.0, 2.0, 5.0, 100)
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

__all__ = ["Buffer", "SimResult", "Task", "simulate"]

Policy = Literal["fixed", "fifo"]


@dataclass(frozen=True)
class Task:
    """One unit of work: runs ``duration`` on ``resource`` after all ``deps`` have ended.

    >>> Task("conv1", "compute", 1.5, deps=("load",), alloc={0: 4096}).duration
    1.5
    """

    name: str
    resource: Hashable | None
    duration: float
    deps: tuple[str, ...] = ()
    alloc: Mapping[Hashable, int] = field(default_factory=dict)
    free: Mapping[Hashable, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Buffer:
    """Memory held from the start of ``alloc_at`` until all of ``free_after`` have ended.

    ``alloc_at=None`` means resident from time 0; empty ``free_after`` means held to the end.

    >>> Buffer("gpu0", 1 << 20, alloc_at="matmul", free_after=("relu", "add")).nbytes
    1048576
    """

    pool: Hashable
    nbytes: int
    alloc_at: str | None = None
    free_after: tuple[str, ...] = ()


@dataclass
class SimResult:
    """Times and resource/memory usage of one simulated run."""

    start: dict[str, float]
    end: dict[str, float]
    makespan: float
    busy: dict[Hashable, float]
    peak_memory: dict[Hashable, int]
    memory_timeline: dict[Hashable, list[tuple[float, int]]]

    def utilization(self, resource: Hashable) -> float:
        """Fraction of the makespan ``resource`` was busy (0 for an empty run)."""
        return self.busy.get(resource, 0.0) / self.makespan if self.makespan > 0 else 0.0


def simulate(
    tasks: Sequence[Task],
    *,
    policy: Policy = "fixed",
    order: Mapping[Hashable, Sequence[str]] | None = None,
    buffers: Iterable[Buffer] = (),
    record_memory: bool = False,
) -> SimResult:
    """Simulate ``tasks``; see the module docstring for the model.

    ``order`` overrides, per resource, the sequence its tasks run in under ``policy="fixed"``
    (it must list exactly that resource's tasks). ``record_memory`` keeps the step function
    ``[(time, bytes), ...]`` of every pool in ``memory_timeline``.
    Raises ``ValueError`` for duplicate names, unknown deps, negative durations or a deadlock
    (a dependency cycle, possibly through a resource order).
    """
    index = _index(tasks)
    if policy == "fixed":
        start, end = _run_fixed(tasks, index, _resource_orders(tasks, index, order))
    elif policy == "fifo":
        if order is not None:
            raise ValueError("order is only meaningful with policy='fixed'")
        start, end = _run_fifo(tasks, index)
    else:
        raise ValueError(f"unknown policy {policy!r}; expected 'fixed' or 'fifo'")

    busy: dict[Hashable, float] = defaultdict(float)
    for t in tasks:
        if t.resource is not None:
            busy[t.resource] += t.duration
    makespan = max(end, default=0.0)
    names = [t.name for t in tasks]
    peak, timeline = _memory(tasks, index, start, end, makespan, buffers, record_memory)
    return SimResult(
        start=dict(zip(names, start)),
        end=dict(zip(names, end)),
        makespan=makespan,
        busy=dict(busy),
        peak_memory=peak,
        memory_timeline=timeline,
    )


def _index(tasks: Sequence[Task]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        if t.name in index:
            raise ValueError(f"duplicate task name {t.name!r}")
        if t.duration < 0:
            raise ValueError(f"task {t.name!r} has negative duration {t.duration}")
        index[t.name] = i
    for t in tasks:
        for d in t.deps:
            if d not in index:
                raise ValueError(f"task {t.name!r} depends on unknown task {d!r}")
    return index


def _resource_orders(
    tasks: Sequence[Task],
    index: dict[str, int],
    order: Mapping[Hashable, Sequence[str]] | None,
) -> dict[Hashable, list[int]]:
    orders: dict[Hashable, list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        if t.resource is not None:
            orders[t.resource].append(i)
    for res, seq in (order or {}).items():
        if res not in orders:
            raise ValueError(f"order given for resource {res!r} that has no tasks")
        ids = []
        for n in seq:
            if n not in index:
                raise ValueError(f"order[{res!r}] names unknown task {n!r}")
            ids.append(index[n])
        if sorted(ids) != orders[res]:
            raise ValueError(f"order[{res!r}] must list each task of that resource exactly once")
        orders[res] = ids
    return orders


def _run_fixed(
    tasks: Sequence[Task], index: dict[str, int], orders: dict[Hashable, list[int]]
) -> tuple[list[float], list[float]]:
    # With fixed per-resource orders the schedule is the longest path through the DAG of
    # dependency edges plus "previous task on my resource" edges (Kahn's algorithm).
    n = len(tasks)
    preds: list[list[int]] = [[index[d] for d in t.deps] for t in tasks]
    for seq in orders.values():
        for a, b in pairwise(seq):
            preds[b].append(a)
    succs: list[list[int]] = [[] for _ in range(n)]
    indeg = [len(p) for p in preds]
    for b, ps in enumerate(preds):
        for a in ps:
            succs[a].append(b)
    start = [0.0] * n
    end = [0.0] * n
    stack = [i for i in range(n) if indeg[i] == 0]
    done = 0
    while stack:
        i = stack.pop()
        done += 1
        end[i] = start[i] + tasks[i].duration
        for j in succs[i]:
            start[j] = max(start[j], end[i])
            indeg[j] -= 1
            if indeg[j] == 0:
                stack.append(j)
    if done != n:
        stuck = [tasks[i].name for i in range(n) if indeg[i] > 0][:5]
        raise ValueError(f"deadlock: dependency cycle through resource order among {stuck}")
    return start, end


def _run_fifo(tasks: Sequence[Task], index: dict[str, int]) -> tuple[list[float], list[float]]:
    n = len(tasks)
    succs: list[list[int]] = [[] for _ in range(n)]
    missing = [len(t.deps) for t in tasks]
    for j, t in enumerate(tasks):
        for d in t.deps:
            succs[index[d]].append(j)
    ready_at = [0.0] * n
    start = [0.0] * n
    end = [0.0] * n
    queues: dict[Hashable, list[tuple[float, int]]] = defaultdict(list)  # (ready time, task)
    running: set[Hashable] = set()
    events: list[tuple[float, int]] = []  # (end time, task) of started tasks
    finished = 0

    def launch(i: int, now: float) -> None:
        start[i] = now
        end[i] = now + tasks[i].duration
        heapq.heappush(events, (end[i], i))

    def make_ready(i: int, now: float) -> None:
        if tasks[i].resource is None:
            launch(i, now)
        else:
            heapq.heappush(queues[tasks[i].resource], (ready_at[i], i))

    for i in range(n):
        if missing[i] == 0:
            make_ready(i, 0.0)
    now = 0.0
    while True:
        for res, q in queues.items():
            if q and res not in running:
                launch(heapq.heappop(q)[1], now)
                running.add(res)
        if not events:
            break
        # Retire every task ending at `now` before dispatching, so equal-time readiness ties
        # are broken by list order rather than by event order.
        now = events[0][0]
        while events and events[0][0] == now:
            i = heapq.heappop(events)[1]
            finished += 1
            running.discard(tasks[i].resource)
            for j in succs[i]:
                missing[j] -= 1
                ready_at[j] = max(ready_at[j], end[i])
                if missing[j] == 0:
                    make_ready(j, now)
    if finished != n:
        stuck = [tasks[i].name for i in range(n) if missing[i] > 0][:5]
        raise ValueError(f"deadlock: dependency cycle among {stuck}")
    return start, end


def _memory(
    tasks: Sequence[Task],
    index: dict[str, int],
    start: list[float],
    end: list[float],
    makespan: float,
    buffers: Iterable[Buffer],
    record: bool,
) -> tuple[dict[Hashable, int], dict[Hashable, list[tuple[float, int]]]]:
    # Events sort by (time, delta): at equal times frees (negative) come before allocations.
    events: dict[Hashable, list[tuple[float, int]]] = defaultdict(list)
    for i, t in enumerate(tasks):
        for pool, b in t.alloc.items():
            events[pool].append((start[i], b))
        for pool, b in t.free.items():
            events[pool].append((end[i], -b))
    for buf in buffers:
        for n in (buf.alloc_at, *buf.free_after):
            if n is not None and n not in index:
                raise ValueError(f"buffer refers to unknown task {n!r}")
        t0 = 0.0 if buf.alloc_at is None else start[index[buf.alloc_at]]
        events[buf.pool].append((t0, buf.nbytes))
        if buf.free_after:
            t1 = max(end[index[n]] for n in buf.free_after)
            events[buf.pool].append((max(t0, t1), -buf.nbytes))
    peak: dict[Hashable, int] = {}
    timeline: dict[Hashable, list[tuple[float, int]]] = {}
    for pool, evs in events.items():
        evs.sort()
        level = top = 0
        steps: list[tuple[float, int]] = []
        for t, delta in evs:
            level += delta
            top = max(top, level)
            if record:
                if steps and steps[-1][0] == t:
                    steps[-1] = (t, level)
                else:
                    steps.append((t, level))
        peak[pool] = top
        if record:
            timeline[pool] = steps
    return peak, timeline
