"""The plan prices the tiles that really run: the optimizer cuts its candidates into
as many tiles as the lowering will (``config.tiles_per_worker``), so a block plan
re-cut to several tiles per worker, or an input kept in its finer tiling, moves what
was predicted; and an input re-tiled by one evaluation is measured for it alone."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp

# (the conftest's in-process backend is the session before and after each test)
pytestmark = pytest.mark.usefixtures("local")
RNG = np.random.default_rng(3)
X, Y = RNG.random((24, 18)), RNG.random((18, 24))


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 1), (3, 2), (8, 1), (2, 3)])
def test_maps_and_folds_in_the_tiles_that_run(nworkers, tiles_per_worker):
    with workers(nworkers, tiles_per_worker) as be:
        for tiling in ("row", "column", "block", "dup"):
            x, y = sp.array(X, tiling=tiling), sp.array(Y, tiling=tiling)
            sp.evaluate(x, y)
            np.testing.assert_allclose(np.asarray(assert_agrees(x * 2 + 1, be)), X * 2 + 1)
            np.testing.assert_allclose(np.asarray(assert_agrees(x.sum(axis=0), be)), X.sum(0))
            np.testing.assert_allclose(
                np.asarray(assert_agrees(x[1:].sum(axis=1), be)), X[1:].sum(1)
            )
            np.testing.assert_allclose(np.asarray(assert_agrees(x + y.T, be)), X + Y.T)


def test_a_block_plan_re_cut_to_several_tiles_per_worker():
    """Planned with 3 tiles and run with 6, a block tiling placed tiles unlike the plan:
    an input kept block[3, 2] was re-tiled, 1,696 bytes measured for 0 predicted."""
    with workers(3, 2) as be:
        x = sp.array(X, tiling="block")
        sp.evaluate(x)
        for arr, want in ((sp.cumsum(x, axis=1), X.cumsum(1)), (x[::-1] * 3, X[::-1] * 3)):
            np.testing.assert_allclose(np.asarray(assert_agrees(arr, be)), want)


def test_an_input_re_tiled_again_is_measured_for_this_evaluation_only():
    """Byte counters per tag are totals since the last reset: the input's own tag also
    counted every earlier re-tiling of it (and the tasks that computed it)."""
    with workers(8, 1) as be:
        x = sp.array(X, tiling="row")
        sp.evaluate(x)
        for _ in range(3):
            assert_agrees(x[3:-2:3].cumsum(axis=0) + 0, be)
            assert_agrees(x[1:].sum(axis=0), be)
