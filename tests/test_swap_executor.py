"""Executing swap plans: the emulated CPU device and (when present) CuPy on a GPU."""

import random

import numpy as np
import pytest
from dnn_steps import cupy_or_skip

from spartan.dnn import zoo
from spartan.dnn.hardware import V100
from spartan.dnn.swap import PoolModel, Workload, plan_swaps
from spartan.dnn.swap.executor import random_feeds, run_cupy, run_emulated, run_unconstrained
from spartan.dnn.swap.genetic import GAConfig, mutate_schedule, search
from spartan.dnn.swap.plan import SwapPlan


@pytest.fixture(scope="module")
def mlp_case():
    g = zoo.mlp(16, [32, 64, 64, 64, 10], optimizer="momentum")
    full = Workload.from_graph(g, accel=V100, keep=["loss:out"])
    wl = full.with_capacity(full.total_bytes / 3)  # needs 3x the device
    feeds, state = random_feeds(g, seed=0)
    ref = run_unconstrained(g, feeds, state, iterations=3, keep=["loss:out"])
    return g, wl, feeds, state, ref


def _assert_same(ref, got):
    for a, b in zip(ref.outputs, got.outputs, strict=True):
        assert np.array_equal(a["loss:out"], b["loss:out"])
    assert ref.state.keys() == got.state.keys()
    for k in ref.state:
        assert np.array_equal(ref.state[k], got.state[k]), k


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_emulated_device_matches_unconstrained_within_limit(mlp_case, seed):
    g, wl, feeds, state, ref = mlp_case
    rng = random.Random(seed)
    sched = mutate_schedule(wl.default_schedule(), wl.op_preds, wl.op_succs, 0.5, rng)
    plan = plan_swaps(wl, sched, PoolModel(wl).random(rng))
    assert plan.n_swap_out > 0 and plan.n_swap_in > 0  # really swapping
    got = run_emulated(plan, g, feeds, state, iterations=3)
    _assert_same(ref, got)
    assert got.peak_live_bytes <= got.pool_bytes <= wl.capacity


def test_emulated_device_runs_a_searched_plan(mlp_case):
    g, wl, feeds, state, ref = mlp_case
    result = search(wl, GAConfig(population=8, max_generations=2, workers=1))
    got = run_emulated(result.plan(wl), g, feeds, state, iterations=3)
    _assert_same(ref, got)


def test_emulated_device_runs_the_smallest_pool(mlp_case):
    """At the smallest valid pool some tensors borrow larger objects; the executor
    replays that exactly and the numbers still equal the unconstrained run."""
    g, wl, feeds, state, ref = mlp_case
    pm = PoolModel(wl)
    tight = wl.with_capacity(pm.bytes(pm.smallest))
    tpm = PoolModel(tight)
    plan = plan_swaps(tight, wl.default_schedule(), tpm.smallest)
    # smallest has one class per size, so a tensor's own class is its size index
    borrowed = [t for node in plan.place for t, slot in node if slot[0] != tpm.size_index[t]]
    assert plan.n_swap_in > 0 and borrowed
    got = run_emulated(plan, g, feeds, state, iterations=3)
    _assert_same(ref, got)
    assert got.pool_bytes <= tight.capacity


@pytest.mark.parametrize("smallest", [False, True])
def test_worker_device_matches_the_in_process_executor(backend, mlp_case, smallest):
    """A spartan worker (local backend and Ray) as the memory-limited device, the driver
    as host memory: the same numbers as the emulated device, and the worker's own byte
    counter stays within the plan's pool (plus one op's in-place updates)."""
    from spartan.dnn.swap.workers import inplace_slack, run_on_worker

    g, wl, feeds, state, ref = mlp_case
    if smallest:  # the tightest valid pool: tensors borrow larger objects
        wl = wl.with_capacity(PoolModel(wl).bytes(PoolModel(wl).smallest))
        alloc = PoolModel(wl).smallest
    else:
        alloc = PoolModel(wl).random(random.Random(3))
    plan = plan_swaps(wl, wl.default_schedule(), alloc)
    assert plan.n_swap_in > 0 and plan.n_swap_out > 0
    got = run_on_worker(plan, g, feeds, state, iterations=3, backend=backend)
    _assert_same(run_emulated(plan, g, feeds, state, iterations=3), got)
    _assert_same(ref, got)
    assert 0 < got.peak_device_bytes <= plan.pool_bytes + inplace_slack(plan)
    assert plan.pool_bytes <= wl.capacity < wl.peak_bytes()


def test_worker_device_rejects_byte_budget_plans(local_backend, mlp_case):
    from spartan.dnn.swap.workers import run_on_worker

    g, wl, feeds, state, _ = mlp_case
    with pytest.raises(ValueError, match="size-class"):
        run_on_worker(plan_swaps(wl, wl.default_schedule(), wl.capacity), g, feeds, state)


def test_worker_device_refuses_a_pool_above_its_memory_limit(local_backend, mlp_case):
    from spartan.dnn.swap.workers import inplace_slack, run_on_worker

    g, wl, feeds, state, _ = mlp_case
    plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).random(random.Random(3)))
    fits = plan.pool_bytes + inplace_slack(plan)
    with pytest.raises(ValueError, match="does not fit memory_limit"):
        run_on_worker(plan, g, feeds, state, backend=local_backend, memory_limit=fits - 1)
    got = run_on_worker(plan, g, feeds, state, backend=local_backend, memory_limit=fits)
    assert got.peak_device_bytes <= fits


def test_executor_catches_a_broken_plan(mlp_case):
    g, wl, feeds, state, _ = mlp_case
    plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).random(random.Random(0)))
    broken = SwapPlan(**{**plan.__dict__})
    broken.deps = [[] for _ in plan.deps]  # drop every control edge
    broken.release = [list(r) for r in plan.release]
    first_release = next(i for i, r in enumerate(broken.release) if r)
    broken.release[first_release] = []  # an object is never given back
    with pytest.raises(RuntimeError, match="plan error"):
        run_emulated(broken, g, feeds, state, iterations=1)


def test_executor_rejects_byte_budget_plans_and_oversized_pools(mlp_case):
    g, wl, feeds, state, _ = mlp_case
    with pytest.raises(ValueError, match="size-class"):
        run_emulated(plan_swaps(wl, wl.default_schedule(), wl.capacity), g, feeds, state)
    too_big = PoolModel(wl.with_capacity(1e12)).unlimited()
    plan = plan_swaps(wl.with_capacity(1e12), wl.default_schedule(), too_big)
    plan.workload = wl
    with pytest.raises(ValueError, match="exceeds the device"):
        run_emulated(plan, g, feeds, state)


def test_unsupported_op_type_is_a_clear_error():
    from spartan.dnn.swap.kernels import run_kernel

    with pytest.raises(ValueError, match="no executor kernel"):
        run_kernel(np, "conv3d", [], {})


@pytest.mark.gpu
def test_cupy_executor_trains_beyond_the_memory_limit(mlp_case):
    cupy_or_skip()
    g, wl, feeds, state, ref = mlp_case
    plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).random(random.Random(0)))
    # the pool also holds CuPy's own workspace (cuBLAS) beside the planned tensors
    got = run_cupy(plan, g, feeds, state, iterations=3, memory_limit=wl.capacity + (256 << 20))
    for a, b in zip(ref.outputs, got.outputs, strict=True):
        np.testing.assert_allclose(a["loss:out"], b["loss:out"], rtol=1e-4)
    for k in ref.state:
        np.testing.assert_allclose(ref.state[k], got.state[k], rtol=1e-4, atol=1e-6)
    assert got.peak_live_bytes <= wl.capacity
