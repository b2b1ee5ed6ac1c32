"""k-cut tiling, honestly: the executor's bytes as the cost, the true k-cut optimum, and
how far the paper's recursion (Algorithm 1) is from it on random small graphs."""

import itertools

import numpy as np
import pytest

from spartan.backend.local import LocalBackend
from spartan.dnn.execute_tiling import execute, random_values, region
from spartan.dnn.tiling import BASELINES, RED, REP, evaluate, k_cuts, k_cuts_exhaustive, plan
from spartan.dnn.tiling.exact import (
    box,
    cuts_to_homes,
    exhaustive,
    home_sequences,
    homes_to_cuts,
    improve,
    joint_optimum,
    joint_problem,
    moved,
    random_graph,
)
from spartan.dnn.zoo import mlp, small_cnn

MLP2 = dict(activation=None, bias=False, loss=False)


def brute_moved(shape, src, dst):
    """Elements each device needs under ``dst`` and does not hold under ``src``, counted
    element by element (partial sums: every summand group's part is needed)."""
    k = len(src)
    red = [j for j, a in enumerate(src) if a == RED]
    total = 0
    for d in range(2**k):
        want = {
            i
            for i in np.ndindex(*shape)
            if all(lo <= x < hi for x, (lo, hi) in zip(i, box(shape, dst, d)))
        }
        own = {
            i
            for i in np.ndindex(*shape)
            if all(lo <= x < hi for x, (lo, hi) in zip(i, box(shape, src, d)))
        }
        total += len(want) * 2 ** len(red) - len(want & own) if red or src != dst else 0
    return total


@pytest.mark.parametrize("k", [1, 2, 3])
def test_box_is_the_executor_layout(k):
    for seq in itertools.product([0, 1, REP], repeat=k):
        for d in range(2**k):
            assert box((8, 8), seq, d) == region((8, 8), list(seq), d)


@pytest.mark.parametrize("k", [1, 2])
def test_moved_counts_every_missing_element(k):
    shape = (4, 4)
    opts = [0, 1, REP]
    for src in itertools.product([*opts, RED], repeat=k):
        for dst in itertools.product(opts, repeat=k):
            assert sum(moved(shape, src, dst)) == brute_moved(shape, src, dst), (src, dst)


def test_why_the_paper_undercounts():
    # "R r" read as "r r" on 4 devices: the paper charges S at cut 1 and nothing at cut 2
    # (the tile is already replicated), but all 4 devices pull the missing half.
    s = 16
    assert sum(moved((4, 4), (0, REP), (REP, REP))) == 2 * s
    # one cut: the paper's table (R->r = S, red->r = 2S, red->R = S)
    assert moved((4, 4), (0,), (REP,)) == (s,)
    assert moved((4, 4), (RED,), (REP,)) == (2 * s,)
    assert moved((4, 4), (RED,), (0,)) == (s,)


@pytest.fixture(scope="module")
def backend():
    be = LocalBackend(num_workers=8)
    yield be
    be.shutdown()


@pytest.mark.parametrize("devices", [4, 8])
@pytest.mark.parametrize(
    "graph", [lambda: mlp(16, [8, 16, 16, 4]), lambda: small_cnn(8, image=8, channels=(4, 8))]
)
def test_cost_model_equals_bytes_the_executor_moves(backend, graph, devices):
    g = graph()
    values = random_values(g, seed=0)
    k = devices.bit_length() - 1
    for p in (plan(g, devices), BASELINES["data"](g, k), BASELINES["megatron"](g, k)):
        run = execute(p, values, backend)
        assert run.measured_bytes == run.predicted_bytes == p.total, p.name
        assert sum(p.breakdown().values()) == pytest.approx(p.total)
    assert plan(g, devices).paper_total <= plan(g, devices).total  # the paper undercounts


def test_mlp_on_four_devices_reaches_the_optimum():
    g = mlp(32, [32, 32, 32], **MLP2)
    fixed = {"x": 0, "dfc2:out": 0}
    greedy = k_cuts(g, 2, fixed, "elements")
    # the reported case, in the paper's model: recursion 9,216 vs exhaustive 8,704
    assert greedy.paper_total == 9216
    assert k_cuts_exhaustive(g, 2, fixed, "elements").paper_total == 8704
    # honestly costed, the recursion's tiling moves 10,496; the optimum is 9,216
    best = joint_optimum(g, 2, fixed, "elements")
    assert best.total == 9216 < greedy.total == 10496
    p = plan(g, 4, fixed, "elements")
    assert p.total == best.total
    assert p.meta["candidates"]["greedy"] == greedy.total


def _small(seed, k, limit):
    g, fixed = random_graph(seed)
    prob = joint_problem(g, k, fixed, "elements")
    n = np.prod([len(d) for d in prob.domains.values()], dtype=float)
    return (g, fixed) if n <= limit else None


def test_joint_dp_equals_exhaustive_on_random_graphs():
    checked = 0
    for seed in range(40):
        case = _small(seed, 2, 200_000)
        if case is None:
            continue
        g, fixed = case
        dp = joint_optimum(g, 2, fixed, "elements")
        ex = exhaustive(g, 2, fixed, "elements", limit=200_000)
        assert dp.exact
        assert dp.total == pytest.approx(ex.total), g.name
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("k", [2, 3])
def test_recursion_vs_optimum_gap_on_random_graphs(k, record_property, capsys):
    gaps = []
    for seed in range(30 if k == 2 else 15):
        g, fixed = random_graph(seed)
        best = joint_optimum(g, k, fixed, "elements")
        assert best.exact
        greedy = k_cuts(g, k, fixed, "elements")
        p = plan(g, 2**k, fixed, "elements")
        assert best.total <= greedy.total + 1e-9  # the optimum is a lower bound
        assert p.total == pytest.approx(best.total)  # plan() reaches it on small graphs
        gaps.append(greedy.total / best.total - 1 if best.total else 0.0)
    gaps_arr = np.asarray(gaps)
    summary = (
        f"k={k}: recursion optimal on {int((gaps_arr < 1e-9).sum())}/{len(gaps)} random graphs; "
        f"gap median {np.median(gaps_arr):.1%}, max {gaps_arr.max():.1%}"
    )
    record_property("gap", summary)
    with capsys.disabled():
        print("\n" + summary)
    assert (gaps_arr >= -1e-9).all()
    assert gaps_arr.max() > 0  # the recursion is a heuristic: some graph shows a gap


def test_local_search_never_worsens_and_keeps_pins():
    g = mlp(16, [16, 32, 8], **MLP2)
    fixed = {"x": 0, "dfc2:out": 0}
    start = k_cuts(g, 3, fixed, "elements")
    homes, _ = improve(g, cuts_to_homes(g, start.cuts), 3, fixed, "elements")
    assert homes["x"] == tuple(c["x"] for c in start.cuts)
    assert evaluate(g, homes_to_cuts(g, homes, 3), "elements").total <= start.total
    p = plan(g, 8, fixed, "elements")
    assert p.total <= start.total
    assert all(c["x"] == 0 for c in p.cuts)


def test_home_sequences_respect_evenness_and_pins():
    seqs = home_sequences((4, 2), 2)
    assert (1, 1) not in seqs and (0, 0) in seqs and (REP, 1) in seqs
    assert home_sequences((2, 8), 2, pin=0) == [(0, REP)]
