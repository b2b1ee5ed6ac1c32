"""The tiling planner: the k-cut recursion, safeguarded by re-running it under the
parameter pins of classic strategies.

The greedy recursion (Algorithm 1) is optimal per cut but not always over all cuts
(see the Theorem-3 table in ``bench/results/dnn_tiling.md``). :func:`plan` therefore
also runs the same recursion with the parameters pinned the way data-parallel and
Megatron-style strategies place them (everything else still chosen by the DP), and
returns the cheapest; ``plan.meta["candidate"]`` says which one won.

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
from spartan.dnn.tiling.forms import REP
from spartan.dnn.tiling.kcut import batch_inputs, k_cuts
from spartan.dnn.tiling.plan import Plan


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
) -> Plan:
    """Tile ``graph`` for ``devices`` (a power of two) at minimum communication.

    ``fixed`` pins tensors (default: data inputs split by batch). With ``safeguard``
    the greedy recursion is compared with pinned re-runs (see the module docstring).
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
    name = min(candidates, key=lambda c: candidates[c].total)
    best = candidates[name]
    best.name = "soybean"
    best.meta["candidate"] = name
    best.meta["candidates"] = {c: p.total for c, p in candidates.items()}
    return best
