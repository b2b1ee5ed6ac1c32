"""A filter's result is cut evenly once its row tiles' selected elements are counted;
parts that land on another worker's output tile move. Before counting, the model keeps
each part where its rows were (exact when every tile selects alike); the count is the
lowering's own first step, and the plan's prediction takes the re-cut's bytes from it
(``x[x > 0.5]`` of a (7, 24) row-tiled array: 0 bytes predicted, 72 measured)."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(12).random((7, 24))


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 2), (3, 2), (8, 1)])
def test_filters_of_uneven_selections(nworkers, tiles_per_worker):
    with workers(nworkers, tiles_per_worker) as be:
        for tiling in ("row", "column", "block"):
            x = sp.array(X, tiling=tiling)
            sp.evaluate(x)
            for cut in (0.5, 0.9):
                be.reset_stats()  # (a filter is evaluated as it is built)
                got = assert_agrees(x[x > cut], be, reset=False)
                np.testing.assert_array_equal(np.asarray(got), X[X > cut])
