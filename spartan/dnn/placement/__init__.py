"""Placement planners: which device runs each operation of a DNN training step.

ParDNN (slicing, level-aware mapping, refinements, memory repair), HEFT with communication, a
genetic mapper (optionally on a learned surrogate), baselines and exhaustive search, all scored
by one multi-device event simulation; plus a random DNN-like graph generator and execution of a
placed step on spartan workers (:mod:`spartan.dnn.placement.execute`).

>>> from spartan.dnn.placement import Machine, place, random_dnn
>>> p = place(random_dnn(200, seed=0), Machine(2, memory=1e12, link_bw=12e9), "heft")
>>> p.assign.shape, p.feasible
((184,), True)
"""

from spartan.dnn.placement.baselines import (
    contiguous_split,
    random_placement,
    round_robin,
    single_device,
)
from spartan.dnn.placement.exhaustive import exhaustive
from spartan.dnn.placement.generator import random_dnn
from spartan.dnn.placement.genetic import genetic, initial_mappings
from spartan.dnn.placement.heft import heft
from spartan.dnn.placement.pardnn import pardnn
from spartan.dnn.placement.planners import PLANNERS, Placement, place
from spartan.dnn.placement.simulate import SimOutcome, simulate_placement, to_tasks
from spartan.dnn.placement.taskgraph import Machine, NodeKind, TaskGraph

__all__ = [
    "Machine",
    "NodeKind",
    "PLANNERS",
    "Placement",
    "SimOutcome",
    "TaskGraph",
    "contiguous_split",
    "exhaustive",
    "genetic",
    "heft",
    "initial_mappings",
    "pardnn",
    "place",
    "random_dnn",
    "random_placement",
    "round_robin",
    "simulate_placement",
    "single_device",
    "to_tasks",
]
