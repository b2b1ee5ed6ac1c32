"""ParDNN (Qararyah 2020): slice, map and refine for speed, then repair memory overflows.

Step 1 partitions for makespan:

1. **Slicing** — peel the heaviest path ``K`` times, recomputing the levels after each
   (primary clusters, one per device): start at the node of largest weighted level
   ``tl + bl`` and walk to the successor with the heaviest continuation ``comm + bl``, which
   traces a critical path exactly. Then peel the remaining nodes, by decreasing weighted
   level, into paths with the last levels (secondary clusters).
2. **Mapping** — a secondary whose communication exceeds its *potential* (the other work in
   its span) joins the device it talks to most; the rest, heaviest first, go to the device
   minimizing (work within the cluster's span on that device + communication with clusters
   on other devices) — Level-Aware Load Balancing, with one :class:`Fenwick` tree per device
   over nodes ordered by top level.
3. **Refinement** — swap secondaries within a span when it improves balance plus
   communication, then up to ``K`` rounds of moving an endpoint of a cross-device
   critical-path edge to the other endpoint's device when that shortens the path through it
   (each pass kept only if the emulated schedule does not get slower — see :func:`refine`).
   *(ours)* Then node moves off the critical path of the *emulated schedule*
   (:func:`schedule_path`: data edges, transfers and waits for a busy device), each kept only
   when the emulated makespan drops. The thesis's path ignores device contention, and on our
   graphs the makespan is mostly set by the busiest device, so its moves alone earn ~0–5%
   (bench/results/placement.md, "Refinement").

Step 2 (:func:`~spartan.dnn.placement.memory.repair_memory`) fits every device within its
memory minus 10% headroom on the emulated FIFO schedule.

Like the thesis, ParDNN assumes identical devices: on a machine with ``Machine.speed`` it
plans with ``comp`` as given (the schedule refinement and the scoring do see the speeds);
HEFT is the planner for heterogeneous devices.

*(ours)* A span is ``[finish of the first node's last parent, start of the last node's first
child)`` on the unconstrained top-level schedule; a node is "within" it when its top level is.
The critical-path move test is local: the longest path through the node, with the node's
incident edges re-costed for the candidate device.

>>> from spartan.dnn.placement.generator import random_dnn
>>> from spartan.dnn.placement.taskgraph import Machine
>>> tg = random_dnn(200, seed=1)
>>> a = pardnn(tg, Machine(4, memory=1e12, link_bw=12e9))
>>> a.shape == (tg.n,) and set(a.tolist()) <= {0, 1, 2, 3}
True
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from spartan.dnn.placement.fenwick import Fenwick
from spartan.dnn.placement.levels import heaviest_path, levels
from spartan.dnn.placement.memory import repair_memory
from spartan.dnn.placement.simulate import SimOutcome, simulate_placement
from spartan.dnn.placement.taskgraph import Machine, NodeKind, TaskGraph

__all__ = [
    "Slicing",
    "slice_graph",
    "map_clusters",
    "refine",
    "schedule_path",
    "schedule_moves",
    "pardnn",
]

log = logging.getLogger("spartan")

_EPS = 1e-12


@dataclass
class Slicing:
    """Clusters of a slicing plus the top-level schedule they were cut from."""

    primaries: list[list[int]]
    secondaries: list[list[int]]
    tl: list[float]
    bl: list[float]


def slice_graph(tg: TaskGraph, k: int, edge_comm: list[float]) -> Slicing:
    """ParDNN Algorithm 1: ``k`` primary clusters (heaviest paths), then secondary paths."""
    n = tg.n
    alive = [True] * n
    tl0, bl0 = levels(tg, edge_comm)
    tl, bl = tl0, bl0
    primaries: list[list[int]] = []
    remaining = n
    for j in range(k):
        if remaining == 0:
            break
        if j:
            tl, bl = levels(tg, edge_comm, alive)
        wl = [a + b for a, b in zip(tl, bl)]
        path = heaviest_path(tg, bl, edge_comm, _path_entry(wl, tl, alive), alive)
        for v in path:
            alive[v] = False
        remaining -= len(path)
        primaries.append(path)
    wl = [a + b for a, b in zip(tl, bl)]
    secondaries: list[list[int]] = []
    for v in sorted(range(n), key=lambda v: (-wl[v], tl[v], v)):
        if alive[v]:
            path = heaviest_path(tg, bl, edge_comm, v, alive)
            for u in path:
                alive[u] = False
            secondaries.append(path)
    return Slicing(primaries, secondaries, tl0, bl0)


def _path_entry(wl: list[float], tl: list[float], alive: list[bool]) -> int:
    """Entry of the heaviest path: the alive node of largest weighted level (equal up to
    rounding along the whole path) with the smallest top level."""
    top = max(w for w, a in zip(wl, alive) if a)
    tol = 1e-9 * abs(top)
    return min(
        (v for v in range(len(wl)) if alive[v] and wl[v] >= top - tol), key=lambda v: (tl[v], v)
    )


@dataclass
class _State:
    """Device of every node and per-device work by level (shared by mapping and refinement)."""

    tg: TaskGraph
    edge_comm: list[float]
    dev: list[int]
    pos: list[int]  # rank of each node by top level
    sorted_tl: list[float]
    trees: list[Fenwick]
    comp: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.comp = self.tg.comp.tolist()

    def place(self, nodes: list[int], d: int) -> None:
        for v in nodes:
            old = self.dev[v]
            if old >= 0:
                self.trees[old].add(self.pos[v], -self.comp[v])
            self.dev[v] = d
            self.trees[d].add(self.pos[v], self.comp[v])

    def window(self, lo_t: float, hi_t: float) -> tuple[int, int]:
        """Level positions of nodes whose top level lies in ``[lo_t, hi_t)``."""
        return bisect.bisect_left(self.sorted_tl, lo_t), bisect.bisect_left(self.sorted_tl, hi_t)

    def comm_by_device(self, cluster: list[int], members: set[int], k: int) -> list[float]:
        """Communication time between ``cluster`` and the placed nodes of each device."""
        out = [0.0] * k
        tg, dev, ec = self.tg, self.dev, self.edge_comm
        for v in cluster:
            for u, e in zip(tg.succs[v], tg.succ_edges[v]):
                if u not in members and dev[u] >= 0:
                    out[dev[u]] += ec[e]
            for u, e in zip(tg.preds[v], tg.pred_edges[v]):
                if u not in members and dev[u] >= 0:
                    out[dev[u]] += ec[e]
        return out


def _span(
    tg: TaskGraph, path: list[int], tl: list[float], comp: list[float]
) -> tuple[float, float]:
    first, last = path[0], path[-1]
    lo = max((tl[p] + comp[p] for p in tg.preds[first]), default=tl[first])
    hi = min((tl[s] for s in tg.succs[last]), default=tl[last] + comp[last])
    return lo, max(hi, lo)


def map_clusters(
    tg: TaskGraph, k: int, sl: Slicing, edge_comm: list[float]
) -> tuple[_State, list[int]]:
    """ParDNN Algorithm 2 (initial merging + LALB). Returns the state and each secondary's device."""
    n = tg.n
    order = sorted(range(n), key=lambda v: (sl.tl[v], v))
    pos = [0] * n
    for r, v in enumerate(order):
        pos[v] = r
    sorted_tl = [sl.tl[v] for v in order]
    st = _State(tg, edge_comm, [-1] * n, pos, sorted_tl, [Fenwick(n) for _ in range(k)])
    comp = st.comp
    prefix = np.concatenate([[0.0], np.cumsum([comp[v] for v in order])]).tolist()
    for d, path in enumerate(sl.primaries):
        st.place(path, d)
    sec_dev = [-1] * len(sl.secondaries)
    spans = [_span(tg, sc, sl.tl, comp) for sc in sl.secondaries]
    pending: list[int] = []
    for i, sc in enumerate(sl.secondaries):
        members = set(sc)
        lo, hi = st.window(*spans[i])
        potential = prefix[hi] - prefix[lo] - sum(comp[v] for v in sc)
        by_dev = st.comm_by_device(sc, members, k)
        total_comm = _cluster_comm(tg, sc, members, edge_comm)
        if total_comm - potential > 0 and max(by_dev) > 0:
            d = max(range(k), key=lambda d: (by_dev[d], -d))
            st.place(sc, d)
            sec_dev[i] = d
        else:
            pending.append(i)
    pending.sort(key=lambda i: (-sum(comp[v] for v in sl.secondaries[i]), i))
    for i in pending:
        sc = sl.secondaries[i]
        lo, hi = st.window(*spans[i])
        by_dev = st.comm_by_device(sc, set(sc), k)
        total = sum(by_dev)
        d = min(
            range(k),
            key=lambda d: (st.trees[d].range_sum(lo, hi) + total - by_dev[d], -by_dev[d], d),
        )
        st.place(sc, d)
        sec_dev[i] = d
    return st, sec_dev


def _cluster_comm(tg: TaskGraph, sc: list[int], members: set[int], edge_comm: list[float]) -> float:
    total = 0.0
    for v in sc:
        total += sum(
            edge_comm[e] for u, e in zip(tg.succs[v], tg.succ_edges[v]) if u not in members
        )
        total += sum(
            edge_comm[e] for u, e in zip(tg.preds[v], tg.pred_edges[v]) if u not in members
        )
    return total


def _cross_comm(st: _State, nodes: list[int]) -> float:
    """Communication on edges from ``nodes`` to nodes on another device (current placement)."""
    tg, dev, ec = st.tg, st.dev, st.edge_comm
    total = 0.0
    for v in nodes:
        for u, e in zip(tg.succs[v], tg.succ_edges[v]):
            if dev[u] != dev[v]:
                total += ec[e]
        for u, e in zip(tg.preds[v], tg.pred_edges[v]):
            if dev[u] != dev[v]:
                total += ec[e]
    return total


def _swap_secondaries(st: _State, sl: Slicing, sec_dev: list[int], window: int = 16) -> int:
    """Refinement 1: swap two secondaries of one span on different devices when that lowers
    |work difference within the span| + communication. Each cluster swaps at most once."""
    tg, comp = st.tg, st.comp
    secs = sl.secondaries
    spans = [st.window(*_span(tg, sc, sl.tl, comp)) for sc in secs]
    by_start = sorted(range(len(secs)), key=lambda i: (st.pos[secs[i][0]], i))
    starts = [st.pos[secs[i][0]] for i in by_start]
    work = [sum(comp[v] for v in sc) for sc in secs]
    done = [False] * len(secs)
    swaps = 0
    for i in by_start:
        if done[i]:
            continue
        lo, hi = spans[i]
        a = sec_dev[i]
        first = bisect.bisect_left(starts, lo)
        for j in by_start[first : first + window]:
            if st.pos[secs[j][0]] >= hi:
                break
            b = sec_dev[j]
            if j == i or done[j] or b == a:
                continue
            pair = secs[i] + secs[j]
            wa, wb = st.trees[a].range_sum(lo, hi), st.trees[b].range_sum(lo, hi)
            before = abs(wa - wb) + _cross_comm(st, pair)
            after_bal = abs((wa - work[i] + work[j]) - (wb - work[j] + work[i]))
            st.place(secs[i], b)
            st.place(secs[j], a)
            after = after_bal + _cross_comm(st, pair)
            if after < before - _EPS:
                sec_dev[i], sec_dev[j] = b, a
                done[i] = done[j] = True
                swaps += 1
                break
            st.place(secs[i], a)
            st.place(secs[j], b)
    return swaps


def _through(st: _State, x: int, d: int, tl: list[float], bl: list[float]) -> float:
    """Longest path through ``x`` if it ran on device ``d`` (its edges re-costed)."""
    tg, dev, comp, ec = st.tg, st.dev, st.comp, st.edge_comm
    inc = max(
        (
            tl[p] + comp[p] + (ec[e] if dev[p] != d else 0.0)
            for p, e in zip(tg.preds[x], tg.pred_edges[x])
        ),
        default=0.0,
    )
    out = max(
        (bl[s] + (ec[e] if dev[s] != d else 0.0) for s, e in zip(tg.succs[x], tg.succ_edges[x])),
        default=0.0,
    )
    return inc + comp[x] + out


def _switch_round(st: _State) -> int:
    """One round of refinement 2: move endpoints of cross-device critical-path edges."""
    tg, dev, ec = st.tg, st.dev, st.edge_comm
    eff = [c if dev[s] != dev[d] else 0.0 for c, s, d in zip(ec, tg.src.tolist(), tg.dst.tolist())]
    tl, bl = levels(tg, eff)
    wl = [a + b for a, b in zip(tl, bl)]
    path = heaviest_path(tg, bl, eff, _path_entry(wl, tl, [True] * tg.n))
    moves = 0
    for u, v in zip(path, path[1:]):
        if dev[u] == dev[v]:
            continue
        for x, target in ((u, dev[v]), (v, dev[u])):
            if (
                tg.kind[x] == NodeKind.NORMAL
                and _through(st, x, target, tl, bl) < _through(st, x, dev[x], tl, bl) - _EPS
            ):
                st.place([x], target)
                moves += 1
                break
    return moves


def _restore(st: _State, snapshot: list[int]) -> None:
    for v, d in enumerate(snapshot):
        if st.dev[v] != d:
            st.place([v], d)


def refine(
    st: _State, sl: Slicing, sec_dev: list[int], k: int, makespan: Callable[[list[int]], float]
) -> tuple[int, int]:
    """Both refinements; returns (cluster swaps, node moves) that were kept.

    *(ours)* The swap pass and each of the ``k`` critical-path rounds are kept only if the
    emulated schedule's makespan (``makespan(dev)``) does not grow: both tests are local
    (span balance, path through one node) and can otherwise trade a shorter critical path
    for device contention.
    """
    best = makespan(st.dev)
    snapshot, sec_snapshot = list(st.dev), list(sec_dev)
    swaps = _swap_secondaries(st, sl, sec_dev)
    if swaps:
        t = makespan(st.dev)
        if t > best:
            _restore(st, snapshot)
            sec_dev[:] = sec_snapshot
            swaps = 0
        else:
            best = t
    moves = 0
    for _ in range(k):
        snapshot = list(st.dev)
        moved = _switch_round(st)
        if not moved:
            break
        t = makespan(st.dev)
        if t > best:
            _restore(st, snapshot)
            break
        best, moves = t, moves + moved
    return swaps, moves


def schedule_path(tg: TaskGraph, assign: np.ndarray, out: SimOutcome) -> list[int]:
    """The critical path of an emulated schedule, last node first.

    From the node that ends last, step to whatever set each node's start: the input (local
    producer, or the producer of the copy) that arrived last when the node started as soon as
    its data was there, else the node its device ran just before (the node waited for its
    device). Shortening any step of this path is the only way to shorten the makespan.

    >>> from spartan.dnn.placement.taskgraph import TaskGraph, Machine
    >>> tg = TaskGraph(list("abc"), [1.0, 2.0, 3.0], [8, 8, 8], [0, 0, 0], [(0, 1, 8), (0, 2, 8)])
    >>> a = np.zeros(3, dtype=np.int64)
    >>> schedule_path(tg, a, simulate_placement(tg, a, Machine(1, memory=100, link_bw=8.0)))
    [2, 1, 0]
    """
    a = np.asarray(assign, dtype=np.int64)
    start, end = out.start, out.end
    if tg.n == 0:
        return []
    tol = 1e-12 * max(out.makespan, 0.0) + 1e-15
    of_edge, copy_end = out.transfers.of_edge, out.copy_end
    order = np.lexsort((end, a))  # nodes by device, then end time
    ends = end[order]
    bounds = np.searchsorted(a[order], np.arange(int(a.max()) + 2))
    cur = int(np.argmax(end))
    path, seen = [cur], {cur}
    while start[cur] > tol:
        s = start[cur]
        arrive, prod = -1.0, -1
        for p, e in zip(tg.preds[cur], tg.pred_edges[cur]):
            j = of_edge[e]
            r = end[p] if j < 0 else copy_end[j]
            if r > arrive:
                arrive, prod = r, p
        nxt = prod
        if arrive < s - tol:  # not data: the device was busy until s
            lo, hi = bounds[a[cur]], bounds[a[cur] + 1]
            i = lo + int(np.searchsorted(ends[lo:hi], s - tol))
            if i < hi and abs(ends[i] - s) <= tol:
                nxt = int(order[i])
        if nxt < 0 or nxt in seen:
            break
        seen.add(nxt)
        path.append(nxt)
        cur = nxt
    return path


def schedule_moves(
    tg: TaskGraph, assign: np.ndarray, machine: Machine, budget: int | None = None
) -> tuple[np.ndarray, int, int]:
    """*(ours)* Move nodes off the emulated schedule's critical path while it pays.

    Candidates are the normal nodes with work on :func:`schedule_path`, heaviest first; each
    is tried on every other device and the first move that lowers the emulated makespan is
    kept, then the path is recomputed. Stops when no candidate helps or after ``budget``
    simulations (default: fewer on larger graphs). Returns (assignment, moves, simulations).
    """
    a = tg.colocate(np.asarray(assign, dtype=np.int64))
    if budget is None:
        budget = max(8, min(100, 100_000 // max(tg.n, 1)))
    out = simulate_placement(tg, a, machine)
    best = out.makespan
    sims = moves = 0
    tried: set[tuple[int, int]] = set()  # (node, device) found no better from this state
    while sims < budget:
        path = schedule_path(tg, a, out)
        cands = [x for x in path if tg.kind[x] == NodeKind.NORMAL and tg.comp[x] > 0]
        cands.sort(key=lambda x: (-tg.comp[x], x))
        improved = False
        for x in cands:
            for d in range(machine.devices):
                if d == a[x] or (x, d) in tried or sims >= budget:
                    continue
                trial = a.copy()
                trial[x] = d
                o = simulate_placement(tg, trial, machine)
                sims += 1
                if o.makespan < best * (1 - 1e-9):
                    a, out, best = trial, o, o.makespan
                    improved = True
                    moves += 1
                    tried.clear()
                    break
                tried.add((x, d))
            if improved or sims >= budget:
                break
        if not improved:
            break
    return a, moves, sims


def pardnn(
    tg: TaskGraph,
    machine: Machine,
    *,
    refinement: bool = True,
    schedule_refinement: bool = True,
    schedule_budget: int | None = None,
    memory_repair: bool = True,
    stats: dict | None = None,
) -> np.ndarray:
    """Place ``tg`` on ``machine`` with ParDNN; returns the device of every node.

    ``refinement`` runs the thesis's two refinements, ``schedule_refinement`` *(ours)* the
    moves off the emulated schedule's critical path (:func:`schedule_moves`, at most
    ``schedule_budget`` simulations). ``stats`` (optional dict) receives timings and counts
    of each stage.
    """
    k = machine.devices
    edge_comm = machine.comm_time(tg.nbytes.astype(np.float64)).tolist() if tg.m else []
    t0 = perf_counter()
    sl = slice_graph(tg, k, edge_comm)
    t1 = perf_counter()
    st, sec_dev = map_clusters(tg, k, sl, edge_comm)
    t2 = perf_counter()

    def emulated(dev: list[int]) -> float:
        return simulate_placement(tg, tg.colocate(np.array(dev, dtype=np.int64)), machine).makespan

    swaps, moves = refine(st, sl, sec_dev, k, emulated) if refinement else (0, 0)
    assign = tg.colocate(np.array(st.dev, dtype=np.int64))
    sched_moves = sched_sims = 0
    if schedule_refinement and k > 1:
        assign, sched_moves, sched_sims = schedule_moves(tg, assign, machine, schedule_budget)
    t3 = perf_counter()
    repair = {"moved": 0, "rounds": 0, "feasible": None}
    if memory_repair:
        assign, repair = repair_memory(tg, assign, machine, edge_comm)
    t4 = perf_counter()
    log.info(
        "pardnn: %d nodes, %d devices: %d primary / %d secondary clusters, %d swaps, %d moves, "
        "%d nodes moved for memory in %d rounds (%.2fs)",
        tg.n,
        k,
        len(sl.primaries),
        len(sl.secondaries),
        swaps,
        moves,
        repair["moved"],
        repair["rounds"],
        t4 - t0,
    )
    if stats is not None:
        stats.update(
            slicing_s=t1 - t0,
            mapping_s=t2 - t1,
            refinement_s=t3 - t2,
            memory_s=t4 - t3,
            primaries=len(sl.primaries),
            secondaries=len(sl.secondaries),
            swaps=swaps,
            cp_moves=moves,
            schedule_moves=sched_moves,
            schedule_simulations=sched_sims,
            **{f"memory_{key}": val for key, val in repair.items()},
        )
    return assign
