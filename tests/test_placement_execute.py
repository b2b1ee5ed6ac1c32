"""A placed training step on spartan workers equals the serial NumPy step."""

from __future__ import annotations

import numpy as np
import pytest

import spartan
from spartan.dnn.hardware import V100
from spartan.dnn.placement import Machine, TaskGraph, place, simulate_placement
from spartan.dnn.placement.execute import (
    calibrate,
    profile_ops,
    random_values,
    run_serial,
    run_step,
    schedule_order,
    simulated_step,
)
from spartan.dnn.zoo import mlp


@pytest.fixture()
def graph_and_values():
    g = mlp(32, [64, 128, 128, 10])
    return g, random_values(g, seed=1)


def _check_equal(run_outputs: dict, ref: dict) -> None:
    assert set(run_outputs) == set(ref)
    for name, want in ref.items():
        np.testing.assert_allclose(run_outputs[name], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["pardnn", "round_robin", "heft"])
def test_placed_step_matches_serial_numpy_on_local_workers(graph_and_values, method: str) -> None:
    g, values = graph_and_values
    tg = TaskGraph.from_graph(g, V100)
    one = simulate_placement(tg, np.zeros(tg.n, int), Machine(1, memory=1e18, link_bw=V100.link_bw))
    machine = Machine.of(V100, 3, memory=0.6 * float(one.peak[0]))
    p = place(tg, machine, method)
    spartan.init(backend="local", num_workers=3)
    try:
        run = run_step(g, tg, p.assign, values)
    finally:
        spartan.shutdown()
    ref, _ = run_serial(g, values)
    _check_equal(run.outputs, ref)
    # The updated weights really changed, and every op ran as one task.
    assert not np.allclose(ref["fc1.w"], values["fc1.w"])
    assert run.tasks == len(g.ops)
    used = set(p.assign.tolist())
    assert all(run.peak_bytes[d] > 0 for d in used)
    if len(used) > 1:
        assert run.bytes_moved > 0


def test_placed_step_on_ray_workers_and_simulated_time(ray_backend, graph_and_values) -> None:
    g, values = graph_and_values
    tg = TaskGraph.from_graph(g, V100)
    p = place(tg, Machine.of(V100, 2), "round_robin")
    run = run_step(g, tg, p.assign, values, backend=ray_backend)
    ref, _ = run_serial(g, values)
    _check_equal(run.outputs, ref)
    seconds = profile_ops(g, values, ray_backend, repeats=1)
    assert len(seconds) == len(g.ops) and min(seconds) >= 0
    sim = simulated_step(g, p.assign, seconds, calibrate(ray_backend, nbytes=1 << 20, repeats=3))
    assert sim.makespan >= sum(seconds) / 2 and len(sim.peak) == 2


def test_run_step_rejects_bad_placements(graph_and_values) -> None:
    g, values = graph_and_values
    tg = TaskGraph.from_graph(g, V100)
    spartan.init(backend="local", num_workers=2)
    try:
        with pytest.raises(ValueError, match="devices"):
            run_step(g, tg, np.full(tg.n, 2), values)
        with pytest.raises(ValueError, match="no values"):
            run_step(g, tg, np.zeros(tg.n, int), {})
    finally:
        spartan.shutdown()


def test_placed_step_sent_in_schedule_order_matches_serial(graph_and_values) -> None:
    g, values = graph_and_values
    tg = TaskGraph.from_graph(g, V100)
    machine = Machine.of(V100, 2)
    p = place(tg, machine, "heft")
    order = schedule_order(tg, simulate_placement(tg, p.assign, machine))
    assert sorted(order) == list(range(len(g.ops)))
    spartan.init(backend="local", num_workers=2)
    try:
        run = run_step(g, tg, p.assign, values, order=order)
        with pytest.raises(ValueError, match="before the op making its input"):
            run_step(g, tg, p.assign, values, order=order[::-1])
        with pytest.raises(ValueError, match="exactly once"):
            run_step(g, tg, p.assign, values, order=order[:-1])
    finally:
        spartan.shutdown()
    ref, _ = run_serial(g, values)
    _check_equal(run.outputs, ref)
