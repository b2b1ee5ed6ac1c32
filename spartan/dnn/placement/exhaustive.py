"""Exhaustive search over all placements of a small graph (ground truth for the heuristics).

When devices are identical, placements equal up to renaming devices are enumerated once
(restricted growth strings: the first movable node is on device 0 and each next node on a
device already used or the next unused one); on a heterogeneous machine (``Machine.speed``)
renaming changes the makespan, so all ``K**n`` placements are tried. The best placement
minimizes the simulated makespan among those fitting in device memory; when none fits, the
one with the smallest peak is returned.

>>> from spartan.dnn.placement.taskgraph import TaskGraph, Machine
>>> tg = TaskGraph(list("abc"), [1.0, 4.0, 4.0], [8, 8, 8], [0, 0, 0], [(0, 1, 8), (0, 2, 8)])
>>> best, info = exhaustive(tg, Machine(2, memory=100, link_bw=8.0, latency=0.0))
>>> best.tolist(), info["makespan"], info["evaluated"]
([0, 0, 1], 6.0, 4)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import numpy as np

from spartan.dnn.placement.simulate import simulate_placement
from spartan.dnn.placement.taskgraph import Machine, TaskGraph

__all__ = ["canonical_assignments", "exhaustive"]


def canonical_assignments(n: int, k: int) -> Iterator[list[int]]:
    """All length-``n`` device vectors over ``k`` devices, one per device renaming."""
    if n == 0:
        yield []
        return
    a = [0] * n
    top = [0] * n  # highest device used in a[:i + 1]

    def rec(i: int) -> Iterator[list[int]]:
        if i == n:
            yield a
            return
        for d in range(min(top[i - 1] + 2, k)):
            a[i] = d
            top[i] = max(top[i - 1], d)
            yield from rec(i + 1)

    yield from rec(1)


def exhaustive(
    tg: TaskGraph, machine: Machine, max_nodes: int = 12, max_mappings: int = 2_000_000
) -> tuple[np.ndarray, dict]:
    """Best placement by enumeration; ``info`` has its makespan, peak, feasibility, the
    number of placements evaluated and every feasible makespan (``all_makespans``)."""
    mov = tg.movable
    if len(mov) > max_nodes:
        raise ValueError(
            f"exhaustive search is for graphs of <= {max_nodes} movable nodes, got {len(mov)}"
        )
    best_key, best = None, None
    spans: list[float] = []
    count = 0
    a = np.zeros(tg.n, dtype=np.int64)
    vectors: Iterable[Iterable[int]] = (
        itertools.product(range(machine.devices), repeat=len(mov))
        if machine.heterogeneous
        else canonical_assignments(len(mov), machine.devices)
    )
    for vec in vectors:
        count += 1
        if count > max_mappings:
            raise ValueError(f"more than {max_mappings} placements; lower the device count")
        a[mov] = list(vec)
        placed = tg.colocate(a)
        out = simulate_placement(tg, placed, machine)
        feasible = out.feasible(machine)
        if feasible:
            spans.append(out.makespan)
        key = (0, out.makespan) if feasible else (1, float(out.peak.max()))
        if best_key is None or key < best_key:
            best_key, best = key, (placed, out)
    placed, out = best
    info = {
        "makespan": out.makespan,
        "peak": out.peak,
        "feasible": best_key[0] == 0,
        "evaluated": count,
        "all_makespans": np.array(spans),
    }
    return placed, info
