"""Baseline placements: one device, round-robin, compute-balanced contiguous split, random.

All return a device per node with reference nodes on their anchor's device.

>>> from spartan.dnn.placement.generator import random_dnn
>>> from spartan.dnn.placement.taskgraph import Machine
>>> tg, m = random_dnn(100, seed=0), Machine(3, memory=1e12, link_bw=1e10)
>>> sorted(set(round_robin(tg, m).tolist())), sorted(set(single_device(tg, m).tolist()))
([0, 1, 2], [0])
"""

from __future__ import annotations

import numpy as np

from spartan.dnn.placement.taskgraph import Machine, TaskGraph

__all__ = ["single_device", "round_robin", "contiguous_split", "random_placement"]


def single_device(tg: TaskGraph, machine: Machine) -> np.ndarray:
    """Everything on device 0 (infeasible when it overflows)."""
    return np.zeros(tg.n, dtype=np.int64)


def round_robin(tg: TaskGraph, machine: Machine) -> np.ndarray:
    """Movable nodes dealt to devices in turn, in topological order (ParDNN's RR baseline)."""
    a = np.zeros(tg.n, dtype=np.int64)
    mov = tg.movable
    a[mov] = np.arange(len(mov)) % machine.devices
    return tg.colocate(a)


def contiguous_split(tg: TaskGraph, machine: Machine) -> np.ndarray:
    """The topological order cut into ``K`` consecutive pieces of equal compute time."""
    k = machine.devices
    total = tg.comp.sum()
    if total <= 0:
        return tg.colocate(np.minimum(np.arange(tg.n) * k // max(tg.n, 1), k - 1))
    before = np.cumsum(tg.comp) - tg.comp  # work before each node
    a = np.minimum((before / total * k).astype(np.int64), k - 1)
    return tg.colocate(a)


def random_placement(tg: TaskGraph, machine: Machine, seed: int = 0) -> np.ndarray:
    """Every movable node on a uniformly random device (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    return tg.colocate(rng.integers(0, machine.devices, tg.n))
