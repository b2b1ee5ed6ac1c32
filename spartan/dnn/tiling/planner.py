"""The tiling planner: the k-cut recursion, safeguarded, then improved by local search
(or solved exactly by the joint DP on small graphs), all under the honest cost.

The k-cut recursion (Algorithm 1) is optimal per cut but is a **heuristic** over all
cuts: against the true k-cut optimum (:func:`~spartan.dnn.tiling.exact.joint_optimum`)
it is optimal on 37/60 random small graphs at 4 devices (gap median 0%, max 38%) and on
13/30 at 8 (median 8%, max 125%) (``bench/results/dnn_tiling.md``; e.g. a 2-layer
32-wide MLP on 4 devices: 10,496 elements vs 9,216), because it minimizes the paper's
per-cut model, which undercounts the bytes moved at 4+ devices. :func:`plan` therefore

1. runs the recursion and re-runs it with the parameters pinned the way data-parallel
   and Megatron-style strategies place them (everything else still chosen by the DP);
2. costs each candidate honestly (the executor's bytes) and descends from the cheapest
   by changing one tensor's tiling at one cut level at a time
   (:func:`~spartan.dnn.tiling.exact.improve`);
3. where the joint problem is small (every op table at most ``joint_limit`` entries),
   also solves it exactly and keeps the better plan.

``plan.meta["candidate"]`` names the winner (``greedy``, ``params-replicated``,
``megatron-pins``, each ``+search`` when local search improved it, or ``joint``);
``plan.meta["candidates"]`` holds every candidate's honest total.

>>> from spartan.dnn.zoo import mlp
>>> p = plan(mlp(64, [256, 256, 10]), 4)
>>> p.devices, p.name
(4, 'soybean')
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from spartan.dnn.graph import Graph
from spartan.dnn.tiling.baselines import megatron, param_of
from spartan.dnn.tiling.exact import (
    cuts_to_homes,
    homes_to_cuts,
    improve,
    joint_optimum,
    joint_size,
)
from spartan.dnn.tiling.forms import REP
from spartan.dnn.tiling.kcut import batch_inputs, k_cuts
from spartan.dnn.tiling.plan import Plan, evaluate


def cuts_for(devices: int) -> int:
    """``k`` with ``2**k == devices``."""
    k = int(math.log2(devices)) if devices >= 1 else -1
    if devices < 1 or 2**k != devices:
        raise ValueError(f"devices must be a power of two, got {devices}")
    return k


def plan(
    graph: Graph,
    devices: int,
    fixed: Mapping[str, int] | None = None,
    unit: str = "bytes",
    safeguard: bool = True,
    search: bool = True,
    joint_limit: int = 20_000,
) -> Plan:
    """Tile ``graph`` for ``devices`` (a power of two) at minimum communication.

    ``fixed`` pins tensors (default: data inputs split by batch). With ``safeguard``
    the greedy recursion is compared with pinned re-runs; with ``search`` the cheapest
    is improved by local search and, on small graphs, compared with the exact joint
    optimum (see the module docstring). ``safeguard=False, search=False`` is the plain
    recursion (Algorithm 1).
    """
    k = cuts_for(devices)
    base = batch_inputs(graph) if fixed is None else dict(fixed)
    candidates = {"greedy": k_cuts(graph, k, base, unit)}
    if safeguard and k > 1:
        replicated = dict(base)
        for t, p in param_of(graph).items():
            if graph.tensors[t].kind is not graph.tensors[p].kind.GRADIENT:
                replicated.setdefault(t, REP)
        candidates["params-replicated"] = k_cuts(graph, k, replicated, unit)
        candidates["megatron-pins"] = megatron(graph, k, unit, base)
    if search and k > 1:
        start = min(candidates, key=lambda c: candidates[c].total)
        homes, moves = improve(graph, cuts_to_homes(graph, candidates[start].cuts), k, base, unit)
        if moves:
            candidates[f"{start}+search"] = evaluate(graph, homes_to_cuts(graph, homes, k), unit)
        if joint_size(graph, k, base) <= joint_limit:
            candidates["joint"] = joint_optimum(graph, k, base, unit)
    name = min(candidates, key=lambda c: candidates[c].total)
    best = candidates[name]
    best.name = "soybean"
    best.meta["candidate"] = name
    best.meta["candidates"] = {c: p.total for c, p in candidates.items()}
    return best
