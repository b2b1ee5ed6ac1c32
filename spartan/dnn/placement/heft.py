"""HEFT list scheduling (Topcuoglu 2002; TF-Mapper) with communication in rank and finish time.

Ops are taken by decreasing upward rank ``rank(n) = w̄(n) + max_s(c̄(n, s) + rank(s))``,
where ``w̄`` is the op's mean time over the devices (``comp / speed[d]`` averaged: devices may
differ in speed, as in Topcuoglu's heterogeneous processors) and ``c̄`` the expected
communication time of an edge (``(K-1)/K`` of a transfer, the chance its endpoints land on
different devices); each goes to the device on which it would finish earliest at that
device's speed, counting a transfer for every input produced on another device. With
communication in both places the result is meaningful beyond two devices *(ours, as the
spec asks)*. Reference nodes go to their anchor's device.

>>> from spartan.dnn.placement.taskgraph import TaskGraph, Machine
>>> tg = TaskGraph(list("abc"), [1.0, 4.0, 4.0], [8, 8, 8], [0, 0, 0], [(0, 1, 8), (0, 2, 8)])
>>> heft(tg, Machine(2, memory=100, link_bw=8.0, latency=0.0)).tolist()
[0, 0, 1]

On a machine whose second device is 4x faster, the transfer costs less than the time saved:

>>> heft(tg, Machine(2, memory=100, link_bw=8.0, latency=0.0, speed=(1.0, 4.0))).tolist()
[1, 1, 1]
"""

from __future__ import annotations

import numpy as np

from spartan.dnn.placement.taskgraph import Machine, NodeKind, TaskGraph

__all__ = ["upward_rank", "heft"]


def upward_rank(tg: TaskGraph, machine: Machine) -> list[float]:
    """HEFT's upward rank: mean op time over the devices, mean communication
    ``(K-1)/K * comm_time(bytes)``."""
    k = machine.devices
    cbar = (machine.comm_time(tg.nbytes.astype(np.float64)) * (k - 1) / k).tolist() if tg.m else []
    comp = (tg.comp * float(np.mean(1.0 / machine.speeds))).tolist()
    rank = [0.0] * tg.n
    for v in range(tg.n - 1, -1, -1):
        best = 0.0
        for s, e in zip(tg.succs[v], tg.succ_edges[v]):
            x = cbar[e] + rank[s]
            if x > best:
                best = x
        rank[v] = comp[v] + best
    return rank


def heft(tg: TaskGraph, machine: Machine) -> np.ndarray:
    """Place ``tg`` by HEFT (non-insertion, communication-aware); returns a device per node."""
    k = machine.devices
    comm = machine.comm_time(tg.nbytes.astype(np.float64)).tolist() if tg.m else []
    comp = tg.comp.tolist()
    inv_speed = (1.0 / machine.speeds).tolist()
    rank = upward_rank(tg, machine)
    order = sorted(range(tg.n), key=lambda v: (-rank[v], v))
    dev = [-1] * tg.n
    finish = [0.0] * tg.n
    avail = [0.0] * k
    anchor = tg.anchor.tolist()
    follower: dict[int, int] = {}  # anchor placed after its reference: it must follow it
    for v in order:
        if not all(dev[p] >= 0 for p in tg.preds[v]):
            raise ValueError("upward-rank order is not topological (negative times?)")
        forced = -1
        if tg.kind[v] == NodeKind.REFERENCE and dev[anchor[v]] >= 0:
            forced = dev[anchor[v]]
        elif v in follower:
            forced = follower[v]
        best_d, best_f = -1, float("inf")
        for d in range(k) if forced < 0 else (forced,):
            ready = 0.0
            for p, e in zip(tg.preds[v], tg.pred_edges[v]):
                t = finish[p] + (comm[e] if dev[p] != d else 0.0)
                if t > ready:
                    ready = t
            s = max(ready, avail[d])
            f = s + comp[v] * inv_speed[d]
            if f < best_f:
                best_d, best_f = d, f
        dev[v], finish[v] = best_d, best_f
        avail[best_d] = max(avail[best_d], best_f)
        if tg.kind[v] == NodeKind.REFERENCE and dev[anchor[v]] < 0:
            follower[anchor[v]] = best_d
    return tg.colocate(np.array(dev, dtype=np.int64))
