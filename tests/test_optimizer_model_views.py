"""Products over strided and offset views, and products inside a pipeline, in the cost
model: the row groups a pipelined product runs in are its consumer's (the lowering's
``JoinUpdate.group_count``, handed to the model by
:func:`~spartan.frontend.pipeline.pipeline_rows`), and a join whose inputs are cut in
one piece along the joined axis (a strided or offset view's rows) runs the groups of an
unpipelined join -- one per worker -- not one group that fetches every row."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp

pytestmark = pytest.mark.usefixtures("local")


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_a_product_over_a_strided_view_inside_a_pipeline(nworkers):
    """``t.T @ (t @ v)``, ``t = x[::2]``: on 2 workers it was predicted 96 B and moved
    624 (its one group fetched all of ``t`` to worker 0)."""
    rng = np.random.default_rng(0)
    x0, v0 = rng.random((21, 6)), rng.random(6)
    with workers(nworkers, 2) as be:
        x, v = sp.array(x0, tiling="row"), sp.array(v0)
        sp.evaluate(x, v)
        t = x[::2]
        got = assert_agrees(t.T @ (t @ v), be)
        np.testing.assert_allclose(np.asarray(got), x0[::2].T @ (x0[::2] @ v0))
        if nworkers == 2:  # the groups follow the workers: about 2 rows' bytes, not all of t
            assert sum(sp.explain(got).plan.measured.values()) < t.nbytes


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_a_mini_batch_product_over_an_offset_view(nworkers):
    """linear_svm's step: ``Xb.T @ (yb * (Xb @ w < 1))`` over ``Xb = X[s:s+b]`` (was
    predicted 872 B, measured 1,632 on 2 workers)."""
    rng = np.random.default_rng(1)
    x0, y0, w0 = rng.random((60, 4)), np.sign(rng.random(60) - 0.5), rng.random(4)
    with workers(nworkers, 2) as be:
        x, y, w = sp.array(x0, tiling="row"), sp.array(y0), sp.array(w0)
        sp.evaluate(x, y, w)
        xb, yb = x[7:37], y[7:37]
        violated = (yb * (xb @ w) < 1).astype(x.dtype)
        got = assert_agrees(xb.T @ (yb * violated), be)
        v0 = (y0[7:37] * (x0[7:37] @ w0) < 1).astype(float)
        np.testing.assert_allclose(np.asarray(got), x0[7:37].T @ (y0[7:37] * v0))


def test_an_argmin_over_a_column_tiled_x():
    """k-means' argmin with ``x`` column-tiled on 8 workers: the product ``x @ c.T``
    runs inside the argmin's row tiles, on every worker, each fetching ``c`` whole (was
    predicted 1,400 B, measured 2,576: the model ran its groups where ``x``'s first
    column lives)."""
    x0 = np.random.default_rng(65).random((19, 8))
    with workers(8, 2) as be, sp.config.set(replicate_below_bytes=0):
        x = sp.array(x0, tiling="column")
        sp.evaluate(x)
        c = x[:3]
        got = assert_agrees(((c * c).sum(axis=1) - 2 * (x @ c.T)).argmin(axis=1), be)
        c0 = x0[:3]
        want = ((c0 * c0).sum(1) - 2 * (x0 @ c0.T)).argmin(1)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_a_centred_gram_product_sends_one_partial_per_group_worker():
    """``Xc.T @ Xc`` with ``Xc`` computed in its row groups (x block-tiled, 2 row cuts,
    3 workers): the groups run on 2 workers, so 2 partial outputs travel and the mean is
    fetched twice -- not as the plan's 6 groups on 3 workers (predicted 992 B, measured
    856)."""
    x0 = np.random.default_rng(112).random((21, 5))
    with workers(3, 2) as be, sp.config.set(replicate_below_bytes=0):
        x = sp.array(x0, tiling="block")
        sp.evaluate(x)
        xc = x - x.mean(axis=0)
        got = assert_agrees(xc.T @ xc, be)
        want = (x0 - x0.mean(0)).T @ (x0 - x0.mean(0))
        np.testing.assert_allclose(np.asarray(got), want)
