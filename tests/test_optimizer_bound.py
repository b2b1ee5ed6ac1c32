"""The lower bound on the optimum (``search.lower_bound``, issue 39 item 5): at most
the exact optimum, equal to it where no bucket had to be split, and so a certificate
for the dense programs too wide to solve (``bench/optimizer.py``'s dense section)."""

from __future__ import annotations

import random

import pytest

from spartan.frontend.optimizer import optimize
from spartan.frontend.optimizer.graph import TilingGraph
from spartan.frontend.optimizer.random_programs import random_program
from spartan.frontend.optimizer.search import exact, lower_bound


@pytest.mark.parametrize("seed", range(12))
def test_bound_is_at_most_the_optimum_and_tight_without_splits(seed):
    rng = random.Random(seed)
    p = random_program(rng, rng.randint(3, 14), rng.choice([2, 3, 8]))
    g = TilingGraph.build(p, 8)
    best = g.cost(exact(g, 0))
    assert lower_bound(g, 0, limit=4) <= best  # (tiny tables: buckets split)
    assert lower_bound(g, 0, limit=1 << 22) == best


@pytest.mark.parametrize("seed", range(3))
def test_bound_certifies_a_dense_plan(seed):
    """A dense program: the plan's bytes over the bound bound its distance from the
    optimum; the bound never exceeds an achieved cost."""
    p = random_program(random.Random(seed), 60, 8, dims=(262144,), dense=True)
    g = TilingGraph.build(p, 8)
    plan = optimize(p, 8)
    bound = lower_bound(g, 0, limit=1 << 10)
    assert 0 < bound <= plan.total
    assert lower_bound(g, 0, limit=1 << 16) <= plan.total
