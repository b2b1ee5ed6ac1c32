"""First-run estimates of a ``join_update`` without a promised ``update_axis``: one
without an accumulator writes each output element once, so its groups' updates
partition the output -- the model takes them to stay within the output rows the
group joins (a stack of small solves) instead of each group sending the whole output
(ALS's per-row solves: 1,440 bytes predicted, 0 measured on the first run)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp
from spartan.frontend import planning
from spartan.frontend.optimizer import UpdateHistory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from als import als  # noqa: E402

pytestmark = pytest.mark.usefixtures("local")
RNG = np.random.default_rng(10)
R0 = np.where(RNG.random((60, 24)) < 0.3, RNG.random((60, 24)), 0.0)
W0 = (R0 > 0).astype(float)
V0 = RNG.random((24, 3))


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 1), (3, 2), (8, 1)])
def test_als_first_run(nworkers, tiles_per_worker, monkeypatch):
    monkeypatch.setattr(planning, "_history", UpdateHistory())  # nothing learned yet
    with workers(nworkers, tiles_per_worker) as be:
        r, w, v = sp.array(R0), sp.array(W0), sp.array(V0)
        sp.evaluate(r, w, v)
        u, v2 = als(r, w, v, 2, 0.1)
        assert_agrees(v2, be)


def test_stacked_solve_rows_stay_on_their_group():
    with workers(3, 2) as be:
        a = sp.array(RNG.random((30, 3, 3)) + 3 * np.eye(3), tiling="row")
        b = sp.array(RNG.random((30, 3, 1)), tiling="row")
        sp.evaluate(a, b)
        got = assert_agrees(sp.linalg.solve(a, b), be)
        np.testing.assert_allclose(
            np.asarray(got), np.linalg.solve(np.asarray(a), np.asarray(b)), rtol=1e-10
        )
