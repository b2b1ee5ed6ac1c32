"""SwapAdvisor pool model, planner and simulation: the papers' worked examples and
properties on random graphs."""

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spartan.dnn.swap import (
    COMPUTE,
    SWAP_IN,
    SWAP_OUT,
    Allocation,
    InfeasiblePlan,
    PoolModel,
    plan_swaps,
)
from spartan.dnn.swap.pool import expand_cnt, object_sizes, regroup_cnt, repair_cls, repair_cnt
from spartan.dnn.swap.random_graphs import random_problem
from spartan.dnn.swap.worked_examples import (
    COARSE_POOL,
    FINE_POOL,
    LEFT_FIRST,
    RIGHT_FIRST,
    figure1_workload,
    figure3_workload,
)

# ---- worked examples -----------------------------------------------------------------


def _figure1_time(order, pool):
    wl = figure1_workload()
    idx = {n: i for i, n in enumerate(wl.op_names)}
    return plan_swaps(wl, [idx[n] for n in order], pool, steady_state=False).iteration_time()


def test_figure1_right_first_fine_pool_is_one_unit_faster():
    best = _figure1_time(RIGHT_FIRST, FINE_POOL)
    assert best == 6.0  # as fast as compute alone: every copy is hidden
    assert _figure1_time(RIGHT_FIRST, COARSE_POOL) == best + 1  # Fig. 1(c) vs (d)
    assert _figure1_time(LEFT_FIRST, FINE_POOL) == best + 1  # Fig. 1(e) vs (d)


def test_figure3_planner_trace():
    wl = figure3_workload()
    plan = plan_swaps(wl, [0, 1, 2], Allocation((0,), (4,)), steady_state=False)
    name = plan.node_name
    swap_ins = [wl.tensor_names[plan.ref[i]] for i in plan.stream(SWAP_IN)]
    assert swap_ins == ["W1", "W2", "W3"]
    assert plan.n_swap_out == 0  # parameter evictions are free drops
    nodes = {name(i).split("#")[0]: i for i in range(len(plan))}
    # W1 -> W3: W3's swap-in waits for op1 (W1's last user) to release W1's object.
    assert plan.deps[nodes["in:W3"]] == [nodes["op1"]]
    assert "W1" in [wl.tensor_names[t] for t, _ in plan.release[nodes["op1"]]]
    # W2 -> A3: op3 waits for its swap-in of W3 and for op2 to release W2's object.
    assert sorted(plan.deps[nodes["op3"]]) == sorted([nodes["in:W3"], nodes["op2"]])
    assert "W2" in [wl.tensor_names[t] for t, _ in plan.release[nodes["op2"]]]
    assert plan.iteration_time() == 4.0


def test_figure3_steady_state_keeps_parameters_resident():
    wl = figure3_workload()
    plan = plan_swaps(wl, [0, 1, 2], Allocation((0,), (4,)))
    resident = {wl.tensor_names[t] for t in plan.initial}
    # A pass ends with W3 resident (and W1/W2 dropped), so W3 starts resident.
    assert resident == {"W3"}
    assert [wl.tensor_names[plan.ref[i]] for i in plan.stream(SWAP_IN)] == ["W1", "W2"]


# ---- pool encoding -------------------------------------------------------------------


def test_cls_repair_and_cnt_paper_examples():
    assert repair_cls([0, 1, 0, 0]) == (0, 1, 1, 1)  # [1,2,1,1] -> [1,2,2,2] in 1-based
    assert repair_cls([0, 0, 1, 1]) == (0, 0, 1, 1)
    assert expand_cnt((0, 1, 1, 1), (8, 1)) == (8, 1, 1, 1)
    assert regroup_cnt((0, 1, 1, 1), (8, 1, 4, 4)) == (8, 3)
    sizes = object_sizes((1, 2, 3, 4), (0, 1, 1, 1))
    assert sizes == (1, 4)
    assert repair_cnt((8, 3), sizes, 12, (1, 1)) == (4, 2)
    assert repair_cnt((8, 3), sizes, 4, (1, 1)) is None


def test_allocation_validation():
    with pytest.raises(ValueError, match="step"):
        Allocation((0, 2), (1, 1, 1))
    with pytest.raises(ValueError, match="entries"):
        Allocation((0, 1), (1,))
    with pytest.raises(ValueError, match="negative"):
        Allocation((0,), (-1,))


def test_pool_too_small_is_infeasible():
    wl = figure3_workload()
    with pytest.raises(InfeasiblePlan):
        plan_swaps(wl, [0, 1, 2], Allocation((0,), (3,)), steady_state=False)
    assert PoolModel(wl.with_capacity(3)).random(random.Random(0)) is None


def test_bad_schedule_rejected():
    wl = figure3_workload()
    with pytest.raises(ValueError, match="topological"):
        plan_swaps(wl, [2, 0, 1], Allocation((0,), (4,)))
    with pytest.raises(ValueError, match="eviction"):
        plan_swaps(wl, [0, 1, 2], Allocation((0,), (4,)), eviction="fifo")


# ---- random training-like graphs -------------------------------------------------------


def replay(plan):
    """Walk the simulated timeline: objects are exclusive, class occupancy <= CNT, and
    every op finds its inputs resident when it starts."""
    sim = plan.simulate()
    name = plan.node_name
    events = []  # (time, order, node, is_release)
    for i in range(len(plan)):
        events.append((sim.start[name(i)], 1, i, False))
        events.append((sim.end[name(i)], 0, i, True))
    events.sort()
    owner = {}  # slot -> tensor
    where = dict(plan.initial)  # tensor -> slot
    for s in plan.initial.values():
        assert s not in owner
    owner = {s: t for t, s in plan.initial.items()}
    wl = plan.workload
    for _, _, i, is_release in events:
        if is_release:
            for t, s in plan.release[i]:
                assert owner.get(s) == t, f"release of {wl.tensor_names[t]} not in {s}"
                del owner[s]
                if where.get(t) == s:
                    del where[t]
            continue
        if plan.kind[i] == COMPUTE:
            for t in wl.op_inputs[plan.ref[i]]:
                assert t in where, f"{name(i)} starts without {wl.tensor_names[t]}"
        for t, s in plan.place[i]:
            assert s not in owner, f"object {s} already holds {owner.get(s)}"
            owner[s] = t
            where[t] = s
        in_use = {}
        for s in owner:
            in_use[s[0]] = in_use.get(s[0], 0) + 1
        for k, c in in_use.items():
            assert c <= plan.object_counts[k]
    return sim, where


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans())
def test_plans_replay_within_the_pool(seed, with_inputs):
    wl, sched, alloc = random_problem(seed, with_inputs)
    if alloc is None:
        return
    plan = plan_swaps(wl, sched, alloc)
    _, resident_at_end = replay(plan)
    # Steady state: what the iteration started with is resident again at its end.
    assert set(plan.initial) <= set(resident_at_end)
    assert all(wl.persistent[t] for t in plan.initial)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.booleans(), st.sampled_from(["belady", "lru"]))
def test_simulated_time_respects_lower_bounds(seed, with_inputs, eviction):
    wl, sched, alloc = random_problem(seed, with_inputs)
    if alloc is None:
        return
    plan = plan_swaps(wl, sched, alloc, eviction=eviction)
    t = plan.iteration_time()
    assert t >= wl.compute_time - 1e-9
    assert t >= plan.swap_bytes(SWAP_IN) / wl.host_bw - 1e-9
    assert t >= plan.swap_bytes(SWAP_OUT) / wl.host_bw - 1e-9
    assert t == pytest.approx(plan.simulate().makespan)  # fast path = shared simulator
    budget = plan_swaps(wl, sched, wl.capacity, eviction=eviction)  # byte-budget pool
    assert budget.iteration_time() >= wl.compute_time - 1e-9
    assert budget.iteration_time() == pytest.approx(budget.simulate().makespan)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_infinite_memory_never_swaps(seed):
    wl, sched, _ = random_problem(seed, with_inputs=False)
    unlimited = PoolModel(wl.with_capacity(math.inf)).unlimited()
    plan = plan_swaps(wl.with_capacity(math.inf), sched, unlimited)
    assert plan.n_swap_in == 0 and plan.n_swap_out == 0
    assert plan.iteration_time() == pytest.approx(wl.compute_time)
