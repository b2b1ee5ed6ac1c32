"""SwapAdvisor genetic operators and search."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.dnn.swap import PoolModel, is_topological
from spartan.dnn.swap.genetic import (
    Chromosome,
    GAConfig,
    crossover_allocations,
    crossover_schedules,
    evaluate,
    greedy_schedule,
    mutate_allocation,
    mutate_schedule,
    search,
    select,
)
from spartan.dnn.swap.pool import Allocation
from spartan.dnn.swap.random_graphs import random_problem
from spartan.dnn.swap.worked_examples import figure1_workload


def test_schedule_crossover_paper_example():
    c1, c2 = crossover_schedules([1, 2, 3, 4, 5], [2, 3, 4, 1, 5], 3)
    assert c1 == [2, 3, 4, 1, 5]
    assert c2 == [1, 2, 3, 4, 5]


class _FourSizes:
    """A PoolModel stand-in with the paper's sizes 1..4 MB, 12 MB and no op minimum."""

    ts = (1, 2, 3, 4)

    def repair(self, cls, cnt):
        from spartan.dnn.swap.pool import object_sizes, repair_cls, repair_cnt

        cls = repair_cls(cls)
        sizes = object_sizes(self.ts, cls)
        return Allocation(cls, repair_cnt(cnt, sizes, 12, [1] * len(sizes)))


def test_allocation_crossover_paper_example():
    a1 = Allocation((0, 0, 0, 0), (4,))
    a2 = Allocation((0, 1, 1, 1), (8, 1))
    c1, c2 = crossover_allocations(a1, a2, 2, _FourSizes())
    assert c1.cls == (0, 1, 1, 1)  # [1,2,1,1] repaired to [1,2,2,2] (1-based)
    assert c2.cls == (0, 0, 1, 1)
    assert c1.cnt == (4, 2)  # EXT [8,1,4,4] -> CNT [8,3] (20 MB) -> repaired at 12 MB


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.floats(0.0, 1.0))
def test_operators_keep_schedules_topological_and_pools_fitting(seed, p):
    wl, sched, alloc = random_problem(seed)
    rng = random.Random(seed)
    succs = wl.op_succs
    other = mutate_schedule(wl.default_schedule(), wl.op_preds, succs, 1.0, rng)
    assert is_topological(wl, greedy_schedule(wl))
    for child in crossover_schedules(sched, other, rng.randrange(1, wl.n_ops + 1)):
        assert is_topological(wl, child)
        assert is_topological(wl, mutate_schedule(child, wl.op_preds, succs, p, rng))
    if alloc is None:
        return
    pm = PoolModel(wl)
    mutant = mutate_allocation(alloc, p, rng, pm)
    assert pm.bytes(mutant) <= wl.capacity
    assert all(c >= m for c, m in zip(mutant.cnt, pm.minimum_counts(mutant.cls)))
    other_alloc = pm.random(rng)
    if other_alloc is not None and len(pm.ts) > 1:
        for child in crossover_allocations(alloc, other_alloc, rng.randrange(1, len(pm.ts)), pm):
            assert child is None or pm.bytes(child) <= wl.capacity


def test_mutation_with_zero_probability_is_identity():
    wl, sched, _ = random_problem(7)
    assert mutate_schedule(sched, wl.op_preds, wl.op_succs, 0.0, random.Random(0)) == sched


def test_selection_prefers_faster_and_drops_infeasible():
    rng = random.Random(0)
    times = [1.0, 2.0, float("inf"), 1.5]
    picks = [0, 0, 0, 0]
    for _ in range(2000):
        for i in select([None] * 4, times, 2, 1.0, rng):
            picks[i] += 1
    assert picks[2] == 0
    assert picks[0] > picks[3] > picks[1]
    refill = select([None] * 3, [2.0, float("inf"), float("inf")], 3, 2.0, rng)
    assert refill == [0, 0, 0]


def test_search_finds_the_figure1_optimum():
    wl = figure1_workload()
    result = search(wl, GAConfig(population=8, max_generations=15, workers=1, seed=3))
    assert result.best_time == 6.0  # compute-bound: every copy hidden
    assert is_topological(wl, result.best.schedule)
    assert [g.best for g in result.history] == sorted(
        (g.best for g in result.history), reverse=True
    )
    assert result.plan(wl).iteration_time() == 6.0


def test_parallel_search_matches_serial_scores():
    wl, _, alloc = random_problem(11)
    cfg = dict(population=8, max_generations=3, seed=5, budget_s=60)
    serial = search(wl, GAConfig(workers=1, **cfg))
    parallel = search(wl, GAConfig(workers=2, **cfg))
    assert serial.best_time == parallel.best_time
    best = serial.best
    assert evaluate(wl, Chromosome(best.schedule, best.alloc, best.eviction)) == serial.best_time


# ---- the search against random sampling and against ODSwap ----------------------------


def _squeezed(graph, ratio):
    from spartan.dnn.hardware import V100
    from spartan.dnn.swap import Workload

    full = Workload.from_graph(graph, accel=V100)
    return full.with_capacity(full.peak_bytes() / ratio)


@pytest.mark.parametrize(
    "name, seed",
    [("rnn", 0), ("rnn", 1), ("mlp", 0), ("mlp", 1)],
)
def test_ga_beats_random_sampling_from_random_starts(name, seed):
    """From a random first generation (the paper's setting, no heuristic seeds), the GA
    ends at least as fast as the best of as many random samples as it scored."""
    from spartan.dnn import zoo
    from spartan.dnn.swap.baselines import best_random

    graph = zoo.rnn(2, 128, 8, 3) if name == "rnn" else zoo.mlp(64, [512, 512, 512, 512, 10])
    wl = _squeezed(graph, 3.0 if name == "rnn" else 2.0)
    cfg = GAConfig(
        population=16,
        max_generations=15,
        budget_s=1e9,
        patience_s=1e9,
        workers=1,
        progress=False,
        heuristic_seeds=False,
        seed=seed,
    )
    result = search(wl, cfg)
    _, random_best = best_random(wl, result.history[-1].evaluated, seed=seed + 100)
    assert result.best_time <= random_best * (1 + 1e-9)  # ties: the same optimum
    assert result.best_time < result.history[0].best  # it improved on its first generation


def test_search_is_never_slower_than_odswap():
    """ODSwap's configuration (graph order, demand pool, LRU) is in the first generation
    and the best-ever individual survives, so SwapAdvisor >= ODSwap on the same pool."""
    from spartan.dnn import zoo
    from spartan.dnn.swap.baselines import odswap

    for graph, ratio in ((zoo.rnn(2, 256, 16, 4), 3.0), (zoo.mlp(64, [512, 512, 10]), 1.0)):
        wl = _squeezed(graph, ratio)
        cfg = GAConfig(population=8, max_generations=2, workers=1, progress=False)
        assert search(wl, cfg).best_time <= odswap(wl).iteration_time()
