"""Genetic-algorithm mapper over op→device vectors (HTF-MPR, Albaqsami 2019).

The population starts from the thesis's initial mappings (every op on one device, the longest
path on one device and the rest spread over the others, a random path likewise, a graph
coloring that puts neighbours on different devices), any ``seeds`` given (e.g. HEFT's result),
and random vectors. Each generation draws parent pairs with probability proportional to
fitness ``1/t`` and makes children by stochastic crossover (each gene from a parent with
probability proportional to its fitness) or multi-point crossover, then mutation; parents and
children compete and the best ``population`` survive (elitist). ``t`` is the simulated
makespan, raised for placements that overflow memory so that fitting placements rank first.

With ``surrogate=True`` the search runs on a learned predictor trained on simulated samples
(its Kendall distance on held-out samples is reported) and only the final ``top_k`` are
simulated. ``measure`` re-checks the final ``top_k`` with a real measurement (e.g. an
executed step) and picks the best by it.

>>> from spartan.dnn.placement.generator import random_dnn
>>> from spartan.dnn.placement.taskgraph import Machine
>>> tg = random_dnn(60, seed=0)
>>> a = genetic(tg, Machine(2, memory=1e12, link_bw=1e10), population=12, generations=4)
>>> (a == genetic(tg, Machine(2, memory=1e12, link_bw=1e10), population=12, generations=4)).all()
np.True_
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from spartan.dnn.placement.levels import critical_path, heaviest_path
from spartan.dnn.placement.simulate import simulate_placement
from spartan.dnn.placement.surrogate import Surrogate, kendall_distance
from spartan.dnn.placement.taskgraph import Machine, TaskGraph

__all__ = ["initial_mappings", "genetic"]

log = logging.getLogger("spartan")


def initial_mappings(tg: TaskGraph, machine: Machine, seed: int = 0) -> list[np.ndarray]:
    """The thesis's algorithmic mappings (full node vectors, references colocated)."""
    k, n = machine.devices, tg.n
    rng = np.random.default_rng(seed)
    out = [np.full(n, d, dtype=np.int64) for d in range(k)]
    if k == 1:
        return out
    comm = machine.comm_time(tg.nbytes.astype(np.float64)).tolist() if tg.m else []
    longest, _ = critical_path(tg, comm)
    sources = [v for v in range(n) if not tg.preds[v]]
    random_path = (
        heaviest_path(tg, rng.random(n).tolist(), [0.0] * tg.m, int(rng.choice(sources)))
        if sources
        else []
    )
    for path in (longest, random_path):
        for d in range(min(k, 2)):
            others = np.array([x for x in range(k) if x != d], dtype=np.int64)
            a = others[np.arange(n) % len(others)]  # the rest dealt over the other devices
            a[path] = d
            out.append(a)
    out.append(_coloring(tg, k))
    return [tg.colocate(a) for a in out]


def _coloring(tg: TaskGraph, k: int) -> np.ndarray:
    """Greedy coloring in topological order: each node avoids its neighbours' devices."""
    a = np.full(tg.n, -1, dtype=np.int64)
    load = [0] * k
    for v in range(tg.n):
        used = [0] * k
        for u in tg.preds[v]:
            used[a[u]] += 1
        d = min(range(k), key=lambda d: (used[d], load[d], d))
        a[v] = d
        load[d] += 1
    return a


class _Scorer:
    """Simulated (or predicted) cost of genomes over the movable nodes, memoized."""

    def __init__(self, tg: TaskGraph, machine: Machine) -> None:
        self.tg, self.machine = tg, machine
        self.mov = tg.movable
        self.cache: dict[bytes, float] = {}
        self.evaluations = 0

    def full(self, genome: np.ndarray) -> np.ndarray:
        a = np.zeros(self.tg.n, dtype=np.int64)
        a[self.mov] = genome
        return self.tg.colocate(a)

    def __call__(self, genome: np.ndarray) -> float:
        key = genome.tobytes()
        hit = self.cache.get(key)
        if hit is None:
            self.evaluations += 1
            out = simulate_placement(self.tg, self.full(genome), self.machine)
            over = max(0.0, float(out.peak.max()) / self.machine.memory - 1.0)
            # Overflowing placements cost at least 2x so any fitting one ranks before them.
            hit = out.makespan if over == 0 else out.makespan * (2.0 + over)
            self.cache[key] = hit
        return hit


def genetic(
    tg: TaskGraph,
    machine: Machine,
    *,
    population: int = 32,
    generations: int = 40,
    mutation: float = 0.02,
    crossover: str = "stochastic",
    points: int = 2,
    seeds: Sequence[np.ndarray] = (),
    surrogate: bool = False,
    samples: int = 200,
    top_k: int = 5,
    measure: Callable[[np.ndarray], float] | None = None,
    seed: int = 0,
    stats: dict | None = None,
) -> np.ndarray:
    """Search placements with a GA; returns a device per node (deterministic in ``seed``)."""
    if crossover not in ("stochastic", "points"):
        raise ValueError(f"crossover must be 'stochastic' or 'points', got {crossover!r}")
    if population < 2 or generations < 0 or not 0 <= mutation <= 1:
        raise ValueError("need population >= 2, generations >= 0 and mutation in [0, 1]")
    k = machine.devices
    rng = np.random.default_rng(seed)
    sim = _Scorer(tg, machine)
    mov = sim.mov
    pool = [a[mov] for a in (*initial_mappings(tg, machine, seed), *(np.asarray(s) for s in seeds))]
    while len(pool) < population:
        pool.append(rng.integers(0, k, len(mov)))
    cost: Callable[[np.ndarray], float] = sim
    model = None
    if surrogate:
        train = pool + [rng.integers(0, k, len(mov)) for _ in range(max(samples - len(pool), 0))]
        y = np.array([sim(g) for g in train])
        cut = max(2, int(0.8 * len(train)))
        order = rng.permutation(len(train))
        fit, held = order[:cut], order[cut:]
        model = Surrogate(k).fit(np.array(train)[fit], y[fit])
        kendall = (
            kendall_distance(y[held], model.predict(np.array(train)[held]))
            if len(held) > 1
            else 0.0
        )
        model.fit(np.array(train), y)
        memo: dict[bytes, float] = {}

        def cost(g: np.ndarray) -> float:
            key = g.tobytes()
            if key not in memo:
                memo[key] = float(model.predict(g[None, :])[0])
            return memo[key]

    pop = sorted(pool, key=lambda g: cost(g))[:population]
    for gen in range(generations):
        scores = np.array([cost(g) for g in pop])
        scale = scores.max()
        # fitness ∝ 1/t, computed relative to the worst so zero-time steps stay finite
        fit = scale / np.maximum(scores, scale * 1e-9) if scale > 0 else np.ones(len(pop))
        prob = fit / fit.sum()
        children = []
        for _ in range(population // 2):
            i, j = rng.choice(len(pop), size=2, replace=False, p=prob)
            children.extend(_crossover(pop[i], pop[j], fit[i], fit[j], crossover, points, rng))
        for c in children:
            flip = rng.random(len(c)) < mutation
            c[flip] = rng.integers(0, k, int(flip.sum()))
        merged = {g.tobytes(): g for g in (*pop, *children)}
        pop = sorted(merged.values(), key=lambda g: (cost(g), g.tobytes()))[:population]
        if gen % 10 == 0:
            log.debug("genetic: generation %d best %.6g", gen, cost(pop[0]))
    finalists = pop[: max(1, top_k)]
    if surrogate:
        finalists = sorted(finalists, key=lambda g: (sim(g), g.tobytes()))
    best = finalists[0]
    if measure is not None:
        measured = [(measure(sim.full(g)), idx) for idx, g in enumerate(finalists)]
        best = finalists[min(measured)[1]]
    if stats is not None:
        stats.update(simulations=sim.evaluations, best=sim(best))
        if surrogate:
            stats["kendall"] = kendall
    return sim.full(best)


def _crossover(
    a: np.ndarray,
    b: np.ndarray,
    fa: float,
    fb: float,
    kind: str,
    points: int,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    if kind == "stochastic":
        take_a = rng.random(len(a)) < fa / (fa + fb)
        return [np.where(take_a, a, b)]
    cuts = (
        np.sort(rng.choice(np.arange(1, len(a)), size=min(points, len(a) - 1), replace=False))
        if len(a) > 1
        else []
    )
    seg = np.zeros(len(a), dtype=bool)
    for c in cuts:
        seg[c:] = ~seg[c:]
    return [np.where(seg, b, a), np.where(seg, a, b)]
