"""ParDNN step 2: move nodes off devices whose memory overflows on the emulated schedule.

Each round simulates the placement (FIFO ready-queue schedule, per-device memory timeline)
and, on every device whose peak exceeds ``machine.limit`` (memory minus headroom), looks at
the instant of the peak. Every buffer live then is charged to one node, its *memory
potential* ``M_pot``: resident state to its residual node, a node's output to the node while
it runs and afterwards to its last consumer on that device, a received copy to its last
consumer there. Nodes are then moved, cheapest ``move_cost / M_pot`` first (``move_cost`` =
node time + communication with same-device neighbours; a node whose ``M_pot`` alone covers
the overflow is taken instead when its ``move_cost`` is lower — the thesis's two heaps), to
the device that can take ``M_pot`` and communicates most with the node, until the overflow
is covered. *(ours)* A copy of the node's output already living on the target is netted out
of what the target must take, so moving a weight next to its remote copy counts as free. A moved node is never moved again, so at most ``|V|`` rounds run; the loop stops
when no device overflows or no node can move.

>>> from spartan.dnn.placement.generator import random_dnn
>>> from spartan.dnn.placement.simulate import simulate_placement
>>> from spartan.dnn.placement.taskgraph import Machine
>>> tg = random_dnn(120, seed=0)
>>> one = simulate_placement(tg, [0] * tg.n, Machine(2, memory=1e15, link_bw=1e10)).peak[0]
>>> m = Machine(2, memory=0.8 * one, link_bw=1e10)
>>> a, info = repair_memory(tg, [0] * tg.n, m)
>>> info["feasible"], bool(simulate_placement(tg, a, m).peak.max() <= m.limit)
(True, True)
"""

from __future__ import annotations

import heapq
import logging

import numpy as np

from spartan.dnn.placement.simulate import SimOutcome, simulate_placement
from spartan.dnn.placement.taskgraph import Machine, NodeKind, TaskGraph

__all__ = ["repair_memory", "memory_potential"]

log = logging.getLogger("spartan")


class _Timeline:
    """Per-device memory level after each event (frees before allocations at equal times)."""

    def __init__(self, out: SimOutcome, k: int) -> None:
        self.times: list[np.ndarray] = []
        self.levels: list[np.ndarray] = []
        for d in range(k):
            on = out.buf_dev == d
            t0, t1, b = out.buf_t0[on], out.buf_t1[on], out.buf_bytes[on]
            freed = out.buf_kind[on] != 0
            ev_t = np.concatenate([t0, np.maximum(t0, t1)[freed]])
            ev_d = np.concatenate([b, -b[freed]])
            order = np.lexsort((ev_d, ev_t))
            self.times.append(ev_t[order])
            self.levels.append(np.cumsum(ev_d[order]))

    def peak_time(self, d: int) -> float:
        return float(self.times[d][int(np.argmax(self.levels[d]))]) if len(self.times[d]) else 0.0

    def max_level(self, d: int, t0: float, t1: float) -> float:
        """Highest memory level on ``d`` during ``[t0, t1)``."""
        times, levels = self.times[d], self.levels[d]
        i0 = int(np.searchsorted(times, t0, side="right")) - 1
        i1 = int(np.searchsorted(times, t1, side="left"))
        at_t0 = float(levels[i0]) if i0 >= 0 else 0.0
        inside = levels[max(i0, 0) : i1]
        return max(at_t0, float(inside.max())) if len(inside) else at_t0


def memory_potential(
    tg: TaskGraph, assign: np.ndarray, out: SimOutcome, d: int, t: float
) -> dict[int, tuple[int, float, float]]:
    """Bytes live on device ``d`` at time ``t`` charged to each node, with the span
    ``(bytes, first alloc, last free)`` of the charged buffers (see module docstring)."""
    on = out.buf_dev == d
    t0, t1 = out.buf_t0[on], out.buf_t1[on]
    kind = out.buf_kind[on]
    live = (t0 <= t) & ((kind == 0) | (t < t1))
    pot: dict[int, tuple[int, float, float]] = {}
    rows = zip(
        out.buf_node[on][live].tolist(),
        out.buf_bytes[on][live].tolist(),
        kind[live].tolist(),
        t0[live].tolist(),
        t1[live].tolist(),
    )
    dev = np.asarray(assign).tolist()
    end = out.end.tolist()
    anchor = tg.anchor.tolist()  # -1 except for reference nodes
    for p, b, kd, lo, hi in rows:
        if kd == 0 or (kd == 1 and t < end[p]):
            holder = p
        else:
            local = [c for c in tg.succs[p] if dev[c] == d]
            holder = max(local, key=lambda c: (end[c], c)) if local else p
        if anchor[holder] >= 0:
            holder = anchor[holder]
        if kd == 0:
            hi = float("inf")
        old = pot.get(holder)
        pot[holder] = (b, lo, hi) if old is None else (old[0] + b, min(old[1], lo), max(old[2], hi))
    return pot


def repair_memory(
    tg: TaskGraph,
    assign: np.ndarray | list[int],
    machine: Machine,
    edge_comm: list[float] | None = None,
    max_rounds: int | None = None,
    trial_simulations: int | None = None,
) -> tuple[np.ndarray, dict]:
    """Fit every device under ``machine.limit``; returns the new assignment and a summary
    ``{"feasible", "moved", "rounds", "trials", "peak"}`` (``feasible`` False when stuck).

    When the greedy pass finds no device with room (e.g. every device overflows),
    *(ours)* up to ``trial_simulations`` simulated trial moves look for the single move of a
    candidate at the worst device's peak that most lowers the total overflow; such moves can
    shrink memory overall by removing copies, which the greedy room test cannot see.
    """
    a = tg.colocate(np.asarray(assign, dtype=np.int64))
    if edge_comm is None:
        edge_comm = machine.comm_time(tg.nbytes.astype(np.float64)).tolist() if tg.m else []
    k, limit = machine.devices, machine.limit
    refs_of: dict[int, list[int]] = {}
    for r in np.flatnonzero(tg.kind == NodeKind.REFERENCE).tolist():
        refs_of.setdefault(int(tg.anchor[r]), []).append(r)
    comp = tg.comp.tolist()
    fixed = np.zeros(tg.n, dtype=bool)
    moved = rounds = trials = 0
    max_rounds = tg.n if max_rounds is None else max_rounds
    if trial_simulations is None:
        trial_simulations = min(400, max(24, 2_000_000 // max(tg.n, 1)))
    tried = np.zeros(tg.n, dtype=bool)  # moved by a trial: never tried again
    while True:
        out = simulate_placement(tg, a, machine)
        over = out.peak - limit
        if (over <= 0).all() or rounds >= max_rounds:
            break
        rounds += 1
        timeline = _Timeline(out, k)
        added = np.zeros(k)  # bytes moved onto each device this round
        received = out.buf_kind == 2
        copies: dict[tuple[int, int], int] = {}
        for x, t, b in zip(
            out.buf_node[received].tolist(),
            out.buf_dev[received].tolist(),
            out.buf_bytes[received].tolist(),
        ):
            copies[x, t] = copies.get((x, t), 0) + b
        progress = False
        for d in sorted(np.flatnonzero(over > 0).tolist(), key=lambda d: (-over[d], d)):
            charged = memory_potential(tg, a, out, d, timeline.peak_time(d))
            pot = {x: c[0] for x, c in charged.items()}
            group = {x: [x, *refs_of.get(x, ())] for x in pot if not fixed[x] and pot[x] > 0}

            cost = {x: _move_cost(tg, group[x], a, d, comp, edge_comm) for x in group}
            by_ratio = sorted(group, key=lambda x: (cost[x] / pot[x], x))
            # The thesis's second heap: nodes whose M_pot alone covers what is left, by cost;
            # it only grows as the overflow left shrinks (fed from a by-M_pot ordering).
            by_pot = sorted(group, key=lambda x: (-pot[x], x))
            covering: list[tuple[float, int]] = []
            taken: set[int] = set()
            remaining = float(over[d])
            ri = pi = 0
            while remaining > 0:
                while ri < len(by_ratio) and by_ratio[ri] in taken:
                    ri += 1
                if ri == len(by_ratio):
                    break
                x = by_ratio[ri]
                while pi < len(by_pot) and pot[by_pot[pi]] >= remaining:
                    heapq.heappush(covering, (cost[by_pot[pi]], by_pot[pi]))
                    pi += 1
                while covering and covering[0][1] in taken:
                    heapq.heappop(covering)
                if covering and covering[0][0] < cost[x]:
                    x = covering[0][1]
                taken.add(x)
                _, lo, hi = charged[x]
                room = [limit - added[t] - timeline.max_level(t, lo, hi) for t in range(k)]
                # A copy of x's output already on t becomes x's own buffer there: not new bytes.
                need = [pot[x] - copies.get((x, t), 0) for t in range(k)]
                target = _target(tg, a, group[x], d, need, room, edge_comm, k)
                fixed[x] = True
                if target < 0:
                    continue
                a[group[x]] = target
                added[target] += max(need[target], 0)
                remaining -= pot[x]
                moved += len(group[x])
                progress = True
        if not progress:
            if trials >= trial_simulations:
                break
            x, used = _trial_move(
                tg, a, machine, out, timeline, refs_of, tried, trial_simulations - trials
            )
            trials += used
            if x < 0:
                break
            moved += 1 + len(refs_of.get(x, ()))
    feasible = bool((out.peak <= limit).all())
    if not feasible:
        log.warning(
            "memory repair: still %d bytes over the limit after %d rounds",
            int((out.peak - limit).max()),
            rounds,
        )
    return a, {
        "feasible": feasible,
        "moved": moved,
        "rounds": rounds,
        "trials": trials,
        "peak": out.peak,
    }


def _overflow(peak: np.ndarray, limit: float) -> float:
    return float(np.maximum(peak - limit, 0).sum())


def _trial_move(
    tg: TaskGraph,
    a: np.ndarray,
    machine: Machine,
    out: SimOutcome,
    timeline: _Timeline,
    refs_of: dict[int, list[int]],
    tried: np.ndarray,
    budget: int,
    width: int = 8,
    targets: int = 3,
) -> tuple[int, int]:
    """Apply the simulated best single move lowering total overflow; returns (node or -1, sims)."""
    limit, k = machine.limit, machine.devices
    d = int(np.argmax(out.peak - limit))
    t_peak = timeline.peak_time(d)
    charged = memory_potential(tg, a, out, d, t_peak)
    comp = tg.comp
    cands = sorted(
        (x for x in charged if not tried[x]), key=lambda x: (comp[x] / charged[x][0], x)
    )[:width]
    best = (_overflow(out.peak, limit), out.makespan, -1, -1)
    sims = 0
    others = sorted(
        (t for t in range(k) if t != d), key=lambda t: (timeline.max_level(t, t_peak, t_peak), t)
    )
    for x in cands:
        members = [x, *refs_of.get(x, ())]
        for t in others[:targets]:
            if sims >= budget:
                break
            trial = a.copy()
            trial[members] = t
            o = simulate_placement(tg, trial, machine)
            sims += 1
            score = (_overflow(o.peak, limit), o.makespan, x, t)
            if score < best:
                best = score
    x, t = best[2], best[3]
    if x < 0:
        return -1, sims
    a[[x, *refs_of.get(x, ())]] = t
    tried[x] = True
    return x, sims


def _move_cost(
    tg: TaskGraph,
    members: list[int],
    a: np.ndarray,
    d: int,
    comp: list[float],
    edge_comm: list[float],
) -> float:
    """Time the move adds elsewhere: the nodes' work plus their traffic with device ``d``."""
    cost = sum(comp[v] for v in members)
    for v in members:
        for u, e in zip(tg.succs[v], tg.succ_edges[v]):
            cost += edge_comm[e] if a[u] == d else 0.0
        for u, e in zip(tg.preds[v], tg.pred_edges[v]):
            cost += edge_comm[e] if a[u] == d else 0.0
    return cost


def _target(
    tg: TaskGraph,
    a: np.ndarray,
    members: list[int],
    d: int,
    need: list[float],
    room: list[float],
    edge_comm: list[float],
    k: int,
) -> int:
    """Device (not ``d``) with room for ``need[t]`` new bytes (or needing none) that
    communicates most with ``members``; -1 when none fits."""
    talk = [0.0] * k
    for v in members:
        for u, e in zip(tg.succs[v], tg.succ_edges[v]):
            talk[a[u]] += edge_comm[e]
        for u, e in zip(tg.preds[v], tg.pred_edges[v]):
            talk[a[u]] += edge_comm[e]
    fits = [t for t in range(k) if t != d and (need[t] <= 0 or need[t] <= room[t])]
    if not fits:
        return -1
    return min(fits, key=lambda t: (need[t] - room[t] > 0, -talk[t], -room[t], t))
