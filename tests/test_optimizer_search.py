"""The searches of issue 39: exact = enumeration under random budgets (item 1 at scale),
dense programs past the exact solver's table limit (item 5), the time-aware tiebreak
among plans of equal bytes (item 7).

The full 1,000-program budget check is ``judge_exact(programs=1000)`` (bench); here a
seeded slice of it and a hypothesis run keep CI within seconds.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.frontend.optimizer import Program, TilingGraph, optimize
from spartan.frontend.optimizer.random_programs import (
    BUDGET_KINDS,
    judge_exact,
    random_budget,
    random_program,
)
from spartan.frontend.optimizer.search import (
    _graph_of,
    _greedy_order,
    cutset_search,
    enumerate_all,
    exact,
    greedy,
    settle_ties,
)


# ---- item 1 at scale: exact = enumeration under every kind of budget --------------------
def test_exact_equals_enumeration_on_a_seeded_slice_of_budgeted_programs():
    report = judge_exact(programs=120, seed=39_000, operators=(2, 8), max_combinations=1 << 12)
    assert report["mismatches"] == []
    assert report["enumerated"] >= 100
    # every kind of budget was drawn and checked
    assert all(enumerated > 0 for _, enumerated in report["kinds"].values())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 16), st.integers(2, 6))
def test_exact_is_the_lexicographic_optimum(seed, nworkers, noperators):
    """Least bytes, and among plans of those bytes the least time cost: checked against
    every combination (so also: the tiebreak never costs a byte)."""
    p = random_program(random.Random(seed), noperators, nworkers=nworkers)
    kind, budget = random_budget(random.Random(seed), p, nworkers)
    g = TilingGraph.build(p, nworkers, budget)
    if math.prod(len(c) for c in g.choices) > 1 << 10:
        return
    best = min(
        (g.cost(a), g.time_cost(a))
        for a in itertools.product(*(range(len(c)) for c in g.choices))
        if g.dup_bytes(a) <= budget
    )
    got = exact(g, budget)
    assert got is not None and g.dup_bytes(got) <= budget
    assert (g.cost(got), g.time_cost(got)) == best
    assert g.cost(got) == g.cost(enumerate_all(g, budget))


def test_random_budget_draws_each_kind_as_described():
    p = random_program(random.Random(3), 8, nworkers=4)
    dups = sorted({n.nbytes * 3 for n in p if not n.is_view})
    seen = set()
    for s in range(200):
        kind, budget = random_budget(random.Random(s), p, 4)
        seen.add(kind)
        if kind == "zero":
            assert budget == 0
        elif kind == "small":
            assert 0 < budget < dups[0]
        elif kind == "between":
            assert any(lo <= budget < hi for lo, hi in zip(dups, dups[1:]))
        elif kind == "unlimited":
            assert budget >= sum(dups)
    assert seen == set(BUDGET_KINDS)


# ---- item 5: dense programs ---------------------------------------------------------------
def dense(n: int, seed: int, nworkers: int = 8) -> Program:
    return random_program(random.Random(seed), n, nworkers, dims=(262144,), dense=True)


def test_dense_mode_makes_graphs_wider_than_the_default_chains():
    p, q = dense(60, 0), random_program(random.Random(0), 60, 8, dims=(262144,))
    assert p.noperators == q.noperators == 60

    def edges(prog: Program) -> int:
        g = TilingGraph.build(prog, 8)
        return len({f.scope for f in g.factors if len(f.scope) > 1})

    assert edges(p) > edges(q)


def test_cutting_order_leaves_a_rest_that_fits_the_limit():
    g = TilingGraph.build(dense(80, 7), 8)
    sizes = [len(c) for c in g.choices]
    scopes = [tuple(v for v in f.scope if sizes[v] > 1) for f in g.factors]
    limit = 1 << 6
    assert _greedy_order(_graph_of(g.nvars, scopes), sizes, limit, False) is None
    order, cut, widest, _ = _greedy_order(
        _graph_of(g.nvars, scopes), sizes, limit, True, random.Random(0)
    )
    assert cut and widest <= limit
    assert sorted(order + cut) == [v for v in range(g.nvars)]


@pytest.mark.parametrize("seed", [0, 4])
def test_cutset_search_reaches_the_optimum_with_a_small_table_limit(seed):
    # a table limit of 2**10 forces cutsets on programs exact() solves whole (greedy
    # alone lands 1.07x and 1.02x off on these): the search must land within 1.05x of
    # the optimum (it reaches it)
    g = TilingGraph.build(dense(60, seed), 8)
    best = g.cost(exact(g, 0))
    start = greedy(g, 0)
    found = cutset_search(g, start, 0, limit=1 << 10)
    assert exact(g, 0, limit=1 << 10) is None  # the whole graph does not fit
    assert g.cost(found) <= g.cost(start)
    assert g.cost(found) <= 1.05 * best


def test_cutset_search_respects_the_duplication_budget():
    p = dense(50, 5)
    budget = max(n.nbytes for n in p if not n.is_view) * 7
    g = TilingGraph.build(p, 8, budget)
    found = cutset_search(g, greedy(g, budget), budget, limit=1 << 8)
    assert g.dup_bytes(found) <= budget
    assert g.cost(found) <= 1.05 * g.cost(exact(g, budget))


def test_optimize_falls_back_to_the_cutset_search_on_a_dense_program():
    p = dense(160, 0)
    plan = optimize(p, 8)
    assert plan.method == "greedy+cutset"
    g = TilingGraph.build(p, 8)
    assert plan.total <= g.cost(greedy(g, 0))


def test_the_cutset_fallback_can_be_asked_for_by_name():
    p = dense(40, 2)
    plan = optimize(p, 8, method="greedy+cutset")
    assert plan.method == "greedy+cutset"
    assert plan.total <= 1.05 * optimize(p, 8).total
    with pytest.raises(ValueError, match="greedy\\+cutset"):
        optimize(p, 8, method="cutset")


# ---- item 7: among plans of equal bytes, the faster tiling --------------------------------
S = slice(1, -1)
FIVE_POINT = [
    (S, S),
    (slice(None, -2), S),
    (slice(2, None), S),
    (S, slice(None, -2)),
    (S, slice(2, None)),
]


def stencil(shape: tuple[int, int]) -> tuple[Program, int, int]:
    p = Program()
    x = p.source(shape)
    return p, x, p.map(*(p.slice(x, i) for i in FIVE_POINT))


def test_stencil_takes_rows_where_blocks_move_the_same_bytes():
    # on 4 workers rows move 72 B per interior column, 2x2 blocks 16 B per interior
    # row and column: equal at 14336 x 4096 interior; blocks ran such a stencil 1.76x
    # slower (issue 39)
    p, x, y = stencil((14338, 4098))
    g = TilingGraph.build(p, 4)
    kinds = [str(c.tiling).split("[")[0] for c in g.choices[0]]
    row, block = kinds.index("row"), kinds.index("block")
    assert g.cost([row, row]) == g.cost([block, block])
    plan = optimize(p, 4)
    assert str(plan.tiling[y]).startswith("row") and str(plan.tiling[x]).startswith("row")
    assert plan.total == g.cost(enumerate_all(g, 0))


def test_bytes_still_decide_when_blocks_move_fewer():
    p, x, y = stencil((4098, 4098))
    plan = optimize(p, 4)
    assert str(plan.tiling[y]).startswith("block")


def test_settle_ties_moves_only_between_plans_of_equal_bytes():
    # the pass exact() runs where scaled costs could overflow int64
    p, x, y = stencil((14338, 4098))
    g = TilingGraph.build(p, 4)
    kinds = [str(c.tiling).split("[")[0] for c in g.choices[0]]
    block = kinds.index("block")
    settled = settle_ties(g, [block, block], 0)
    assert g.cost(settled) == g.cost([block, block])
    assert g.time_cost(settled) < g.time_cost([block, block])
    assert [kinds[c] for c in settled] == ["row", "row"]
    # from the cheaper-in-bytes blocks of a square stencil it does not move
    q, _, _ = stencil((4098, 4098))
    h = TilingGraph.build(q, 4)
    b = [str(c.tiling).split("[")[0] for c in h.choices[0]].index("block")
    assert settle_ties(h, [b, b], 0) == [b, b]


def test_time_ranks_put_rows_first_and_duplicates_last():
    p = Program()
    a = p.source((64, 64))
    p.map(a, p.transpose(a))
    g = TilingGraph.build(p, 4, dup_budget_bytes=10**9)
    ranked = sorted(range(len(g.choices[0])), key=lambda c: g.tiebreak[0][c])
    names = [str(g.choices[0][c].tiling).split("[")[0] for c in ranked]
    assert names[0] == "row" and g.choices[0][ranked[-1]].tiling.replicated
    assert np.array_equal(np.sort(g.tiebreak[0]), np.arange(len(g.choices[0])))


def test_an_array_too_narrow_for_the_asked_tiles_is_cut_along_its_long_axis(local, monkeypatch):
    """A 256 x 4 array asked for 48 tiles: its 4 columns would give 2 tasks per worker
    where its rows give 24; at equal bytes (none) the tiebreak keeps the parallelism."""
    import spartan as sp

    monkeypatch.setattr(sp.config, "tiles_per_worker", 24)
    x = sp.asarray(np.arange(1024.0).reshape(256, 4))
    sp.evaluate(x)
    assert x._expr.data.tiling.cuts[0] == 24 * local.nworkers
