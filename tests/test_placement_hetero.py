"""Heterogeneous devices (HEFT's setting) and ParDNN's refinement on the emulated schedule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.dnn.hardware import V100, XEON
from spartan.dnn.placement import (
    Machine,
    TaskGraph,
    exhaustive,
    heft,
    place,
    random_dnn,
    simulate_placement,
    to_tasks,
)
from spartan.dnn.placement.generator import small_dag
from spartan.dnn.placement.pardnn import schedule_moves, schedule_path
from spartan.dnn.simulator import simulate as shared_simulate


def _small_graph(rng: np.random.Generator, n: int) -> TaskGraph:
    return small_dag(rng, n, varied_sizes=False)


def test_machine_speed_is_validated_and_mixed_uses_presets() -> None:
    with pytest.raises(ValueError, match="speed has 1 entries for 2 devices"):
        Machine(2, memory=1e9, link_bw=1e9, speed=(1.0,))
    with pytest.raises(ValueError, match="positive"):
        Machine(2, memory=1e9, link_bw=1e9, speed=(1.0, 0.0))
    m = Machine.mixed([XEON, V100])
    assert m.heterogeneous and m.speed is not None
    assert m.speed[1] == pytest.approx(V100.flops / XEON.flops)
    assert m.memory == min(XEON.memory, V100.memory) and m.link_bw == XEON.host_bw
    assert not Machine(2, memory=1e9, link_bw=1e9, speed=(2.0, 2.0)).heterogeneous


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), data=st.data())
def test_speeds_agree_with_shared_simulator(seed: int, data: st.DataObject) -> None:
    rng = np.random.default_rng(seed)
    tg = _small_graph(rng, 8)
    speed = tuple(data.draw(st.lists(st.floats(0.25, 8.0), min_size=3, max_size=3)))
    machine = Machine(3, memory=1e12, link_bw=4e9, speed=speed)
    a = rng.integers(0, 3, tg.n)
    ours = simulate_placement(tg, a, machine)
    tasks, buffers = to_tasks(tg, a, machine)
    ref = shared_simulate(tasks, policy="fifo", buffers=buffers)
    assert ours.makespan == pytest.approx(ref.makespan)
    # Each node runs for its time at its device's speed.
    assert np.allclose(ours.end - ours.start, tg.comp / np.asarray(speed)[a])


def test_heft_uses_device_speeds_and_matches_exhaustive() -> None:
    # A fork of two heavy branches: on identical devices they run in parallel; with a 4x
    # faster device, the transfer to the slow one costs more than running both on the fast one.
    tg = TaskGraph(list("abc"), [1.0, 4.0, 4.0], [8, 8, 8], [0, 0, 0], [(0, 1, 8), (0, 2, 8)])
    fast = Machine(2, memory=100, link_bw=8.0, latency=0.0, speed=(1.0, 4.0))
    oblivious = heft(tg, Machine(2, memory=100, link_bw=8.0, latency=0.0))
    aware = heft(tg, fast)
    best, info = exhaustive(tg, fast)
    assert info["evaluated"] == 2**3  # no renaming symmetry on a heterogeneous machine
    assert aware.tolist() == best.tolist() == [1, 1, 1]
    assert simulate_placement(tg, aware, fast).makespan == pytest.approx(info["makespan"])
    assert simulate_placement(tg, oblivious, fast).makespan > 2 * info["makespan"]


def test_heft_on_heterogeneous_devices_beats_speed_oblivious_heft() -> None:
    rng = np.random.default_rng(7)
    aware, oblivious = [], []
    for _ in range(6):
        tg = _small_graph(rng, 7)
        machine = Machine(2, memory=1e12, link_bw=12e9, speed=(1.0, 4.0))
        _, info = exhaustive(tg, machine)
        best = info["makespan"]
        aware.append(simulate_placement(tg, heft(tg, machine), machine).makespan / best)
        blind = heft(tg, Machine(2, memory=1e12, link_bw=12e9))
        oblivious.append(simulate_placement(tg, blind, machine).makespan / best)
    assert min(aware) >= 1.0 - 1e-12  # nothing beats the exhaustive optimum
    assert np.mean(aware) < np.mean(oblivious)
    assert np.mean(aware) < 1.5


def test_schedule_path_is_a_chain_that_explains_the_makespan() -> None:
    tg = random_dnn(120, seed=1)
    machine = Machine(2, memory=1e12, link_bw=2e9)
    a = place(tg, machine, "round_robin").assign
    out = simulate_placement(tg, a, machine)
    path = schedule_path(tg, a, out)
    assert out.end[path[0]] == pytest.approx(out.makespan)
    assert out.start[path[-1]] == pytest.approx(0.0)
    assert len(set(path)) == len(path)
    # Each step is an input or the device's previous node: it ends no later than the next starts.
    for later, earlier in zip(path, path[1:]):
        assert out.end[earlier] <= out.start[later] + 1e-12
        assert earlier in tg.preds[later] or a[earlier] == a[later]


def test_schedule_moves_split_contended_branches() -> None:
    # Two independent heavy branches on one device: the device, not the data, sets the
    # makespan; moving one branch head off the path halves the makespan.
    tg = TaskGraph(
        list("sabt"),
        [0.0, 4.0, 4.0, 0.0],
        [8] * 4,
        [0] * 4,
        [(0, 1, 8), (0, 2, 8), (1, 3, 8), (2, 3, 8)],
    )
    machine = Machine(2, memory=100, link_bw=8.0, latency=0.0)
    a0 = np.zeros(4, dtype=np.int64)
    a, moves, _ = schedule_moves(tg, a0, machine)
    assert moves >= 1 and sorted(a[1:3].tolist()) == [0, 1]
    assert (
        simulate_placement(tg, a, machine).makespan < simulate_placement(tg, a0, machine).makespan
    )


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_schedule_moves_never_slow_a_placement_down(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tg = _small_graph(rng, 9)
    machine = Machine(3, memory=1e12, link_bw=4e9)
    a0 = rng.integers(0, 3, tg.n)
    a, _, sims = schedule_moves(tg, a0, machine, budget=30)
    assert sims <= 30
    assert (
        simulate_placement(tg, a, machine).makespan
        <= simulate_placement(tg, a0, machine).makespan + 1e-15
    )


@pytest.mark.parametrize("seed", [1, 4])
def test_pardnn_refinement_shortens_the_step(seed: int) -> None:
    tg = random_dnn(150, seed=seed)
    machine = Machine(2, memory=1e12, link_bw=2e9)
    stats: dict = {}
    refined = place(tg, machine, "pardnn", stats=stats).makespan
    unrefined = place(tg, machine, "pardnn", refinement=False, schedule_refinement=False).makespan
    assert stats["schedule_moves"] > 0
    assert refined < 0.97 * unrefined
