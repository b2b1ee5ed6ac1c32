"""One training step of an imported graph under a swap plan, for the torch tests."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from spartan.dnn.graph import Graph


def cupy_or_skip() -> Any:
    """CuPy, or skip the test: no CuPy, or no CUDA device."""
    import pytest

    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cp.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cp


def swapped_step(graph: Graph, values: dict[str, np.ndarray]) -> Any:
    """``graph``'s step run (emulated device) under a swap plan of a random pool with
    room for every tensor: the parameters are its state, the rest its feeds."""
    from spartan.dnn.swap.executor import run_emulated

    plan, feeds, state = roomy_swap_plan(graph, values)
    return run_emulated(plan, graph, feeds, state)


def roomy_swap_plan(graph: Graph, values: dict[str, np.ndarray]) -> tuple[Any, dict, dict]:
    """A swap plan of a random pool with room for every tensor, and ``values`` split
    into its feeds and its state (the parameters)."""
    from spartan.dnn.swap import PoolModel, Workload, plan_swaps

    state = {t.name: values[t.name] for t in graph.params()}
    feeds = {k: v for k, v in values.items() if k not in state}
    total = sum(t.nbytes for t in graph.tensors.values())
    wl = Workload.from_graph(
        graph,
        op_times={o.name: 1.0 for o in graph.ops},
        capacity=total,
        host_bw=1.0,
        keep=["loss:out"],
    )
    plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).random(random.Random(0)))
    return plan, feeds, state


def worker_swapped_step(graph: Graph, values: dict[str, np.ndarray], backend: Any) -> Any:
    """``graph``'s step on spartan worker 0 of ``backend`` as the device, its memory
    limited to the smallest valid pool (plus one op's in-place updates), so that it must
    swap to the driver's memory; returns the run and the plan."""
    from spartan.dnn.swap import PoolModel, Workload, plan_swaps
    from spartan.dnn.swap.workers import inplace_slack, run_on_worker

    state = {t.name: values[t.name] for t in graph.params()}
    feeds = {k: v for k, v in values.items() if k not in state}
    wl = Workload.from_graph(
        graph, op_times={o.name: 1.0 for o in graph.ops}, capacity=1.0, host_bw=1.0,
        keep=["loss:out"],
    )  # fmt: skip
    pm = PoolModel(wl)
    wl = wl.with_capacity(pm.bytes(pm.smallest))
    plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).smallest)
    limit = int(wl.capacity) + inplace_slack(plan)
    return run_on_worker(plan, graph, feeds, state, backend=backend, memory_limit=limit), plan
