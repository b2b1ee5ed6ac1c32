"""Scans over more tiles than workers: each tile receives the last slice of every
earlier tile held elsewhere, so two tiles per worker send more prefixes than one. The
plan was made for one tile per worker and then re-cut (cumsum over axis 0 on 2 tiles
per worker: 160 bytes predicted, 640 measured); it now plans the tiles that run."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(5).random((30, 20))
V = np.random.default_rng(6).random(50)


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 2), (3, 2), (8, 2), (2, 3)])
def test_scans_of_arrays_and_views(nworkers, tiles_per_worker):
    with workers(nworkers, tiles_per_worker) as be:
        for tiling in ("row", "column", "block", "dup"):
            x = sp.array(X, tiling=tiling)
            v = sp.array(V, tiling="dup" if tiling == "dup" else "row")
            sp.evaluate(x, v)
            cases = [
                (sp.cumsum(x, axis=0), X.cumsum(0)),
                (sp.cumsum(x, axis=1), X.cumsum(1)),
                (x[::2].cumsum(axis=0), X[::2].cumsum(0)),
                (x[::-1].cumsum(axis=0), X[::-1].cumsum(0)),
                (x.T.cumsum(axis=0), X.T.cumsum(0)),
                (v[3:-2:3].cumsum(), V[3:-2:3].cumsum()),
                (v[::-1].cumsum(), V[::-1].cumsum()),
            ]
            for arr, want in cases:
                np.testing.assert_allclose(np.asarray(assert_agrees(arr, be)), want)
