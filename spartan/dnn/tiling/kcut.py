"""Tiling for 2^k devices: the k-cut recursion (Algorithm 1) and its paper-model check.

:func:`k_cuts` applies the optimal one-cut tiling, halves every tensor along its cut
(ConstructTileGraph), and recurses on the tile graph; the first cut is the one to map
onto the slowest links. :func:`k_cuts_exhaustive` minimizes the paper's total
``sum_j 2**j * delta_j`` (``Plan.paper_total``) over *every* sequence of one-cut
tilings, to test the paper's claim (Theorem 3) that the recursion is optimal *in its
own model* — it is on most graphs, not all. The recursion is a **heuristic** for the
bytes really moved (``Plan.total``): against the true k-cut optimum
(:func:`spartan.dnn.tiling.exact.joint_optimum`) it is optimal on 37/60 random small
graphs at 4 devices (gap max 38%) and 13/30 at 8 (median 8%, max 125%); see
``bench/results/dnn_tiling.md``.

>>> from spartan.dnn.zoo import mlp
>>> g = mlp(64, [32, 32, 10], loss=False, bias=False, activation=None)
>>> fixed = {"x": 0, "dfc2:out": 0}
>>> greedy = k_cuts(g, 2, fixed=fixed, unit="elements")
>>> greedy.paper_total == k_cuts_exhaustive(g, 2, fixed, "elements").paper_total
True
>>> from spartan.dnn.tiling.exact import joint_optimum
>>> joint_optimum(g, 2, fixed, "elements").total <= greedy.total
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from spartan.dnn.graph import Graph, TensorKind
from spartan.dnn.tiling.forms import REP, graph_shapes, splittable
from spartan.dnn.tiling.onecut import build_problem, one_cut
from spartan.dnn.tiling.plan import Plan, evaluate, halve


def batch_inputs(graph: Graph) -> dict[str, int]:
    """Data inputs arrive split by batch (axis 0), as SoyBean fixes ``x0`` to R."""
    return {
        name: 0
        for name, t in graph.tensors.items()
        if t.kind is TensorKind.INPUT and t.ndim and t.shape[0] >= 2
    }


def pins_for(fixed: Mapping[str, int], shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Pins for one cut; a pinned split the tile can no longer take becomes replication."""
    return {t: a if a == REP or splittable(shapes[t], a) else REP for t, a in fixed.items()}


def k_cuts(
    graph: Graph,
    k: int,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    order: str = "auto",
) -> Plan:
    """SoyBean's k-cut tiling for ``2**k`` devices (Algorithm 1): a heuristic for the
    bytes really moved (:func:`spartan.dnn.tiling.planner.plan` improves on it).

    ``fixed`` pins tensors to a split axis (or ``REP``) in every cut; None pins the data
    inputs to batch splits (:func:`batch_inputs`).
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    fixed = batch_inputs(graph) if fixed is None else dict(fixed)
    shapes = graph_shapes(graph)
    cuts, exact, tables = [], True, []
    for _ in range(k):
        res = one_cut(graph, shapes, pins_for(fixed, shapes), unit, order=order)
        cuts.append(res.tiling)
        exact &= res.exact
        tables.append(res.max_table)
        shapes = halve(shapes, res.tiling)
    plan = evaluate(graph, cuts, unit, name="soybean", exact=exact)
    plan.meta["max_table"] = tables
    return plan


def k_cuts_exhaustive(
    graph: Graph,
    k: int,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    limit: int = 200_000,
) -> Plan:
    """The cheapest sequence of ``k`` one-cut tilings *in the paper's per-cut model*
    (``Plan.paper_total``), by trying them all.

    ``OPT_k(G) = min_P delta(P, G) + 2 * OPT_{k-1}(G_P)``, memoized on tile shapes; each
    level's ``delta`` for all assignments at once is one broadcast sum of the op tables.
    ``limit`` caps the assignments of one level (small graphs only).
    """
    fixed = batch_inputs(graph) if fixed is None else dict(fixed)
    names = list(graph.tensors)

    @functools.cache
    def solve(key: tuple[tuple[int, ...], ...], depth: int) -> tuple[float, tuple]:
        if depth == 0:
            return 0.0, ()
        shapes = dict(zip(names, key))
        prob = build_problem(graph, shapes, pins_for(fixed, shapes), unit)
        doms = [prob.domains[t] for t in names]
        size = int(np.prod([len(d) for d in doms], dtype=np.float64))
        if size > limit:
            raise ValueError(f"{size} one-cut assignments exceed the exhaustive limit {limit}")
        table = np.zeros([len(d) for d in doms])
        for op in graph.ops:
            ts = prob.tensors_of[op.name]
            idx = [names.index(t) for t in ts]
            perm = sorted(range(len(ts)), key=lambda j: idx[j])
            view = [1] * len(names)
            for j in perm:
                view[idx[j]] = len(prob.domains[ts[j]])
            table = table + np.transpose(prob.tables[op.name], perm).reshape(view)
        if depth == 1:
            pos = np.unravel_index(int(np.argmin(table)), table.shape)
            return float(table[pos]), (tuple(d[p] for d, p in zip(doms, pos)),)
        best: tuple[float, tuple] | None = None
        for pos in np.ndindex(table.shape):
            tiling = {t: d[p] for t, d, p in zip(names, doms, pos)}
            sub, rest = solve(tuple(halve(shapes, tiling)[t] for t in names), depth - 1)
            total = float(table[pos]) + 2 * sub
            if best is None or total < best[0]:
                best = (total, (tuple(tiling[t] for t in names), *rest))
        assert best is not None
        return best

    _, seq = solve(tuple(graph.tensors[t].shape for t in names), k)
    cuts = [dict(zip(names, c)) for c in seq]
    return evaluate(graph, cuts, unit, name="exhaustive")
