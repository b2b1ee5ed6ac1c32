"""A reshape of a view, or one that is not a merge or split of axes, is one step in
the lowering (each output tile reads its C-order runs through the view); the model
priced it as a materialized copy, a flatten and a split (``x[3:-2:3].cumsum()`` on 8
workers: 2,432 bytes predicted, 1,408 measured; ``(30, 20) -> (20, 30)``: 960 for 320)."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp
from spartan.frontend.optimizer import Program, plan_for
from spartan.tiling import Tiling

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(11).random((30, 20))


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 1), (3, 2), (8, 1), (8, 2)])
def test_reshapes_of_arrays_and_views(nworkers, tiles_per_worker):
    with workers(nworkers, tiles_per_worker) as be:
        for tiling in ("row", "column", "block", "dup"):
            x = sp.array(X, tiling=tiling)
            sp.evaluate(x)
            cases = [
                (x.reshape(20, 30), X.reshape(20, 30)),
                (x.reshape(600), X.reshape(600)),
                (x[3:-2:3].cumsum(), X[3:-2:3].cumsum()),
                (x.T.reshape(10, 60), X.T.reshape(10, 60)),
                (x[::-1, 2:].reshape(-1), X[::-1, 2:].reshape(-1)),
            ]
            for arr, want in cases:
                np.testing.assert_allclose(np.asarray(assert_agrees(arr, be)), want)


def test_a_direct_reshape_is_one_program_node_of_a_view():
    p = Program()
    x = p.source((30, 20), tiling=Tiling.row((30, 20), 4))
    v = p.slice(x, (slice(3, -2, 3),))
    with pytest.raises(ValueError, match="materialize"):
        p.reshape(v, (180,))
    r = p.reshape(v, (180,), direct=True)
    rows = Tiling.row((180,), 4)
    plan = plan_for(p, 4, {x: Tiling.row((30, 20), 4), r: rows})
    # rows 3, 6, ... 27 of 4 row tiles of 30 (8, 7, 8, 7 rows) feed 4 pieces of 45
    # elements: count the elements whose output worker is not their row's worker
    owner = np.repeat(np.arange(4), [8, 7, 8, 7])[3:-2:3].repeat(20)
    expected = int(np.count_nonzero(owner != np.arange(180) * 4 // 180)) * 8
    assert plan.predicted[r] == expected
