"""The one-cut problem: tile every tensor for two devices at minimum communication.

Each op contributes a cost table over the one-cut tilings of its tensors: the cheapest
aligned form after converting inputs to it and its outputs from it (SoyBean Eq. 2).
:func:`one_cut` minimizes the sum with the paper's DP over BFS levels (Eq. 4-5): ops are
visited level by level and a tensor is minimized out as soon as its last op is seen, so
the DP state after level ``l`` is exactly the tilings of the tensors shared with level
``l+1`` (τ_l). :func:`one_cut_exhaustive` enumerates every assignment (small graphs).

>>> from spartan.dnn.zoo import mlp
>>> g = mlp(400, [300] * 4, activation=None, bias=False, loss=False)
>>> fixed = {"x": 0, "dfc3:out": 0}
>>> one_cut(g, fixed=fixed, unit="elements").cost
540000.0
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from spartan.dnn.graph import Graph, Op
from spartan.dnn.tiling.forms import REP, Form, Shapes, aligned_forms, conversion, graph_shapes

MAX_TABLE = 1 << 22
"""Largest DP table (entries) before the solver conditions the widest frontier tensor on
its current best value and marks the result inexact."""

UNITS = ("bytes", "elements")


@dataclass
class Problem:
    """The one-cut problem of a (tile) graph: per-tensor domains and per-op cost tables."""

    graph: Graph
    shapes: dict[str, tuple[int, ...]]
    unit: str
    domains: dict[str, tuple[int, ...]]
    forms: dict[str, list[Form]]
    tensors_of: dict[str, tuple[str, ...]]  # op -> its distinct tensors (table axes)
    tables: dict[str, np.ndarray] = field(default_factory=dict)

    weights: dict[str, float] = field(default_factory=dict)

    def exhaustive(self, limit: int) -> tuple[dict[str, int], float, int]:
        """Every assignment scored at once (the broadcast sum of all op tables over the
        tensors ops touch): the cheapest as a domain index per tensor, its cost, and how
        many assignments there were (ValueError past ``limit``)."""
        names = [t for t in self.graph.tensors if any(t in ts for ts in self.tensors_of.values())]
        dims = [len(self.domains[t]) for t in names]
        count = math.prod(dims)
        if count > limit:
            raise ValueError(f"{count} assignments exceed the exhaustive limit {limit}")
        total = np.zeros(dims)
        for op in self.graph.ops:
            ts = self.tensors_of[op.name]
            idx = [names.index(t) for t in ts]
            perm = sorted(range(len(ts)), key=lambda j: idx[j])
            view = [1] * len(names)
            for j in perm:
                view[idx[j]] = dims[idx[j]]
            total = total + np.transpose(self.tables[op.name], perm).reshape(view)
        pos = np.unravel_index(int(np.argmin(total)), total.shape)
        return dict(zip(names, map(int, pos))), float(total[pos]), count

    def weight(self, tensor: str) -> float:
        """Cost of moving the whole (tile of the) tensor once, in the problem's unit."""
        w = self.weights.get(tensor)
        if w is None:
            n = float(math.prod(self.shapes[tensor]))
            w = n * self.graph.tensors[tensor].itemsize if self.unit == "bytes" else n
            self.weights[tensor] = w
        return w

    def op_cost(
        self, op: Op, tiling: Mapping[str, int], local_inputs: bool = False
    ) -> tuple[float, Form]:
        """The cheapest aligned form of ``op`` for the given tensor tilings, and its cost.

        ``local_inputs`` prefers forms that compute on the inputs where they lie (no input
        conversion) when one exists: how a fixed strategy such as data parallelism runs,
        reducing weight gradients instead of regathering activations.
        """
        best: tuple[tuple[bool, float], Form] | None = None
        for f in self.forms[op.name]:
            moved_in = sum(
                conversion(tiling[t], want, self.weight(t)) for t, want in zip(op.inputs, f.ins)
            )
            out = sum(
                conversion(got, tiling[t], self.weight(t)) for t, got in zip(op.outputs, f.outs)
            )
            key = (local_inputs and moved_in > 0, moved_in + out)
            if best is None or key < best[0]:
                best = (key, f)
        assert best is not None
        return best[0][1], best[1]

    def cost(self, tiling: Mapping[str, int]) -> float:
        return sum(self.op_cost(op, tiling)[0] for op in self.graph.ops)


def build_problem(
    graph: Graph,
    shapes: Shapes | None = None,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    tables: bool = True,
) -> Problem:
    """Aligned forms, tensor domains and (with ``tables``) cost tables for one cut.

    A tensor's domain is ``r`` plus every split its ops' forms use: a split no form uses
    is never better than one some form uses, so the smaller domain keeps the optimum.
    ``fixed`` pins tensors to one tiling.
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    shapes = dict(shapes) if shapes is not None else graph_shapes(graph)
    fixed = dict(fixed or {})
    forms = {op.name: aligned_forms(op, shapes) for op in graph.ops}
    used: dict[str, set[int]] = {name: {REP} for name in graph.tensors}
    for op in graph.ops:
        for f in forms[op.name]:
            for t, v in zip((*op.inputs, *op.outputs), (*f.ins, *f.outs)):
                if v >= 0:
                    used[t].add(v)
    for t, v in fixed.items():
        if t not in graph.tensors:
            raise KeyError(f"fixed tiling for unknown tensor {t!r}")
        if v != REP and not (
            0 <= v < len(shapes[t]) and shapes[t][v] % 2 == 0 and shapes[t][v] >= 2
        ):
            raise ValueError(f"cannot fix {t!r} {shapes[t]} to split axis {v}")
    domains = {
        t: (fixed[t],) if t in fixed else tuple(sorted(vals, key=lambda v: (v == REP, v)))
        for t, vals in used.items()
    }
    prob = Problem(graph, shapes, unit, domains, forms, {})
    for op in graph.ops:
        ts = tuple(dict.fromkeys((*op.inputs, *op.outputs)))
        prob.tensors_of[op.name] = ts
        if tables:
            prob.tables[op.name] = _op_table(prob, op, ts)
    return prob


def _op_table(prob: Problem, op: Op, ts: tuple[str, ...]) -> np.ndarray:
    """Cost of ``op`` for every combination of its tensors' tilings (min over forms)."""
    axis = {t: i for i, t in enumerate(ts)}
    shape = tuple(len(prob.domains[t]) for t in ts)
    best = np.full(shape, np.inf)
    for f in prob.forms[op.name]:
        total = np.zeros(shape)
        for role, names, wants in (("in", op.inputs, f.ins), ("out", op.outputs, f.outs)):
            for t, want in zip(names, wants):
                w = prob.weight(t)
                vec = [
                    conversion(v, want, w) if role == "in" else conversion(want, v, w)
                    for v in prob.domains[t]
                ]
                view = [1] * len(ts)
                view[axis[t]] = len(vec)
                total = total + np.asarray(vec).reshape(view)
        best = np.minimum(best, total)
    return best


def bfs_order(graph: Graph) -> list[list[Op]]:
    """BFS levels of the undirected op graph (ops adjacent when they share a tensor)."""
    touching: dict[str, list[Op]] = {t: [] for t in graph.tensors}
    for op in graph.ops:
        for t in dict.fromkeys((*op.inputs, *op.outputs)):
            touching[t].append(op)
    level: dict[str, int] = {}
    levels: list[list[Op]] = []
    for start in graph.ops:
        if start.name in level:
            continue
        base = len(levels)
        level[start.name] = base
        queue = deque([start])
        while queue:
            op = queue.popleft()
            lv = level[op.name]
            while len(levels) <= lv:
                levels.append([])
            levels[lv].append(op)
            for t in dict.fromkeys((*op.inputs, *op.outputs)):
                for nb in touching[t]:
                    if nb.name not in level:
                        level[nb.name] = lv + 1
                        queue.append(nb)
    pos = {o.name: i for i, o in enumerate(graph.ops)}
    return [sorted(lv, key=lambda o: pos[o.name]) for lv in levels]


@dataclass
class OneCut:
    """A one-cut tiling of every tensor and its total cost.

    ``exact`` is False when a DP table would have exceeded :data:`MAX_TABLE` entries and a
    tensor was pinned to a default tiling; ``max_table`` is the largest table built;
    ``order`` the elimination order used (``"bfs"`` or ``"minfill"``).
    """

    tiling: dict[str, int]
    cost: float
    exact: bool = True
    max_table: int = 0
    order: str = "bfs"


def bfs_elimination(prob: Problem) -> list[str]:
    """Tensors in the order the level DP minimizes them out: when their last op (in BFS
    level order) has been added."""
    last: dict[str, int] = {}
    for i, op in enumerate(op for lv in bfs_order(prob.graph) for op in lv):
        for t in prob.tensors_of[op.name]:
            last[t] = i
    return sorted(last, key=lambda t: last[t])


def minfill_elimination(prob: Problem) -> list[str]:
    """Greedy elimination order: always the tensor whose joined table is smallest
    (product of its and its neighbours' domain sizes), a standard tree-width heuristic."""
    nbrs: dict[str, set[str]] = {}
    for ts in prob.tensors_of.values():
        for t in ts:
            nbrs.setdefault(t, set()).update(ts)
    for t in nbrs:
        nbrs[t].discard(t)
    size = {t: len(prob.domains[t]) for t in nbrs}

    def score(t: str) -> float:
        return float(np.prod([size[u] for u in nbrs[t]], dtype=np.float64)) * size[t]

    heap = [(score(t), t) for t in nbrs]
    heapq.heapify(heap)
    done: set[str] = set()
    order = []
    while heap:
        sc, t = heapq.heappop(heap)
        if t in done or sc != score(t):
            if t not in done:
                heapq.heappush(heap, (score(t), t))
            continue
        done.add(t)
        order.append(t)
        ns = nbrs.pop(t)
        for u in ns:
            nbrs[u].discard(t)
            nbrs[u].update(ns - {u})
        for u in ns:
            heapq.heappush(heap, (score(u), u))
    return order


def _widest(prob: Problem, order: list[str]) -> float:
    """Largest table bucket elimination in ``order`` would build (symbolic run)."""
    nbrs: dict[str, set[str]] = {}
    for ts in prob.tensors_of.values():
        for t in ts:
            nbrs.setdefault(t, set()).update(ts)
    widest = 0.0
    for t in order:
        ns = nbrs.pop(t) - {t}
        widest = max(
            widest, float(np.prod([len(prob.domains[u]) for u in ns | {t}], dtype=np.float64))
        )
        for u in ns:
            nbrs[u].discard(t)
            nbrs[u].update(ns - {u})
    return widest


def one_cut(
    graph: Graph,
    shapes: Shapes | None = None,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    problem: Problem | None = None,
    order: str = "auto",
) -> OneCut:
    """Optimal one-cut tiling by dynamic programming (bucket elimination).

    ``order="bfs"`` minimizes tensors out in the paper's BFS-level order (Eq. 4-5);
    ``"minfill"`` uses a tree-width heuristic, which keeps tables small on graphs with
    wide levels (ResNet, Inception, Transformers); ``"auto"`` takes whichever builds the
    smaller largest table. Exact unless a table would exceed :data:`MAX_TABLE` entries.
    """
    prob = problem or build_problem(graph, shapes, fixed, unit)
    if order not in ("auto", "bfs", "minfill"):
        raise ValueError(f"order must be 'auto', 'bfs' or 'minfill', got {order!r}")
    orders = {}
    if order in ("auto", "bfs"):
        orders["bfs"] = bfs_elimination(prob)
    if order in ("auto", "minfill"):
        orders["minfill"] = minfill_elimination(prob)
    name = min(orders, key=lambda k: _widest(prob, orders[k]))
    return _eliminate(prob, orders[name], name)


def _default(prob: Problem, t: str) -> int:
    """Index of the tiling a pinned tensor takes: batch split when possible."""
    dom = prob.domains[t]
    return dom.index(0) if 0 in dom else 0


def _eliminate(prob: Problem, order: list[str], name: str) -> OneCut:
    factors: dict[int, tuple[tuple[str, ...], np.ndarray]] = {}
    holding: dict[str, set[int]] = {}
    for i, op in enumerate(prob.graph.ops):
        ts = prob.tensors_of[op.name]
        factors[i] = (ts, prob.tables[op.name])
        for t in ts:
            holding.setdefault(t, set()).add(i)
    next_id = len(factors)
    constant = 0.0
    pinned: dict[str, int] = {}
    trace: list[tuple[str, tuple[str, ...], np.ndarray]] = []
    exact, widest = True, 1

    def pin(t: str) -> None:
        nonlocal next_id
        idx = _default(prob, t)
        pinned[t] = idx
        for fid in holding.pop(t, set()):
            vs, tab = factors.pop(fid)
            ax = vs.index(t)
            nv = vs[:ax] + vs[ax + 1 :]
            for u in nv:
                holding[u].discard(fid)
            factors[next_id] = (nv, np.take(tab, idx, axis=ax))
            for u in nv:
                holding[u].add(next_id)
            next_id += 1

    for t in order:
        if t in pinned:
            continue
        while True:
            fids = holding.get(t, set())
            union = tuple(dict.fromkeys(u for fid in fids for u in factors[fid][0]))
            entries = int(np.prod([len(prob.domains[u]) for u in union], dtype=np.float64))
            if entries <= MAX_TABLE:
                break
            victim = max((u for u in union if u != t), key=lambda u: len(prob.domains[u]))
            pin(victim)
            exact = False
        widest = max(widest, entries)
        joined = np.zeros([len(prob.domains[u]) for u in union])
        for fid in fids:
            vs, tab = factors.pop(fid)
            perm = sorted(range(len(vs)), key=lambda k: union.index(vs[k]))
            view = [1] * len(union)
            for k in perm:
                view[union.index(vs[k])] = tab.shape[k]
            joined = joined + np.transpose(tab, perm).reshape(view)
            for u in vs:
                if u != t:
                    holding[u].discard(fid)
        holding.pop(t, None)
        ax = union.index(t)
        rest = union[:ax] + union[ax + 1 :]
        trace.append((t, rest, np.argmin(joined, axis=ax)))
        reduced = np.min(joined, axis=ax)
        if rest:
            factors[next_id] = (rest, reduced)
            for u in rest:
                holding[u].add(next_id)
            next_id += 1
        else:
            constant += float(reduced)
    for _, tab in factors.values():  # only constants remain
        constant += float(tab)
    pos = dict(pinned)
    for t, rest, arg in reversed(trace):
        pos[t] = int(arg[tuple(pos[u] for u in rest)])
    tiling = {t: prob.domains[t][p] for t, p in pos.items()}
    for t in prob.graph.tensors:  # tensors no op touches stay replicated
        tiling.setdefault(t, REP)
    cost = prob.cost(tiling) if not exact else constant
    return OneCut(tiling, cost, exact, widest, name)


def one_cut_exhaustive(
    graph: Graph,
    shapes: Shapes | None = None,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    limit: int = 2_000_000,
) -> OneCut:
    """Optimal one-cut tiling by scoring every assignment at once: the broadcast sum of
    all op tables over all tensors (``limit`` caps the number of assignments)."""
    prob = build_problem(graph, shapes, fixed, unit)
    best, cost, count = prob.exhaustive(limit)
    tiling = {t: prob.domains[t][p] for t, p in best.items()}
    for t in graph.tensors:
        tiling.setdefault(t, REP)
    return OneCut(tiling, cost, True, count, "exhaustive")
