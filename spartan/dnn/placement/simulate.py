"""Makespan and per-device memory of one placed training step (multi-device, with links).

The model is the shared event simulator's (:mod:`spartan.dnn.simulator`) under
``policy="fifo"``, i.e. TensorFlow's ready-queue scheduler that ParDNN emulates:

* node ``i`` runs on device ``assign[i]`` (one op at a time per device, FIFO by ready time)
  for ``comp[i] / speed[d]`` seconds (``Machine.speed``; 1 when the devices are identical);
* a tensor needed on another device is sent once per (producer, destination device) as a
  transfer task on the producer's egress link (one transfer at a time per link), taking
  ``latency + bytes / link_bw``; its bytes are ``min(output bytes, sum of edge bytes)``;
* memory: residual nodes are resident all step; a normal node's output lives from its start
  until its last local consumer and its outgoing transfers end; a received copy lives from the
  transfer's start until the last consumer on the receiving device ends.

:func:`simulate_placement` is an array implementation of exactly that model, fast enough for 50k-node
graphs and for the thousands of evaluations a GA makes; :func:`to_tasks` writes the same step
as :class:`~spartan.dnn.simulator.Task` / :class:`~spartan.dnn.simulator.Buffer` lists so the
shared simulator can score it (the tests check both agree).

Example
-------
>>> from spartan.dnn.placement.taskgraph import TaskGraph, Machine
>>> tg = TaskGraph(["a", "b", "c"], [1.0, 2.0, 1.0], [8, 8, 8], [0, 0, 0], [(0, 1, 8), (0, 2, 8)])
>>> out = simulate_placement(tg, [0, 0, 1], Machine(2, memory=100, link_bw=8, latency=0.0))
>>> out.makespan, out.peak.tolist()
(3.0, [16, 16])
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from spartan.dnn.placement.taskgraph import Machine, NodeKind, TaskGraph

__all__ = ["Transfers", "SimOutcome", "transfers", "simulate_placement", "to_tasks"]


@dataclass(frozen=True)
class Transfers:
    """The cross-device copies a placement needs: copy ``j`` sends ``node[j]``'s output to
    device ``dst[j]``; ``of_edge[e]`` is the copy edge ``e`` reads (``-1`` for local edges)."""

    node: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    of_edge: np.ndarray

    def __len__(self) -> int:
        return len(self.node)


@dataclass(frozen=True)
class SimOutcome:
    """Start/end of every node, makespan, per-device peak bytes and the memory buffers.

    Buffer ``b`` holds ``buf_bytes[b]`` on device ``buf_dev[b]`` over
    ``[buf_t0[b], buf_t1[b])``; ``buf_node[b]`` is the producing node and ``buf_kind[b]`` is
    0 (resident state), 1 (a node's own output) or 2 (a received copy). Copy ``j`` of
    ``transfers`` runs over ``[copy_start[j], copy_end[j])`` on its sender's link.
    """

    start: np.ndarray
    end: np.ndarray
    makespan: float
    peak: np.ndarray
    transfers: Transfers
    buf_dev: np.ndarray
    buf_t0: np.ndarray
    buf_t1: np.ndarray
    buf_bytes: np.ndarray
    buf_node: np.ndarray
    buf_kind: np.ndarray
    copy_start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    copy_end: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def feasible(self, machine: Machine, limit: float | None = None) -> bool:
        """True when no device's peak exceeds ``limit`` (default: its full memory)."""
        return bool((self.peak <= (machine.memory if limit is None else limit)).all())

    def comm_bytes(self) -> int:
        """Bytes sent between devices in the step."""
        return int(self.transfers.nbytes.sum())


def _check_assign(tg: TaskGraph, assign: np.ndarray, k: int) -> np.ndarray:
    a = np.asarray(assign, dtype=np.int64).reshape(-1)
    if len(a) != tg.n:
        raise ValueError(f"assignment has {len(a)} entries for {tg.n} nodes")
    if tg.n and (a.min() < 0 or a.max() >= k):
        raise ValueError(f"device ids must lie in [0, {k})")
    refs = tg.kind == NodeKind.REFERENCE
    if (a[refs] != a[tg.anchor[refs]]).any():
        raise ValueError("a reference node is not on its anchor's device (use TaskGraph.colocate)")
    return a


def transfers(tg: TaskGraph, assign: np.ndarray, k: int) -> Transfers:
    """The copies ``assign`` needs on a machine of ``k`` devices (see module docstring)."""
    a = np.asarray(assign, dtype=np.int64)
    cross = a[tg.src] != a[tg.dst]
    key = tg.src[cross] * k + a[tg.dst[cross]]
    uniq, inv = np.unique(key, return_inverse=True)
    # Number copies by (producer, first consumer) rather than by device id, so that renaming
    # devices never changes tie-breaking (and the makespan) of a placement.
    first = np.full(len(uniq), tg.n, dtype=np.int64)
    np.minimum.at(first, inv, tg.dst[cross])
    order = np.lexsort((first, uniq // k))
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    uniq, inv = uniq[order], rank[inv]
    node = uniq // k
    summed = np.bincount(inv, weights=tg.nbytes[cross], minlength=len(uniq)).astype(np.int64)
    out_bytes = tg.mem[node]
    nbytes = np.where(out_bytes > 0, np.minimum(summed, out_bytes), summed)
    of_edge = np.full(tg.m, -1, dtype=np.int64)
    of_edge[cross] = inv
    return Transfers(node=node, dst=uniq % k, nbytes=nbytes, of_edge=of_edge)


def simulate_placement(
    tg: TaskGraph, assign: np.ndarray | list[int], machine: Machine
) -> SimOutcome:
    """Simulate one step of ``tg`` placed by ``assign`` on ``machine`` (module docstring)."""
    k = machine.devices
    a = _check_assign(tg, np.asarray(assign), k)
    tr = transfers(tg, a, k)
    n, nt = tg.n, len(tr)
    total = n + nt
    comp = tg.comp if machine.speed is None else machine.device_time(tg.comp, a)
    duration = np.concatenate([comp, machine.comm_time(tr.nbytes.astype(np.float64))]).tolist()
    resource = np.concatenate([a, k + a[tr.node]]).tolist()
    # Task successors: local consumers and outgoing copies of a node; consumers of a copy.
    succs: list[list[int]] = [[] for _ in range(total)]
    missing = [0] * total
    src_l, dst_l, edge_tr = tg.src.tolist(), tg.dst.tolist(), tr.of_edge.tolist()
    seen_copy = set()
    for s, d, j in zip(src_l, dst_l, edge_tr):
        if j < 0:
            succs[s].append(d)
            missing[d] += 1
        else:
            if j not in seen_copy:
                seen_copy.add(j)
                succs[s].append(n + j)
                missing[n + j] += 1
            succs[n + j].append(d)
            missing[d] += 1
    start, end = _run_fifo(duration, resource, succs, missing, 2 * k)
    st, en = np.array(start), np.array(end)
    makespan = float(en.max()) if total else 0.0
    return _memory(tg, a, tr, st, en, makespan, k)


def _run_fifo(
    duration: list[float],
    resource: list[int],
    succs: list[list[int]],
    missing: list[int],
    nres: int,
) -> tuple[list[float], list[float]]:
    # Same event loop as spartan.dnn.simulator._run_fifo, on integer resources.
    total = len(duration)
    ready_at = [0.0] * total
    start = [0.0] * total
    end = [0.0] * total
    queues: list[list[tuple[float, int]]] = [[] for _ in range(nres)]
    busy = [False] * nres
    idle: set[int] = set()
    events: list[tuple[float, int]] = []
    for i in range(total):
        if missing[i] == 0:
            r = resource[i]
            heapq.heappush(queues[r], (0.0, i))
            if not busy[r]:
                idle.add(r)
    now = 0.0
    finished = 0
    while True:
        for r in idle:
            q = queues[r]
            if q:
                _, i = heapq.heappop(q)
                s = ready_at[i] if ready_at[i] > now else now
                start[i] = s
                end[i] = s + duration[i]
                heapq.heappush(events, (end[i], i))
                busy[r] = True
        idle.clear()
        if not events:
            break
        # Retire every task ending at `now` before dispatching (equal-time readiness ties are
        # then broken by task order, as in the shared simulator).
        now = events[0][0]
        while events and events[0][0] == now:
            i = heapq.heappop(events)[1]
            finished += 1
            r = resource[i]
            busy[r] = False
            idle.add(r)
            for j in succs[i]:
                missing[j] -= 1
                if now > ready_at[j]:
                    ready_at[j] = now
                if missing[j] == 0:
                    rj = resource[j]
                    heapq.heappush(queues[rj], (ready_at[j], j))
                    if not busy[rj]:
                        idle.add(rj)
    if finished != total:
        raise ValueError("deadlock: the graph has a cycle")
    return start, end


def _memory(
    tg: TaskGraph,
    a: np.ndarray,
    tr: Transfers,
    st: np.ndarray,
    en: np.ndarray,
    makespan: float,
    k: int,
) -> SimOutcome:
    n = tg.n
    node_st, node_en = st[:n], en[:n]
    tr_st, tr_en = st[n:], en[n:]
    resid = np.flatnonzero((tg.kind == NodeKind.RESIDUAL) & (tg.mem > 0))
    normal = np.flatnonzero((tg.kind == NodeKind.NORMAL) & (tg.mem > 0))
    # Output freed after the node, its local consumers and its outgoing copies have ended.
    free_at = node_en.copy()
    local = tr.of_edge < 0
    np.maximum.at(free_at, tg.src[local], node_en[tg.dst[local]])
    np.maximum.at(free_at, tr.node, tr_en)
    copy_free = tr_en.copy()
    cross = ~local
    np.maximum.at(copy_free, tr.of_edge[cross], node_en[tg.dst[cross]])
    buf_dev = np.concatenate([a[resid], a[normal], tr.dst])
    buf_t0 = np.concatenate([np.zeros(len(resid)), node_st[normal], tr_st])
    buf_t1 = np.concatenate([np.full(len(resid), makespan), free_at[normal], copy_free])
    buf_bytes = np.concatenate([tg.mem[resid], tg.mem[normal], tr.nbytes])
    buf_node = np.concatenate([resid, normal, tr.node])
    buf_kind = np.concatenate(
        [np.zeros(len(resid), np.int8), np.ones(len(normal), np.int8), np.full(len(tr), 2, np.int8)]
    )
    peak = peak_memory(buf_dev, buf_t0, buf_t1, buf_bytes, buf_kind == 0, k)
    return SimOutcome(
        start=node_st,
        end=node_en,
        makespan=makespan,
        peak=peak,
        transfers=tr,
        buf_dev=buf_dev,
        buf_t0=buf_t0,
        buf_t1=buf_t1,
        buf_bytes=buf_bytes,
        buf_node=buf_node,
        buf_kind=buf_kind,
        copy_start=tr_st,
        copy_end=tr_en,
    )


def peak_memory(
    dev: np.ndarray, t0: np.ndarray, t1: np.ndarray, nbytes: np.ndarray, held: np.ndarray, k: int
) -> np.ndarray:
    """Per-device peak of buffers ``[t0, t1)``; ``held`` buffers are never freed.

    At equal times frees come before allocations, as in the shared simulator.
    """
    freed = ~held
    ev_dev = np.concatenate([dev, dev[freed]])
    ev_t = np.concatenate([t0, np.maximum(t0, t1)[freed]])
    ev_d = np.concatenate([nbytes, -nbytes[freed]])
    order = np.lexsort((ev_d, ev_t, ev_dev))
    ev_dev, ev_d = ev_dev[order], ev_d[order]
    level = np.cumsum(ev_d)
    peak = np.zeros(k, dtype=np.int64)
    if len(level) == 0:
        return peak
    starts = np.flatnonzero(np.r_[True, ev_dev[1:] != ev_dev[:-1]])
    base = np.r_[0, level[starts[1:] - 1]]
    seg_max = np.maximum.reduceat(level, starts) - base
    peak[ev_dev[starts]] = np.maximum(seg_max, 0)
    return peak


def to_tasks(tg: TaskGraph, assign: np.ndarray | list[int], machine: Machine) -> tuple[list, list]:
    """The placed step as ``(tasks, buffers)`` for :func:`spartan.dnn.simulator.simulate`.

    Resources are ``("dev", d)`` and ``("link", d)``; memory pools are device ids.

    >>> from spartan.dnn.simulator import simulate as shared_simulate
    >>> from spartan.dnn.placement.taskgraph import TaskGraph, Machine
    >>> tg = TaskGraph(["a", "b"], [1.0, 2.0], [8, 8], [0, 0], [(0, 1, 8)])
    >>> tasks, bufs = to_tasks(tg, [0, 1], Machine(2, memory=100, link_bw=8, latency=0.0))
    >>> shared_simulate(tasks, policy="fifo", buffers=bufs).makespan
    4.0
    """
    from spartan.dnn.simulator import Buffer, Task

    k = machine.devices
    a = _check_assign(tg, np.asarray(assign), k)
    tr = transfers(tg, a, k)
    name = [f"n{i}:{s}" for i, s in enumerate(tg.names)]
    copy_name = [
        f"copy{j}:{tg.names[p]}->{d}"
        for j, (p, d) in enumerate(zip(tr.node.tolist(), tr.dst.tolist()))
    ]
    deps: list[list[str]] = [[] for _ in range(tg.n)]
    copy_consumers: list[list[str]] = [[] for _ in range(len(tr))]
    local_consumers: list[list[str]] = [[] for _ in range(tg.n)]
    outgoing: list[list[str]] = [[] for _ in range(tg.n)]
    for s, d, j in zip(tg.src.tolist(), tg.dst.tolist(), tr.of_edge.tolist()):
        if j < 0:
            deps[d].append(name[s])
            local_consumers[s].append(name[d])
        else:
            deps[d].append(copy_name[j])
            copy_consumers[j].append(name[d])
    for j, p in enumerate(tr.node.tolist()):
        outgoing[p].append(copy_name[j])
    tasks = [
        Task(
            name[i],
            ("dev", int(a[i])),
            float(machine.device_time(tg.comp[i], a[i])),
            tuple(deps[i]),
        )
        for i in range(tg.n)
    ]
    tasks += [
        Task(
            copy_name[j],
            ("link", int(a[p])),
            float(machine.comm_time(float(tr.nbytes[j]))),
            (name[p],),
        )
        for j, p in enumerate(tr.node.tolist())
    ]
    bufs = []
    for i in range(tg.n):
        if tg.mem[i] == 0 or tg.kind[i] == NodeKind.REFERENCE:
            continue
        if tg.kind[i] == NodeKind.RESIDUAL:
            bufs.append(Buffer(int(a[i]), int(tg.mem[i])))
        else:
            bufs.append(
                Buffer(
                    int(a[i]), int(tg.mem[i]), name[i], (name[i], *local_consumers[i], *outgoing[i])
                )
            )
    for j in range(len(tr)):
        bufs.append(
            Buffer(
                int(tr.dst[j]), int(tr.nbytes[j]), copy_name[j], (copy_name[j], *copy_consumers[j])
            )
        )
    return tasks, bufs
