"""Plans SwapAdvisor is compared with, all on the graph's own (framework default) order.

Every baseline runs on the same allocator model as SwapAdvisor's plans: a size-class
pool (:meth:`PoolModel.demand`: one class per tensor size, objects in proportion to each
size's peak live count, cut to fit the device), so a comparison measures the policy, not
an allocator that never fragments. ``odswap_byte_budget`` keeps the idealized allocator
(one byte budget, no fragmentation) to show what the allocator model itself costs.

* ``ideal``: infinite device memory, no copies; time = sum of op times.
* ``odswap``: on-demand swapping with LRU eviction, with the prefetching it learns from
  the first iteration (the steady-state plan).
* ``vdnn``: parameters and optimizer state stay resident; every forward activation needed
  by the backward pass is copied out after its last forward use and prefetched back.
* ``tflms``: parameters and optimizer state never swap; other tensors swap on demand (LRU).
* ``best_random``: the best of N random (schedule, allocation) samples.

All but ``ideal`` raise :class:`InfeasiblePlan` when no pool fits (``vdnn``/``tflms``
also when the parameters alone do not).

>>> from spartan.dnn.swap.worked_examples import figure1_workload
>>> wl = figure1_workload()
>>> ideal(wl).iteration_time(), odswap(wl).iteration_time() >= 6.0
(6.0, True)
"""

from __future__ import annotations

import math
import random

from spartan.dnn.swap.genetic import Chromosome, evaluate, mutate_schedule
from spartan.dnn.swap.plan import COMPUTE, InfeasiblePlan, SwapPlan
from spartan.dnn.swap.planner import Eviction, plan_swaps
from spartan.dnn.swap.pool import Allocation, PoolModel
from spartan.dnn.swap.workload import Workload

__all__ = [
    "ideal",
    "demand_pool",
    "odswap",
    "odswap_byte_budget",
    "vdnn",
    "tflms",
    "best_random",
    "BASELINES",
]


def ideal(workload: Workload) -> SwapPlan:
    """Every tensor resident, no copies."""
    plan = SwapPlan(workload, workload.default_schedule(), label="ideal")
    for op in plan.schedule:
        plan.add(COMPUTE, op, [], workload.durations[op])
    return plan


def demand_pool(workload: Workload) -> Allocation:
    """The on-demand allocator's pool on the graph's order (see :meth:`PoolModel.demand`)."""
    alloc = PoolModel(workload).demand(workload.default_schedule())
    if alloc is None:
        raise InfeasiblePlan(
            f"no pool fits {workload.capacity:.4g} B: some op's tensors alone need more"
        )
    return alloc


def odswap(workload: Workload) -> SwapPlan:
    """On-demand LRU swapping with learned prefetch (paper's ODSwap), on the same
    size-class allocator model as SwapAdvisor."""
    return plan_swaps(
        workload,
        workload.default_schedule(),
        demand_pool(workload),
        eviction="lru",
        label="ODSwap",
    )


def odswap_byte_budget(workload: Workload) -> SwapPlan:
    """ODSwap with an idealized allocator: one byte budget, no fragmentation or rounding
    (what the earlier comparison used; kept to measure the allocator model's cost)."""
    return plan_swaps(
        workload,
        workload.default_schedule(),
        workload.capacity,
        eviction="lru",
        label="ODSwap (byte budget)",
    )


def _persistent(workload: Workload) -> set[int]:
    return {t for t in range(workload.n_tensors) if workload.persistent[t]}


def vdnn(workload: Workload) -> SwapPlan:
    """Swap all activations out after the forward pass, keep parameters resident."""
    acts = {t for t in range(workload.n_tensors) if workload.activation[t]}
    return plan_swaps(
        workload,
        workload.default_schedule(),
        demand_pool(workload),
        eviction="lru",
        pinned=_persistent(workload),
        offload=acts,
        label="vDNN-like",
    )


def tflms(workload: Workload) -> SwapPlan:
    """Never swap parameters; swap other tensors on demand."""
    return plan_swaps(
        workload,
        workload.default_schedule(),
        demand_pool(workload),
        eviction="lru",
        pinned=_persistent(workload),
        label="TFLMS-like",
    )


def best_random(workload: Workload, samples: int, seed: int = 0) -> tuple[Chromosome, float]:
    """Best of ``samples`` random chromosomes (random topological order, pool and
    eviction rule: the genetic search's random individual)."""
    rng = random.Random(seed)
    pm = PoolModel(workload)
    rules: tuple[Eviction, ...] = ("belady", "lru")
    best, best_t = None, math.inf
    for _ in range(samples):
        alloc = pm.random(rng)
        if alloc is None:
            continue
        c = Chromosome(
            tuple(
                mutate_schedule(
                    workload.default_schedule(), workload.op_preds, workload.op_succs, 1.0, rng
                )
            ),
            alloc,
            rng.choice(rules),
        )
        t = evaluate(workload, c)
        if t < best_t:
            best, best_t = c, t
    if best is None:
        raise ValueError("no random sample fits the device")
    return best, best_t


BASELINES = {"ideal": ideal, "ODSwap": odswap, "vDNN-like": vdnn, "TFLMS-like": tflms}
