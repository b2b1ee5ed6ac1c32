"""A k-cut tiling plan of a graph: per-tensor tilings, communication and a breakdown.

A plan is a list of one-cut tilings of the graph, first cut first (it goes over the
slowest links). Two costs are kept:

* ``total`` — the *honest* cost: the bytes the tiling executor really moves, each op
  running its cheapest sequence of aligned forms (:mod:`spartan.dnn.tiling.exact`);
  ``level_bytes[j]`` splits it by the link level (first differing device bit) it uses;
* ``paper_total`` — SoyBean's model (Theorem 1): cut ``j`` tiles the *tile graph* left
  by cuts ``0..j-1`` and is paid by ``2**j`` device groups, ``sum_j 2**j * delta_j``.
  Equal to ``total`` for one cut; below it at deeper cuts when a later cut replicates
  or reduces what an earlier one converted (see :mod:`spartan.dnn.tiling.exact`).

>>> from spartan.dnn.zoo import mlp
>>> g = mlp(400, [300] * 4, activation=None, bias=False, loss=False)
>>> data = {t: REP if g.tensors[t].kind.value == "param" else 0 for t in g.tensors}
>>> p = evaluate(g, [data], unit="elements")
>>> p.total, p.paper_total
(540000.0, 540000.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from spartan.dnn.graph import Graph
from spartan.dnn.hardware import Accelerator, op_time
from spartan.dnn.tiling.exact import costing_for, cuts_to_homes
from spartan.dnn.tiling.forms import REP, Form, Shapes, graph_shapes, matrix_name, tiling_name
from spartan.dnn.tiling.onecut import build_problem


def halve(shapes: Shapes, tiling: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Tile shapes after one cut: each split tensor halves along its split axis."""
    out = {}
    for t, s in shapes.items():
        a = tiling.get(t, REP)
        out[t] = s if a == REP else tuple(n // 2 if i == a else n for i, n in enumerate(s))
    return out


@dataclass
class Plan:
    """Tilings per cut, each cut's cost ``deltas`` and each op's cost and form per cut."""

    graph: Graph
    cuts: list[dict[str, int]]
    deltas: list[float]
    op_costs: list[dict[str, float]]
    forms: list[dict[str, Form]]
    unit: str = "bytes"
    name: str = "plan"
    exact: bool = True
    meta: dict = field(default_factory=dict)
    level_bytes: list[float] = field(default_factory=list)
    op_moved: dict[str, float] = field(default_factory=dict)

    @property
    def devices(self) -> int:
        return 2 ** len(self.cuts)

    @property
    def total(self) -> float:
        """Communication per iteration over all devices, as the executor moves it."""
        return float(sum(self.level_bytes))

    @property
    def paper_total(self) -> float:
        """SoyBean's per-cut model (Theorem 1): ``sum_j 2**j * delta_j``."""
        return sum(2**j * d for j, d in enumerate(self.deltas))

    def tiling(self, tensor: str) -> str:
        """The tensor's cut sequence, e.g. ``"R r C"`` for a matrix or ``"P0 P0 r"``."""
        name = matrix_name if self.graph.tensors[tensor].ndim == 2 else tiling_name
        return " ".join(name(c[tensor]) for c in self.cuts) or "-"

    def pieces(self, tensor: str) -> tuple[tuple[int, ...], int]:
        """Flattened tiling (Theorem 2): pieces per axis and number of replicas."""
        nd = self.graph.tensors[tensor].ndim
        pieces, replicas = [1] * nd, 1
        for c in self.cuts:
            a = c[tensor]
            if a == REP:
                replicas *= 2
            else:
                pieces[a] *= 2
        return tuple(pieces), replicas

    def breakdown(self) -> dict[str, float]:
        """Communication per op (honest: it sums to :attr:`total`)."""
        return dict(self.op_moved)

    def shapes(self, cut: int) -> dict[str, tuple[int, ...]]:
        """Tile shapes seen by cut ``cut`` (0 = the full graph)."""
        s = graph_shapes(self.graph)
        for c in self.cuts[:cut]:
            s = halve(s, c)
        return s

    def step_time(self, accel: Accelerator, link_bw: float | Sequence[float] | None = None) -> dict:
        """Estimated seconds per training step on ``devices`` copies of ``accel``.

        Compute is the roofline time of the whole graph split evenly (aligned forms do no
        redundant work); the bytes crossing link level ``j`` (:attr:`level_bytes`) are
        spread over all devices, each sending at ``link_bw[j]`` (default
        ``accel.link_bw``); no overlap of the two is assumed.
        """
        if self.unit != "bytes":
            raise ValueError("step_time needs a plan costed in bytes")
        bws = [link_bw] * len(self.cuts) if not isinstance(link_bw, Sequence) else list(link_bw)
        bws = [accel.link_bw if b is None else b for b in bws]
        compute = sum(op_time(op, self.graph, accel) for op in self.graph.ops) / self.devices
        comm = sum(b / (self.devices * bw) for b, bw in zip(self.level_bytes, bws))
        return {"compute_s": compute, "comm_s": comm, "step_s": compute + comm}

    def summary(self, top: int = 8) -> str:
        """A readable report: totals, per-cut costs, largest tensors' tilings, top ops."""
        unit = "B" if self.unit == "bytes" else "elem"
        lines = [
            f"{self.name}: {self.graph.name} on {self.devices} devices, "
            f"{self.total:,.0f} {unit}/iteration{'' if self.exact else ' (inexact)'}",
            "  per link level: " + ", ".join(f"{b:,.0f}" for b in self.level_bytes),
            f"  paper model: {self.paper_total:,.0f} "
            + "("
            + ", ".join(f"δ{j + 1}={d:,.0f}" for j, d in enumerate(self.deltas))
            + ")",
        ]
        big = sorted(self.graph.tensors.values(), key=lambda t: -t.nbytes)[:top]
        lines.append("  largest tensors:")
        lines += [f"    {t.name:<28} {str(t.shape):<22} {self.tiling(t.name)}" for t in big]
        costs = sorted(self.breakdown().items(), key=lambda kv: -kv[1])[:top]
        lines.append("  costliest ops:")
        lines += [f"    {op:<28} {c:>16,.0f} {unit}" for op, c in costs if c > 0]
        return "\n".join(lines)


def evaluate(
    graph: Graph,
    cuts: Sequence[Mapping[str, int]],
    unit: str = "bytes",
    name: str = "plan",
    exact: bool = True,
    local_inputs: bool = False,
) -> Plan:
    """Cost a given sequence of one-cut tilings (a baseline, or a planner's result).

    Each op takes its cheapest sequence of aligned forms for the given tilings under the
    honest cost (with ``local_inputs``, the cheapest among those that leave its inputs
    where they are, if any); ``plan.forms`` holds that sequence, which the executor
    runs. ``deltas``/``op_costs`` are the paper's per-cut costs (each cut's cheapest form
    on the tile graph). A tensor missing from a cut is replicated in it.
    """
    shapes = graph_shapes(graph)
    full_cuts, deltas, op_costs, forms = [], [], [], []
    for cut in cuts:
        tiling = {t: cut.get(t, REP) for t in graph.tensors}
        for t, a in tiling.items():
            if a != REP and not (0 <= a < len(shapes[t]) and shapes[t][a] % 2 == 0):
                raise ValueError(f"{name}: {t!r} of tile shape {shapes[t]} cannot split axis {a}")
        prob = build_problem(graph, shapes, unit=unit, tables=False)
        costs, chosen = {}, {}
        for op in graph.ops:
            costs[op.name], chosen[op.name] = prob.op_cost(op, tiling, local_inputs)
        full_cuts.append(tiling)
        deltas.append(sum(costs.values()))
        op_costs.append(costs)
        forms.append(chosen)
        shapes = halve(shapes, tiling)
    costing = costing_for(graph, len(full_cuts), unit)
    homes = cuts_to_homes(graph, full_cuts)
    levels = np.zeros(len(full_cuts))
    op_moved = {}
    for op in graph.ops:
        cost, seq = costing.op_choice(op, homes, local_inputs)
        levels += cost
        op_moved[op.name] = float(cost.sum())
        for j, f in enumerate(seq):
            forms[j][op.name] = f
    plan = Plan(graph, full_cuts, deltas, op_costs, forms, unit, name, exact)
    plan.level_bytes = [float(x) for x in levels]
    plan.op_moved = op_moved
    return plan
