"""SoyBean tiling planner: conversion costs, exact checks, DP == exhaustive, k cuts."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spartan.dnn.graph import Phase
from spartan.dnn.tiling import (
    BASELINES,
    RED,
    REP,
    aligned_forms,
    build_problem,
    conversion,
    evaluate,
    k_cuts,
    k_cuts_exhaustive,
    one_cut,
    one_cut_exhaustive,
    plan,
)
from spartan.dnn.tiling.forms import graph_shapes
from spartan.dnn.zoo import Net, alexnet, mlp, small_cnn

# ---- conversion costs, derived by counting moved elements ----------------------------


def _owned(tiling: int, shape: tuple[int, int], dev: int) -> set:
    cells = set(itertools.product(range(shape[0]), range(shape[1])))
    if tiling == REP:
        return cells
    half = shape[tiling] // 2
    return {c for c in cells if (c[tiling] >= half) == bool(dev)}


@pytest.mark.parametrize("src", [0, 1, REP, RED])
@pytest.mark.parametrize("dst", [0, 1, REP])
def test_conversion_costs_match_brute_force_count(src, dst):
    shape = (4, 6)
    moved = 0
    for dev in (0, 1):
        need = _owned(dst, shape, dev)
        if src == RED:  # every needed element also needs the other device's partial sum
            moved += len(need)
        else:
            moved += len(need - _owned(src, shape, dev))
    assert conversion(src, dst, 24.0) == moved


# ---- the exact checks ---------------------------------------------------------


@pytest.mark.parametrize(
    "batch,hidden,expected",
    [(400, 300, 540000), (300, 400, 800000), (64, 1024, 458752), (1024, 64, 24576)],
)
def test_soybean_exact_mlp_checks(batch, hidden, expected):
    g = mlp(batch, [hidden] * 4, activation=None, bias=False, loss=False)
    assert len(g.tensors) == 13  # x0..x3, W1..W3, dx1..dx3, dW1..dW3
    fixed = {"x": 0, "dfc3:out": 0}
    assert one_cut(g, fixed=fixed, unit="elements").cost == expected
    assert one_cut_exhaustive(g, fixed=fixed, unit="elements").cost == expected


def test_batch_vs_hidden_shapes_the_optimum():
    fixed = {"x": 0, "dfc3:out": 0}
    big_batch = one_cut(mlp(1024, [64] * 4, None, False, False), fixed=fixed, unit="elements")
    assert all(big_batch.tiling[f"fc{i}.w"] in (REP, 0) for i in (2, 3))
    assert (
        big_batch.cost
        == BASELINES["data"](mlp(1024, [64] * 4, None, False, False), 1, "elements", fixed).total
    )
    wide = one_cut(mlp(64, [1024] * 4, None, False, False), fixed=fixed, unit="elements")
    assert all(wide.tiling[f"fc{i}.w"] != REP for i in (1, 2, 3))  # weights partitioned


def test_paper_16_gpu_hybrid_example_arithmetic():
    # SoyBean §2.2 counts parameter-server style, 2 * n * S bytes (float32)
    params = 5 * 300 * 300 * 4 / 1e6 * 1.0  # 5 layers of 300x300 -> 1.8 MB
    acts = 5 * 400 * 300 * 4 / 1e6  # 2.4 MB
    assert (round(params, 1), round(acts, 1)) == (1.8, 2.4)
    data, model = 2 * 16 * params, 2 * 16 * acts
    hybrid = 2 * 4 * params + 4 * (2 * 4 * acts / 4)
    assert (round(data, 1), round(model, 1), round(hybrid, 1)) == (57.6, 76.8, 33.6)


# ---- DP equals exhaustive search -----------------------------------------------------


@st.composite
def small_graphs(draw):
    """Random small training graphs: dense/relu/residual/tanh layers over even sizes."""
    batch = draw(st.sampled_from([2, 4, 8, 16, 64]))
    width = draw(st.sampled_from([2, 4, 16, 32]))
    net = Net("random")
    h = net.input("x", (batch, width))
    first = None
    for i in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["dense", "dense_bias", "relu", "residual", "tanh"]))
        if kind.startswith("dense") or first is None:
            out = draw(st.sampled_from([2, 4, 16, 32]))
            h = net.dense(h, out, bias=kind == "dense_bias", name=f"fc{i}")
            first = first or h
        elif kind == "residual" and net.shape(h) == net.shape(first) and h != first:
            h = net.add(h, first, name=f"res{i}")
        else:
            h = net.unary("relu" if kind == "relu" else "tanh", h, name=f"act{i}")
    g = net.build(output=h)
    return g, {"x": 0, f"d{h}": 0}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_graphs(), st.sampled_from(["bfs", "minfill"]))
def test_dp_equals_exhaustive_on_random_graphs(case, order):
    g, fixed = case
    prob = build_problem(g, fixed=fixed, unit="elements")
    assume(np.prod([len(d) for d in prob.domains.values()], dtype=float) <= 300_000)
    dp = one_cut(g, fixed=fixed, unit="elements", order=order)
    ex = one_cut_exhaustive(g, fixed=fixed, unit="elements")
    assert dp.exact
    assert dp.cost == pytest.approx(ex.cost)
    assert prob.cost(dp.tiling) == pytest.approx(dp.cost)  # the backtracked tiling costs that


def test_op_tables_agree_with_direct_costing():
    g = small_cnn(4, image=8, channels=(4,))
    prob = build_problem(g, unit="bytes")
    rng = np.random.default_rng(0)
    for op in g.ops:
        ts = prob.tensors_of[op.name]
        for _ in range(5):
            pos = tuple(int(rng.integers(len(prob.domains[t]))) for t in ts)
            tiling = {t: prob.domains[t][p] for t, p in zip(ts, pos)}
            assert prob.tables[op.name][pos] == pytest.approx(prob.op_cost(op, tiling)[0])


# ---- k cuts --------------------------------------------------------------------------


@pytest.mark.parametrize("batch,hidden", [(400, 300), (64, 1024), (32, 32)])
@pytest.mark.parametrize("k", [2, 3])
def test_k_cuts_match_exhaustive_on_one_layer(batch, hidden, k):
    g = mlp(batch, [hidden, hidden], activation=None, bias=False, loss=False)
    fixed = {"x": 0, "dfc1:out": 0}
    greedy = k_cuts(g, k, fixed, "elements")
    best = k_cuts_exhaustive(g, k, fixed, "elements")  # optimum of the paper's model
    assert greedy.paper_total == pytest.approx(best.paper_total)
    d = greedy.deltas
    assert all(d[i] <= 2 * d[i - 1] for i in range(1, k))  # Theorem 3 on this graph
    assert greedy.paper_total == sum(2**j * x for j, x in enumerate(d))  # Theorem 1
    assert greedy.total >= greedy.paper_total  # the bytes really moved: never fewer


def test_exhaustive_is_a_lower_bound_of_greedy():
    g = mlp(64, [32, 32, 16], activation=None, bias=False, loss=False)
    fixed = {"x": 0, "dfc2:out": 0, "fc2.w": REP}
    best, greedy = k_cuts_exhaustive(g, 2, fixed, "elements"), k_cuts(g, 2, fixed, "elements")
    assert best.paper_total <= greedy.paper_total


def test_plan_tilings_and_breakdown_are_consistent():
    g = mlp(256, [512, 512, 10])
    p = plan(g, 8)
    assert p.devices == 8 and len(p.cuts) == 3
    assert sum(p.breakdown().values()) == pytest.approx(p.total)
    for name in g.tensors:
        pieces, replicas = p.pieces(name)
        assert int(np.prod(pieces)) * replicas == 8
        assert len(p.tiling(name).split()) == 3
    again = evaluate(g, p.cuts)
    assert again.total == pytest.approx(p.total)
    assert "soybean" in p.summary()
    with pytest.raises(ValueError):
        plan(g, 6)


@pytest.mark.parametrize("devices", [2, 4, 8])
def test_planner_never_worse_than_baselines(devices):
    g = alexnet(64)
    p = plan(g, devices)
    for name, base in BASELINES.items():
        assert p.total <= base(g, devices.bit_length() - 1).total * (1 + 1e-9), name


def test_data_parallel_baseline_reduces_every_weight_gradient():
    g = mlp(32, [64, 64, 10])
    dp = BASELINES["data"](g, 1, "elements")
    # 2 devices: reduce-scatter + all-gather of every parameter: 2 * params elements
    assert dp.total == 2 * g.param_count() + 2  # + all-reduce of the scalar loss
    for p_ in g.params():
        assert dp.cuts[0][p_.name] == REP


def test_forms_cover_every_zoo_op_type():
    g = small_cnn(4, image=8)
    shapes = graph_shapes(g)
    for op in g.ops:
        forms = aligned_forms(op, shapes)
        assert forms
        for f in forms:
            assert len(f.ins) == len(op.inputs) and len(f.outs) == len(op.outputs)
    assert all(op.phase in Phase for op in g.ops)


def test_bad_input():
    g = mlp(4, [3, 2])
    with pytest.raises(ValueError):
        one_cut(g, unit="parsecs")
    with pytest.raises(KeyError):
        one_cut(g, fixed={"nope": 0})
    with pytest.raises(ValueError):
        one_cut(g, fixed={"fc1.w": 0})  # axis 0 of a (3, 2) weight is odd
    with pytest.raises(ValueError):
        k_cuts(g, -1)
