"""A map that reads one array twice (``x * x``) makes it one leaf of its tasks, read
once: the model counted the read once per operand (k-means' ``centers * centers`` of a
view on another worker: 192 bytes predicted, 96 measured)."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp
from spartan.frontend.optimizer import Program, plan_for
from spartan.tiling import Tiling

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(9).random((24, 24))


def test_the_program_counts_one_read_per_distinct_input():
    p = Program()
    x = p.source((24, 24), tiling=Tiling.row((24, 24), 3))
    twice, once = p.map(x, x), p.map(x)
    col = Tiling.column((24, 24), 3)
    plan = plan_for(p, 3, {x: Tiling.row((24, 24), 3), twice: col, once: col})
    assert plan.predicted[twice] == plan.predicted[once] > 0


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_maps_reading_an_array_twice(nworkers):
    with workers(nworkers, 2) as be:
        for src in ("row", "column", "block"):
            x = sp.array(X, tiling=src)
            sp.evaluate(x)
            for out in ("row", "column", "block"):
                for arr, want in (
                    (x * x, X * X),
                    (x + x.T, X + X.T),
                    (x[:6] * x[:6], X[:6] ** 2),
                    (sp.map(lambda a, b, c: a * b + c, x, x, x), X * X + X),
                ):
                    arr._expr.tiling_hint = Tiling.named(out, arr.shape, 2 * nworkers)
                    np.testing.assert_allclose(np.asarray(assert_agrees(arr, be)), want)


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_fused_maps_reading_one_view(nworkers):
    """``where(t > 0.5, t, 0)`` of ``t = x[1:]``: the comparison is fused into the
    ``where``, whose tasks read t once (predicted 16 bytes, measured 8)."""
    with workers(nworkers, 2) as be:
        v = np.random.default_rng(1).random(20)
        x = sp.array(v, tiling="row")
        sp.evaluate(x)
        t = x[1:]
        got = assert_agrees(sp.where(t > 0.5, t, 0), be)
        np.testing.assert_array_equal(np.asarray(got), np.where(v[1:] > 0.5, v[1:], 0))
