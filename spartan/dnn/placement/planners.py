"""One entry point for every planner: :func:`place` runs one, times it and scores it.

>>> from spartan.dnn.placement.generator import random_dnn
>>> from spartan.dnn.placement.taskgraph import Machine
>>> tg, m = random_dnn(300, seed=0), Machine(4, memory=1e12, link_bw=12e9)
>>> p = place(tg, m, "pardnn")
>>> p.method, p.feasible, p.makespan <= place(tg, m, "round_robin").makespan
('pardnn', True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from spartan.dnn.placement.baselines import (
    contiguous_split,
    random_placement,
    round_robin,
    single_device,
)
from spartan.dnn.placement.genetic import genetic
from spartan.dnn.placement.heft import heft
from spartan.dnn.placement.pardnn import pardnn
from spartan.dnn.placement.simulate import SimOutcome, simulate_placement
from spartan.dnn.placement.taskgraph import Machine, TaskGraph

__all__ = ["PLANNERS", "Placement", "place"]

PLANNERS: dict[str, Callable[..., np.ndarray]] = {
    "single": single_device,
    "round_robin": round_robin,
    "contiguous": contiguous_split,
    "random": random_placement,
    "heft": heft,
    "pardnn": pardnn,
    "genetic": genetic,
}


@dataclass(frozen=True)
class Placement:
    """A planner's device per node with its simulated step."""

    method: str
    assign: np.ndarray
    plan_seconds: float
    outcome: SimOutcome
    machine: Machine

    @property
    def makespan(self) -> float:
        return self.outcome.makespan

    @property
    def peak(self) -> np.ndarray:
        """Peak bytes per device."""
        return self.outcome.peak

    @property
    def feasible(self) -> bool:
        """Whether every device's peak fits in its memory."""
        return self.outcome.feasible(self.machine)


def place(tg: TaskGraph, machine: Machine, method: str = "pardnn", **options: object) -> Placement:
    """Run planner ``method`` (a key of :data:`PLANNERS`) with ``options`` and simulate it."""
    try:
        planner = PLANNERS[method]
    except KeyError:
        raise ValueError(
            f"unknown placement method {method!r}; choose from {sorted(PLANNERS)}"
        ) from None
    t0 = perf_counter()
    assign = planner(tg, machine, **options)
    seconds = perf_counter() - t0
    return Placement(method, assign, seconds, simulate_placement(tg, assign, machine), machine)
