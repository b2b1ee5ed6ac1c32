"""Placement planners: simulator model, ParDNN, HEFT, GA, baselines, exhaustive search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.dnn.placement import (
    Machine,
    NodeKind,
    TaskGraph,
    contiguous_split,
    exhaustive,
    genetic,
    heft,
    initial_mappings,
    pardnn,
    place,
    random_dnn,
    round_robin,
    simulate_placement,
    to_tasks,
)
from spartan.dnn.placement.exhaustive import canonical_assignments
from spartan.dnn.placement.fenwick import Fenwick
from spartan.dnn.placement.levels import critical_path
from spartan.dnn.placement.surrogate import Surrogate, kendall_distance
from spartan.dnn.simulator import simulate as shared_simulate


@st.composite
def small_graphs(draw: st.DrawFn, max_nodes: int = 10) -> TaskGraph:
    """Random DAGs numbered topologically, with residual weights and in-place updates."""
    n = draw(st.integers(2, max_nodes))
    comp = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    mem = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    edges = [
        (i, j, draw(st.integers(0, 60)))
        for j in range(1, n)
        for i in range(j)
        if draw(st.booleans()) and draw(st.booleans())
    ]
    kind = [NodeKind.NORMAL] * n
    anchor = [-1] * n
    if n >= 3 and draw(st.booleans()):
        kind[0] = NodeKind.RESIDUAL  # a weight, updated in place by the last node
        kind[n - 1] = NodeKind.REFERENCE
        anchor[n - 1] = 0
    return TaskGraph([f"v{i}" for i in range(n)], np.array(comp) / 4, mem, kind, edges, anchor)


@settings(max_examples=60, deadline=None)
@given(small_graphs(), st.integers(1, 3), st.data())
def test_simulate_agrees_with_shared_simulator(tg: TaskGraph, k: int, data: st.DataObject) -> None:
    a = tg.colocate(
        np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=tg.n, max_size=tg.n)))
    )
    machine = Machine(k, memory=1e9, link_bw=20.0, latency=0.05)
    ours = simulate_placement(tg, a, machine)
    tasks, buffers = to_tasks(tg, a, machine)
    ref = shared_simulate(tasks, policy="fifo", buffers=buffers)
    assert ours.makespan == pytest.approx(ref.makespan)
    assert ours.peak.tolist() == [ref.peak_memory.get(d, 0) for d in range(k)]
    for i, name in enumerate(t.name for t in tasks[: tg.n]):
        assert ours.start[i] == pytest.approx(ref.start[name])


@settings(max_examples=40, deadline=None)
@given(small_graphs(), st.data())
def test_renaming_devices_changes_nothing(tg: TaskGraph, data: st.DataObject) -> None:
    # Exhaustive search enumerates placements up to device renaming; this is why it may.
    a = tg.colocate(np.array(data.draw(st.lists(st.integers(0, 2), min_size=tg.n, max_size=tg.n))))
    perm = np.array(data.draw(st.permutations([0, 1, 2])))
    machine = Machine(3, memory=1e9, link_bw=20.0, latency=0.05)
    out, renamed = simulate_placement(tg, a, machine), simulate_placement(tg, perm[a], machine)
    assert renamed.makespan == out.makespan
    assert renamed.peak[perm].tolist() == out.peak.tolist()


@settings(max_examples=60, deadline=None)
@given(small_graphs(), st.integers(1, 4))
def test_makespan_bounded_below_by_critical_path(tg: TaskGraph, k: int) -> None:
    machine = Machine(k, memory=1e9, link_bw=20.0)
    _, cp = critical_path(tg, [0.0] * tg.m)
    for a in (round_robin(tg, machine), heft(tg, machine), pardnn(tg, machine)):
        out = simulate_placement(tg, a, machine)
        assert out.makespan >= cp - 1e-9
        # One device never waits: its makespan is the total work.
    assert simulate_placement(tg, np.zeros(tg.n, int), machine).makespan == pytest.approx(
        tg.comp.sum()
    )


def test_single_device_memory_of_a_chain() -> None:
    # w (resident 100) -> a (out 10) -> b (out 20) -> c (out 5): peak is w + b's input + output.
    tg = TaskGraph(
        ["w", "a", "b", "c"],
        [0, 1, 1, 1],
        [100, 10, 20, 5],
        [NodeKind.RESIDUAL, 0, 0, 0],
        [(0, 1, 100), (1, 2, 10), (2, 3, 20)],
    )
    out = simulate_placement(tg, [0, 0, 0, 0], Machine(1, memory=1e3, link_bw=1.0))
    assert out.peak.tolist() == [130]
    assert out.makespan == 3.0


def test_invalid_inputs_raise() -> None:
    with pytest.raises(ValueError, match="topological"):
        TaskGraph(["a", "b"], [1, 1], [1, 1], [0, 0], [(1, 0, 4)])
    with pytest.raises(ValueError, match="anchor"):
        TaskGraph(["a", "b"], [1, 1], [1, 1], [0, NodeKind.REFERENCE], [(0, 1, 4)])
    tg = TaskGraph(
        ["w", "u"], [0, 1], [8, 0], [NodeKind.RESIDUAL, NodeKind.REFERENCE], [(0, 1, 8)], [-1, 0]
    )
    m = Machine(2, memory=100, link_bw=1.0)
    with pytest.raises(ValueError, match="anchor"):
        simulate_placement(tg, [0, 1], m)
    with pytest.raises(ValueError, match="device ids"):
        simulate_placement(tg, [0, 2], m)
    with pytest.raises(ValueError, match="unknown placement method"):
        place(tg, m, "magic")
    with pytest.raises(ValueError):
        Machine(0, memory=1, link_bw=1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 19), st.floats(-5, 5)), max_size=30),
    st.integers(0, 20),
    st.integers(0, 20),
)
def test_fenwick_matches_prefix_sums(updates: list[tuple[int, float]], lo: int, hi: int) -> None:
    f, plain = Fenwick(20), np.zeros(20)
    for i, v in updates:
        f.add(i, v)
        plain[i] += v
    assert f.range_sum(lo, hi) == pytest.approx(plain[lo:hi].sum() if hi > lo else 0.0, abs=1e-9)


def test_canonical_assignments_count_set_partitions() -> None:
    # Placements of 6 nodes on 3 identical devices up to renaming: S(6,1)+S(6,2)+S(6,3) = 1+31+90.
    vecs = list(map(tuple, canonical_assignments(6, 3)))
    assert len(vecs) == 122 == len(set(vecs))


def _tight_machine(tg: TaskGraph, k: int, factor: float = 2.0) -> tuple[Machine, float]:
    one = simulate_placement(tg, np.zeros(tg.n, int), Machine(1, memory=1e18, link_bw=12e9))
    # Aggregate memory ``factor`` x the one-device peak, but never enough for one device alone.
    memory = min(factor / k, 0.8) * float(one.peak[0])
    return Machine(k, memory=memory, link_bw=12e9), one.makespan


@pytest.mark.parametrize("k", [2, 4])
def test_pardnn_fits_memory_that_forces_partitioning_and_beats_round_robin(k: int) -> None:
    tg = random_dnn(1500, seed=3)
    machine, _ = _tight_machine(tg, k)
    assert not simulate_placement(tg, np.zeros(tg.n, int), machine).feasible(machine)
    stats: dict = {}
    # A small schedule-refinement budget keeps this test fast; memory repair is its subject.
    p = place(tg, machine, "pardnn", stats=stats, schedule_budget=10)
    assert stats["memory_feasible"]
    assert (p.peak <= machine.limit).all()
    assert p.makespan <= place(tg, machine, "round_robin").makespan


def test_pardnn_on_zoo_graph_respects_limits() -> None:
    from spartan.dnn.hardware import V100
    from spartan.dnn.zoo import vgg16

    tg = TaskGraph.from_graph(vgg16(32), V100)
    machine, single = _tight_machine(tg, 4)
    p = place(tg, machine, "pardnn")
    assert p.feasible and (p.peak <= machine.limit).all()
    assert p.makespan <= 1.05 * single


def test_planning_is_deterministic() -> None:
    tg = random_dnn(400, seed=7)
    machine, _ = _tight_machine(tg, 4, factor=2.5)
    assert (pardnn(tg, machine) == pardnn(tg, machine)).all()
    assert (heft(tg, machine) == heft(tg, machine)).all()
    kw = dict(population=10, generations=3, seed=5)
    assert (genetic(tg, machine, **kw) == genetic(tg, machine, **kw)).all()


@settings(max_examples=15, deadline=None)
@given(small_graphs(max_nodes=8), st.integers(2, 3))
def test_heuristics_never_beat_exhaustive(tg: TaskGraph, k: int) -> None:
    machine = Machine(k, memory=1e9, link_bw=20.0, latency=0.05)
    best, info = exhaustive(tg, machine)
    assert simulate_placement(tg, best, machine).makespan == pytest.approx(info["makespan"])
    for method in ("pardnn", "heft", "round_robin", "contiguous"):
        assert place(tg, machine, method).makespan >= info["makespan"] - 1e-9
    # Elitism: a GA seeded with HEFT's placement never returns anything slower.
    ga = place(tg, machine, "genetic", population=8, generations=3, seeds=[heft(tg, machine)])
    assert ga.makespan <= place(tg, machine, "heft").makespan + 1e-9


def test_genetic_finds_the_exhaustive_optimum_on_a_small_graph() -> None:
    # Two independent chains joined at the end: the optimum runs them on different devices.
    edges = [(0, 1, 8), (1, 2, 8), (3, 4, 8), (4, 5, 8), (2, 6, 8), (5, 6, 8), (6, 7, 8)]
    tg = TaskGraph([f"v{i}" for i in range(8)], [1, 2, 3, 1, 2, 3, 1, 1], [8] * 8, [0] * 8, edges)
    machine = Machine(2, memory=1e6, link_bw=64.0, latency=0.0)
    _, info = exhaustive(tg, machine)
    assert info["evaluated"] == 2**7
    ga = place(tg, machine, "genetic", population=16, generations=20, seed=1)
    assert ga.makespan == pytest.approx(info["makespan"])
    assert info["makespan"] < simulate_placement(tg, np.zeros(8, int), machine).makespan


def test_initial_mappings_and_baselines_keep_references_on_anchor() -> None:
    tg = random_dnn(200, seed=1)
    machine = Machine(3, memory=1e12, link_bw=1e10)
    refs = np.flatnonzero(tg.kind == NodeKind.REFERENCE)
    maps = initial_mappings(tg, machine)
    assert any((m == 0).all() for m in maps) and len({m.tobytes() for m in maps}) == len(maps)
    for a in (*maps, contiguous_split(tg, machine), round_robin(tg, machine)):
        assert (a[refs] == a[tg.anchor[refs]]).all()
    assert set(contiguous_split(tg, machine).tolist()) == {0, 1, 2}


def test_surrogate_ranks_and_genetic_reports_kendall() -> None:
    rng = np.random.default_rng(0)
    genomes = rng.integers(0, 2, (60, 5))
    y = 1.0 + genomes @ np.array([1.0, 2.0, 0.5, 0.0, 3.0])
    s = Surrogate(2, alpha=1e-6).fit(genomes, y)
    assert kendall_distance(y, s.predict(genomes)) < 0.05
    assert kendall_distance(np.arange(6.0), -np.arange(6.0)) == 1.0
    tg = random_dnn(80, seed=0)
    stats: dict = {}
    genetic(
        tg,
        Machine(2, memory=1e12, link_bw=1e10),
        surrogate=True,
        samples=60,
        population=10,
        generations=3,
        stats=stats,
    )
    assert 0.0 <= stats["kendall"] <= 1.0


def test_from_graph_anchors_updates_to_weights() -> None:
    from spartan.dnn.hardware import V100
    from spartan.dnn.zoo import mlp

    g = mlp(16, [32, 32, 4])
    tg = TaskGraph.from_graph(g, V100)
    refs = np.flatnonzero(tg.kind == NodeKind.REFERENCE)
    assert {tg.names[i] for i in refs} == {o.name for o in g.ops if o.type == "sgd"}
    assert {tg.names[tg.anchor[i]] for i in refs} == {t.name for t in g.params()}
    assert tg.resident_bytes() == sum(t.nbytes for t in g.params())


@settings(max_examples=40, deadline=None)
@given(small_graphs(max_nodes=12), st.integers(1, 4))
def test_slicing_covers_every_node_once_and_starts_with_a_critical_path(
    tg: TaskGraph, k: int
) -> None:
    from spartan.dnn.placement.pardnn import slice_graph

    comm = [0.01 * b for b in tg.nbytes.tolist()]
    sl = slice_graph(tg, k, comm)
    clusters = sl.primaries + sl.secondaries
    assert sorted(v for c in clusters for v in c) == list(range(tg.n))
    assert len(sl.primaries) == min(k, len(clusters))
    for path in clusters:  # every cluster is a path of the graph
        assert all(b in tg.succs[a] for a, b in zip(path, path[1:]))
    _, length = critical_path(tg, comm)
    first = sl.primaries[0]
    edge = {(s, d): e for e, (s, d) in enumerate(zip(tg.src.tolist(), tg.dst.tolist()))}
    weight = tg.comp[first].sum() + sum(comm[edge[a, b]] for a, b in zip(first, first[1:]))
    assert weight == pytest.approx(length)


def test_generator_is_deterministic_and_shaped_like_training() -> None:
    for size in (100, 3000):
        tg = random_dnn(size, seed=4)
        assert 0.8 * size <= tg.n <= 1.2 * size
        refs = np.flatnonzero(tg.kind == NodeKind.REFERENCE)
        assert len(refs) == int((tg.kind == NodeKind.RESIDUAL).sum()) > 0
        assert (tg.kind[tg.anchor[refs]] == NodeKind.RESIDUAL).all()
        again = random_dnn(size, seed=4)
        assert (again.src == tg.src).all() and (again.comp == tg.comp).all()
    assert not np.array_equal(random_dnn(300, seed=1).comp, random_dnn(300, seed=2).comp)
    with pytest.raises(ValueError):
        random_dnn(3)
