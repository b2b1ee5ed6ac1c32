"""SwapAdvisor's genetic search over (schedule, memory allocation) chromosomes (§5).

Each generation pairs random parents; a crossover gives 2 child schedules x 2 child
allocations = 4 children, which are mutated and scored by planning their swaps and
simulating the plan. Survivors are drawn without replacement from parents + children with
probability softmax(t_norm), t_norm = (T_best - t) / T_best (T_best: best time ever seen);
the best-ever individual always survives *(ours)*. Scoring runs in worker processes. The
search stops at a time budget, after ``patience_s`` without improvement, or after
``max_generations``.

>>> crossover_schedules([1, 2, 3, 4, 5], [2, 3, 4, 1, 5], 3)
([2, 3, 4, 1, 5], [1, 2, 3, 4, 5])
"""

from __future__ import annotations

import heapq
import logging
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from spartan.dnn.swap.plan import InfeasiblePlan, SwapPlan
from spartan.dnn.swap.planner import Eviction, plan_swaps
from spartan.dnn.swap.pool import Allocation, PoolModel, expand_cnt, regroup_cnt, repair_cls
from spartan.dnn.swap.workload import Workload

__all__ = [
    "Chromosome",
    "GAConfig",
    "Generation",
    "SearchResult",
    "search",
    "evaluate",
    "crossover_schedules",
    "crossover_allocations",
    "mutate_schedule",
    "mutate_allocation",
    "greedy_schedule",
    "select",
]

log = logging.getLogger("spartan")
RULES: tuple[Eviction, Eviction] = ("belady", "lru")


@dataclass(frozen=True)
class Chromosome:
    """An individual: a topological op order, a pool allocation and the planner's
    eviction rule (``"belady"``, ``"lru"`` or ``"auto"`` = both, the faster kept). The
    search treats the rule as a gene *(ours)*: one planning pass per individual instead of
    two, and ODSwap's configuration (graph order, demand pool, LRU) is in its space."""

    schedule: tuple[int, ...]
    alloc: Allocation
    eviction: Eviction = "auto"


@dataclass
class GAConfig:
    """Search settings (paper: population 144, mutation 10%, 30 min, 5 min patience;
    the fields marked *(ours)* are not in the paper)."""

    population: int = 144
    # Paper: 10% "a good start", tuned per model. 5% *(ours)*: from random starts on small
    # RNNs it beat the best of as many random samples on 11 of 12 seeds, 10% on 9.
    mutation: float = 0.05
    budget_s: float = 60.0
    patience_s: float = 30.0
    max_generations: int | None = None
    workers: int = os.cpu_count() or 1
    seed: int = 0
    cnt_sigma: float = 0.25  # relative std-dev of a CNT mutation *(ours)*
    # Softmax temperature of selection *(ours)*: the paper's softmax(t_norm) is 1.0; with
    # times within tens of percent of the best it keeps a plan 2x slower with weight
    # e^-1, close to uniform survival, so from random starts the search drifts like
    # random sampling. 0.1 keeps diversity but favours the faster plans.
    temperature: float = 0.1
    # Fraction of each generation's children replaced by fresh random individuals
    # *(ours)*: keeps exploring as random sampling does while the rest exploits.
    immigrants: float = 0.1
    search_schedule: bool = True
    search_allocation: bool = True
    heuristic_seeds: bool = True  # start from the graph's order and greedy_schedule too *(ours)*
    progress: bool | None = None  # None: a bar when stderr is a terminal, else log lines

    def __post_init__(self) -> None:
        if self.population < 4:
            raise ValueError(f"population must be >= 4, got {self.population}")
        if not 0.0 <= self.mutation <= 1.0:
            raise ValueError(f"mutation probability must be in [0, 1], got {self.mutation}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.budget_s <= 0 or self.workers < 1:
            raise ValueError("budget_s must be > 0 and workers >= 1")


@dataclass(frozen=True)
class Generation:
    """Population statistics after one generation (times in simulated seconds)."""

    index: int
    elapsed_s: float
    best: float
    mean: float
    worst: float
    evaluated: int


@dataclass
class SearchResult:
    best: Chromosome
    best_time: float
    history: list[Generation] = field(default_factory=list)

    def plan(self, workload: Workload) -> SwapPlan:
        """The augmented graph of the best individual."""
        best = self.best
        return plan_swaps(
            workload, best.schedule, best.alloc, eviction=best.eviction, label="SwapAdvisor"
        )


# ---- scoring ---------------------------------------------------------------------------


def evaluate(workload: Workload, c: Chromosome) -> float:
    """Simulated iteration time of ``c`` (inf when its memory configuration cannot run)."""
    try:
        return plan_swaps(workload, c.schedule, c.alloc, eviction=c.eviction).iteration_time()
    except InfeasiblePlan:
        return math.inf


_WORKER_WORKLOAD: Workload | None = None


def _init_worker(workload: Workload) -> None:
    global _WORKER_WORKLOAD
    _WORKER_WORKLOAD = workload


def _evaluate_in_worker(c: Chromosome) -> float:
    assert _WORKER_WORKLOAD is not None
    return evaluate(_WORKER_WORKLOAD, c)


# ---- operators -------------------------------------------------------------------------


def crossover_schedules(
    s1: Sequence[int], s2: Sequence[int], cr: int
) -> tuple[list[int], list[int]]:
    """Child 1 = ``s2[:cr]`` then the rest in ``s1``'s order; child 2 symmetric. Children
    of topological orders are topological (a prefix of one is closed under predecessors)."""

    def child(head: Sequence[int], tail_from: Sequence[int]) -> list[int]:
        taken = set(head[:cr])
        return list(head[:cr]) + [n for n in tail_from if n not in taken]

    return child(s2, s1), child(s1, s2)


def crossover_allocations(
    a1: Allocation, a2: Allocation, cr: int, pm: PoolModel
) -> tuple[Allocation | None, Allocation | None]:
    """Cross CLS at ``cr`` (repairing steps) and the per-size counts CNT_EXT at the same
    point, regroup counts by the child's classes (mean), then repair to fit the device.

    Paper example (classes 0-based): CLS [0,0,0,0] x [0,1,1,1] at 2 -> [0,1,1,1] and
    [0,0,1,1]; CNT_EXT [4,4,4,4] x [8,1,1,1] -> [8,1,4,4] -> CNT [8,3] -> [4,2] at 12 MB.
    """
    e1, e2 = expand_cnt(a1.cls, a1.cnt), expand_cnt(a2.cls, a2.cnt)
    out = []
    for ca, cb, ea, eb in ((a2.cls, a1.cls, e2, e1), (a1.cls, a2.cls, e1, e2)):
        cls = repair_cls(list(ca[:cr]) + list(cb[cr:]))
        ext = list(ea[:cr]) + list(eb[cr:])
        out.append(pm.repair(cls, regroup_cnt(cls, ext)))
    return out[0], out[1]


def mutate_schedule(
    schedule: Sequence[int],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    p: float,
    rng: random.Random,
) -> list[int]:
    """Replay a ready-list scheduler: with probability ``p`` run a random ready op, else
    the ready op that comes first in ``schedule``. ``p = 1`` gives a random topological
    order."""
    pos = {op: i for i, op in enumerate(schedule)}
    missing = [len(ps) for ps in preds]
    ready_list = [op for op in range(len(preds)) if missing[op] == 0]
    ready_heap = [(pos[op], op) for op in ready_list]
    heapq.heapify(ready_heap)
    where = {op: i for i, op in enumerate(ready_list)}
    out = []
    while ready_list:
        if rng.random() < p:
            op = ready_list[rng.randrange(len(ready_list))]
        else:
            while ready_heap[0][1] not in where:
                heapq.heappop(ready_heap)
            op = heapq.heappop(ready_heap)[1]
        i = where.pop(op)  # remove from the list by swapping with the last element
        last = ready_list.pop()
        if last != op:
            ready_list[i] = last
            where[last] = i
        out.append(op)
        for s in succs[op]:
            missing[s] -= 1
            if missing[s] == 0:
                where[s] = len(ready_list)
                ready_list.append(s)
                heapq.heappush(ready_heap, (pos[s], s))
    return out


def greedy_schedule(workload: Workload) -> list[int]:
    """A memory-frugal topological order *(ours, a seed for the search)*: repeatedly run
    the ready op that frees the most bytes net of what it allocates (ties: graph order).
    In unrolled RNNs this accumulates each weight-gradient partial as soon as it exists."""
    wl = workload
    remaining = [0] * wl.n_tensors
    for op in range(wl.n_ops):
        for t in wl.op_inputs[op]:
            remaining[t] += 1
    succs = wl.op_succs
    missing = [len(ps) for ps in wl.op_preds]
    ready = [op for op in range(wl.n_ops) if missing[op] == 0]
    transient = [not (p or k) for p, k in zip(wl.persistent, wl.keep, strict=True)]

    def gain(op: int) -> int:
        freed = sum(wl.nbytes[t] for t in wl.op_inputs[op] if remaining[t] == 1 and transient[t])
        return freed - sum(wl.nbytes[t] for t in wl.op_outputs[op])

    out = []
    while ready:
        op = max(ready, key=lambda o: (gain(o), -o))
        ready.remove(op)
        out.append(op)
        for t in wl.op_inputs[op]:
            remaining[t] -= 1
        for s in succs[op]:
            missing[s] -= 1
            if missing[s] == 0:
                ready.append(s)
    return out


def mutate_allocation(
    alloc: Allocation, p: float, rng: random.Random, pm: PoolModel, sigma: float = 0.25
) -> Allocation:
    """Each CLS element moves with probability ``p``: +1 if equal to its predecessor, else
    -1, shifting the suffix with it; each CNT element with probability ``p`` is redrawn
    from a Gaussian around its value (std-dev ``sigma`` x value, at least 1). Repaired to
    fit; the parent is returned when the mutant cannot fit at all."""
    cls = list(alloc.cls)
    ext = list(expand_cnt(alloc.cls, alloc.cnt))
    for i in range(1, len(cls)):
        if rng.random() < p:
            delta = 1 if cls[i] == cls[i - 1] else -1
            for j in range(i, len(cls)):
                cls[j] += delta
    cnt = list(regroup_cnt(cls, ext))
    for k, c in enumerate(cnt):
        if rng.random() < p:
            cnt[k] = max(0, round(rng.gauss(c, max(1.0, sigma * c))))
    return pm.repair(cls, cnt) or alloc


def select(
    individuals: Sequence[Chromosome],
    times: Sequence[float],
    n: int,
    best_time: float,
    rng: random.Random,
    temperature: float = 1.0,
) -> list[int]:
    """Indices of ``n`` survivors drawn without replacement with probability
    softmax((best_time - t) / best_time / temperature); infeasible (inf) individuals never
    survive, and when fewer than ``n`` are feasible some are repeated to keep the
    population size."""
    alive = [i for i, t in enumerate(times) if math.isfinite(t)]
    weights = {
        i: max(1e-300, math.exp((best_time - times[i]) / best_time / temperature)) for i in alive
    }
    # Efraimidis-Spirakis weighted sampling without replacement: the n largest u^(1/w).
    chosen = sorted(alive, key=lambda i: -(rng.random() ** (1.0 / weights[i])))[:n]
    if alive and len(chosen) < n:  # too few feasible: refill with weighted copies
        chosen += rng.choices(alive, weights=[weights[i] for i in alive], k=n - len(chosen))
    return chosen


# ---- the search ------------------------------------------------------------------------


def search(
    workload: Workload,
    config: GAConfig | None = None,
    *,
    initial: Sequence[Chromosome] = (),
    on_generation: Callable[[Generation], None] | None = None,
) -> SearchResult:
    """Run the genetic algorithm on ``workload``; see the module docstring.

    The first generation is random (paper) plus ``initial`` and, with
    ``heuristic_seeds``, the graph's own order and :func:`greedy_schedule` *(ours)*.
    Raises ValueError when no valid allocation exists for the device.
    """
    cfg = config or GAConfig()
    rng = random.Random(cfg.seed)
    pm = PoolModel(workload)
    preds, succs = workload.op_preds, workload.op_succs
    base_schedule = workload.default_schedule()
    if not pm.fits():
        raise ValueError(
            f"no pool fits {workload.capacity:.4g} B: the smallest valid pool needs "
            f"{pm.bytes(pm.smallest):.4g} B (every op's tensors resident at once)"
        )
    # Without allocation search the pool is the on-demand allocator's (the framework
    # default), as without schedule search the order is the graph's own.
    base_alloc = pm.demand(base_schedule) or pm.random(random.Random(cfg.seed))
    assert base_alloc is not None  # random() falls back to a valid pool when one fits

    def random_individual() -> Chromosome:
        sched = (
            mutate_schedule(base_schedule, preds, succs, 1.0, rng)
            if cfg.search_schedule
            else base_schedule
        )
        alloc = (pm.random(rng) or base_alloc) if cfg.search_allocation else base_alloc
        return Chromosome(tuple(sched), alloc, rng.choice(RULES))

    seeds = list(initial)
    if cfg.heuristic_seeds:
        # The on-demand baseline's own configuration (graph order, demand pool) is in the
        # first generation, and the planner keeps the better of Belady and LRU, so the
        # search's best is never slower than ODSwap's plan.
        demand = pm.demand(base_schedule)
        if demand is not None and cfg.search_allocation:
            seeds.append(Chromosome(tuple(base_schedule), demand, "lru"))
        orders = [base_schedule, greedy_schedule(workload)] if cfg.search_schedule else []
        for order in orders:
            for rule in RULES:
                alloc = (pm.random(rng) or base_alloc) if cfg.search_allocation else base_alloc
                seeds.append(Chromosome(tuple(order), alloc, rule))
    seeds = seeds[: cfg.population]
    population = seeds + [random_individual() for _ in range(cfg.population - len(seeds))]
    cache: dict[Chromosome, float] = {}
    start = time.monotonic()
    pool = (
        ProcessPoolExecutor(cfg.workers, initializer=_init_worker, initargs=(workload,))
        if cfg.workers > 1
        else None
    )

    def score(cs: list[Chromosome]) -> list[float]:
        todo = list(dict.fromkeys(c for c in cs if c not in cache))
        if pool is None:
            results = [evaluate(workload, c) for c in todo]
        else:
            chunk = max(1, len(todo) // (4 * cfg.workers))
            results = list(pool.map(_evaluate_in_worker, todo, chunksize=chunk))
        cache.update(zip(todo, results, strict=True))
        return [cache[c] for c in cs]

    progress = _Progress(cfg, workload.name)
    history: list[Generation] = []
    try:
        times = score(population)
        best_i = min(range(len(times)), key=times.__getitem__)
        best, best_time = population[best_i], times[best_i]
        last_gain = time.monotonic()
        gen = 0
        while True:
            history.append(_stats(gen, time.monotonic() - start, times, len(cache)))
            progress.update(history[-1])
            if on_generation is not None:
                on_generation(history[-1])
            now = time.monotonic()
            if (
                now - start >= cfg.budget_s
                or now - last_gain >= cfg.patience_s
                or (cfg.max_generations is not None and gen >= cfg.max_generations)
            ):
                break
            gen += 1
            children = _offspring(population, cfg, rng, pm, preds, succs)
            for i in range(round(cfg.immigrants * len(children))):
                children[i] = random_individual()
            child_times = score(children)
            everyone = population + children
            all_times = times + child_times
            gen_best = min(range(len(all_times)), key=all_times.__getitem__)
            if all_times[gen_best] < best_time:
                best, best_time = everyone[gen_best], all_times[gen_best]
                last_gain = time.monotonic()
            if not math.isfinite(best_time):
                raise ValueError("no feasible individual found")
            keep = select(everyone, all_times, cfg.population, best_time, rng, cfg.temperature)
            if best not in (everyone[i] for i in keep):
                keep[-1] = everyone.index(best)
            population = [everyone[i] for i in keep]
            times = [all_times[i] for i in keep]
    finally:
        progress.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return SearchResult(best, best_time, history)


def _offspring(
    population: list[Chromosome],
    cfg: GAConfig,
    rng: random.Random,
    pm: PoolModel,
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
) -> list[Chromosome]:
    children: list[Chromosome] = []
    n_ops = len(preds)
    n_sizes = len(pm.ts)
    while len(children) < cfg.population:
        p1, p2 = rng.sample(population, 2)
        if cfg.search_schedule:
            scheds = crossover_schedules(p1.schedule, p2.schedule, rng.randrange(1, n_ops + 1))
        else:
            scheds = (list(p1.schedule), list(p2.schedule))
        if cfg.search_allocation and n_sizes > 1:
            a1, a2 = crossover_allocations(p1.alloc, p2.alloc, rng.randrange(1, n_sizes), pm)
            allocs = (a1 or p1.alloc, a2 or p2.alloc)
        else:
            allocs = (p1.alloc, p2.alloc)
        for s in scheds:
            for a in allocs:
                if cfg.search_schedule:
                    s = mutate_schedule(s, preds, succs, cfg.mutation, rng)
                if cfg.search_allocation:
                    a = mutate_allocation(a, cfg.mutation, rng, pm, cfg.cnt_sigma)
                rule = rng.choice((p1.eviction, p2.eviction))
                if rng.random() < cfg.mutation:
                    rule = "lru" if rule == "belady" else "belady"
                children.append(Chromosome(tuple(s), a, rule))
    return children


def _stats(gen: int, elapsed: float, times: Sequence[float], evaluated: int) -> Generation:
    finite = [t for t in times if math.isfinite(t)]
    if not finite:
        return Generation(gen, elapsed, math.inf, math.inf, math.inf, evaluated)
    return Generation(gen, elapsed, min(finite), sum(finite) / len(finite), max(finite), evaluated)


class _Progress:
    """A tqdm bar of best/mean per generation when interactive, log lines otherwise."""

    def __init__(self, cfg: GAConfig, name: str) -> None:
        interactive = sys.stderr.isatty() if cfg.progress is None else cfg.progress
        self.name = name
        self.bar = None
        if interactive:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=None, desc=f"GA {name}", unit="gen")

    def update(self, g: Generation) -> None:
        if self.bar is not None:
            self.bar.set_postfix(best=f"{g.best:.4g}s", mean=f"{g.mean:.4g}s")
            self.bar.update(1)
        else:
            log.info(
                "GA %s gen %d (%.1fs, %d evaluated): best %.4gs mean %.4gs worst %.4gs",
                self.name,
                g.index,
                g.elapsed_s,
                g.evaluated,
                g.best,
                g.mean,
                g.worst,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
