"""Top, bottom and weighted levels of a task graph, and heaviest-path walks.

``tl(n)`` is the longest path from any entry to ``n`` excluding ``n``, ``bl(n)`` the longest
path from ``n`` (included) to any exit; path length is the sum of node times plus edge
communication times. ``tl + bl`` (the weighted level) is maximal, and equal to the critical
path length, exactly on critical-path nodes (ParDNN's slicing priority).

>>> from spartan.dnn.placement.taskgraph import TaskGraph
>>> tg = TaskGraph(list("abcd"), [1, 2, 5, 1], [0] * 4, [0] * 4, [(0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)])
>>> tl, bl = levels(tg, [0.0] * tg.m)
>>> [t + b for t, b in zip(tl, bl)], heaviest_path(tg, bl, [0.0] * tg.m, 0)
([7.0, 4.0, 7.0, 7.0], [0, 2, 3])
"""

from __future__ import annotations

from collections.abc import Sequence

from spartan.dnn.placement.taskgraph import TaskGraph

__all__ = ["levels", "heaviest_path", "critical_path"]


def levels(
    tg: TaskGraph, edge_comm: Sequence[float], alive: Sequence[bool] | None = None
) -> tuple[list[float], list[float]]:
    """Top and bottom levels over the ``alive`` nodes (all when None); O(|V| + |E|)."""
    comp = tg.comp.tolist()
    n = tg.n
    live = [True] * n if alive is None else list(alive)
    tl = [0.0] * n
    bl = [0.0] * n
    preds, pred_edges = tg.preds, tg.pred_edges
    succs, succ_edges = tg.succs, tg.succ_edges
    for v in range(n):
        if not live[v]:
            continue
        best = 0.0
        for p, e in zip(preds[v], pred_edges[v]):
            if live[p]:
                x = tl[p] + comp[p] + edge_comm[e]
                if x > best:
                    best = x
        tl[v] = best
    for v in range(n - 1, -1, -1):
        if not live[v]:
            continue
        best = 0.0
        for s, e in zip(succs[v], succ_edges[v]):
            if live[s]:
                x = edge_comm[e] + bl[s]
                if x > best:
                    best = x
        bl[v] = comp[v] + best
    return tl, bl


def heaviest_path(
    tg: TaskGraph,
    bl: Sequence[float],
    edge_comm: Sequence[float],
    start: int,
    alive: Sequence[bool] | None = None,
) -> list[int]:
    """Walk from ``start``, always to the alive successor ``s`` with the heaviest continuation
    ``comm(v, s) + bl(s)``, until a dead end (ties: lower id).

    From a critical-path entry with exact bottom levels this follows a critical path: the
    successor maximizing the continuation is exactly the one the bottom level was taken from.
    """
    path = [start]
    v = start
    succs, succ_edges = tg.succs, tg.succ_edges
    while True:
        best, best_w = -1, float("-inf")
        for s, e in zip(succs[v], succ_edges[v]):
            if alive is None or alive[s]:
                w = edge_comm[e] + bl[s]
                if w > best_w:
                    best, best_w = s, w
        if best < 0:
            return path
        path.append(best)
        v = best


def critical_path(tg: TaskGraph, edge_comm: Sequence[float]) -> tuple[list[int], float]:
    """A critical path (node ids) of the whole graph and its length."""
    if tg.n == 0:
        return [], 0.0
    tl, bl = levels(tg, edge_comm)
    wl = [t + b for t, b in zip(tl, bl)]
    length = max(wl)
    # The entry of a critical path has the largest weighted level (equal up to rounding along
    # the path) and the smallest top level.
    tol = 1e-9 * abs(length)
    start = min((v for v in range(tg.n) if wl[v] >= length - tol), key=lambda v: (tl[v], v))
    return heaviest_path(tg, bl, edge_comm, start), length
