"""The exact solver under a duplication budget: each duplicated array is charged once.

Issue 39, item 1: ``search.exact`` re-checked an array it had already committed to
duplicating against what was left of the budget, so every plan duplicating two arrays
that both needed a branch was dropped (random programs ended up to 2.5x off the
optimum; a three-matrix ALS duplicated R1 + R3 where R1 + R2 was cheaper).
"""

from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from spartan.frontend.optimizer import Program, TilingGraph, brute_force, optimize
from spartan.frontend.optimizer.random_programs import random_program
from spartan.frontend.optimizer.search import enumerate_all, exact

P = 8


def three_als(sizes: list[tuple[int, int]], rank: int = 32) -> tuple[Program, list[int]]:
    """One ALS step (user factors by rows, item factors by columns) per ratings matrix."""
    p = Program()
    ratings = []
    for k, (users, items) in enumerate(sizes, 1):
        r = p.source((users, items), itemsize=4, name=f"R{k}")
        m = p.source((items, rank), name=f"M{k}")
        u = p.join_update([r, m], [0, -1], (users, rank), update_axis=0)
        p.join_update([r, u], [1, -1], (items, rank), update_axis=0)
        ratings.append(r)
    return p, ratings


def test_three_matrix_als_duplicates_the_two_large_matrices():
    # R1 and R2 the same size, R3 an eighth of it; the budget fits R1 + R2 exactly.
    # Without the budget's coupling every matrix is duplicated; committing R1, then R2,
    # leaves 0 bytes, and R1 re-checked against those 0 bytes dropped the branch: the
    # solver settled for R1 + R3 (1.098x the optimum under the cost model of this issue)
    p, (r1, r2, r3) = three_als([(2048, 4096), (2048, 4096), (1024, 1024)])
    budget = (p[r1].nbytes + p[r2].nbytes) * (P - 1)
    plan = optimize(p, P, budget)
    best = brute_force(p, P, budget)
    assert plan.method == "exact"
    assert plan.total == best.total
    assert plan.dup_bytes <= budget
    assert [plan.tiling[r].replicated for r in (r1, r2, r3)] == [True, True, False]
    # the plan the old solver chose is dearer: R3 saves less than R2
    g = TilingGraph.build(p, P, budget)
    v2, v3 = g.var_of[r2], g.var_of[r3]
    allowed = [np.arange(len(cs)) for cs in g.choices]
    dup2 = np.array([c.tiling.replicated for c in g.choices[v2]])
    dup3 = np.array([c.tiling.replicated for c in g.choices[v3]])
    allowed[v2], allowed[v3] = allowed[v2][~dup2], allowed[v3][dup3]
    r1_r3 = exact(g, budget, allowed=allowed)
    assert r1_r3 is not None and g.cost(r1_r3) > plan.total


def _budget(program: Program, nworkers: int, rng: random.Random) -> int:
    """The duplication bytes of one to three of the program's arrays, exactly, one byte
    short or with some room: budgets where which arrays to duplicate together matters."""
    dups = sorted({n.nbytes * (nworkers - 1) for n in program if not n.is_view})
    picked = sum(rng.sample(dups, rng.randint(1, min(3, len(dups)))))
    return max(0, picked + rng.choice([0, 0, -1, rng.randrange(dups[0] + 1)]))


# (seed, workers, operators) on which the solver that re-checked committed arrays
# missed the optimum (by 1.2x to 8e11x: in the first two a plan moving 0 bytes exists)
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 16), st.integers(2, 7))
@example(178003, 2, 2)
@example(624552, 2, 2)
@example(943012, 2, 6)
@example(653159, 6, 7)
@example(800889, 13, 6)
@example(243712, 10, 7)
def test_exact_equals_enumeration_under_random_budgets(seed, nworkers, noperators):
    p = random_program(random.Random(seed), noperators, nworkers=nworkers)
    budget = _budget(p, nworkers, random.Random(seed))
    g = TilingGraph.build(p, nworkers, budget)
    if math.prod(len(c) for c in g.choices) > 1 << 14:
        return  # enumeration too slow for a unit test
    ex = exact(g, budget)
    assert ex is not None
    assert g.dup_bytes(ex) <= budget
    assert g.cost(ex) == g.cost(enumerate_all(g, budget))
