"""Row pipelines and fused maps in the cost model: a node computed inside its
consumers moves nothing of its own; each consumer that computes it reads what it would
have read -- its broadcast operands once per worker (a pipeline's whole reads) -- so
measured bytes equal the predicted per node. A pipelined run teaches the join sites
their real update cost: neither 0 (a product computed inside another) nor its
consumer's reads (k-means' learned factor after one pipelined run was 25,001)."""

from __future__ import annotations

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp
from spartan.frontend import planning
from spartan.frontend.optimizer import UpdateHistory

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(8).random((240, 6))


def kmeans(x, k: int = 4, iters: int = 2):
    centers = x[:k]
    for _ in range(iters):
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        labels = dist.argmin(axis=1)
        onehot = (labels[:, None] == sp.arange(k)).astype(x.dtype)
        counts = onehot.sum(axis=0)
        sums = onehot.T @ x
        centers = sp.where(counts[:, None] > 0, sums / sp.maximum(counts, 1)[:, None], centers)
    return centers


def logistic(x, iters: int = 2):
    y, w = sp.ones(x.shape[0]), sp.zeros(x.shape[1])
    for _ in range(iters):
        w = w - (x.T @ (1 / (1 + sp.exp(-(x @ w))) - y)) / x.shape[0]
    return w


@pytest.mark.parametrize(("nworkers", "tiles_per_worker"), [(2, 1), (3, 2), (8, 1), (2, 3)])
@pytest.mark.parametrize("pipelines", [True, False])
def test_kmeans_and_logistic_regression(nworkers, tiles_per_worker, pipelines):
    with workers(nworkers, tiles_per_worker) as be, sp.config.set(pipeline_rows=pipelines):
        for tiling in ("row", "column", "block"):
            x = sp.array(X, tiling=tiling)
            sp.evaluate(x)
            assert_agrees(kmeans(x), be)
            assert_agrees(logistic(x), be)


def test_a_fold_of_a_fused_map_of_a_view():
    """``(c * c).sum(axis=1)`` of a view: the map runs inside the fold's tasks."""
    with workers(3, 2) as be:
        x = sp.array(X, tiling="row")
        sp.evaluate(x)
        c = x[:4]
        got = assert_agrees((c * c).sum(axis=1), be)
        np.testing.assert_allclose(np.asarray(got), (X[:4] ** 2).sum(1))


@pytest.mark.parametrize("tiling", ["row", "column", "block"])
def test_a_fold_that_makes_rows_of_a_centred_map(tiling):
    """``(x - x.mean(axis=0)).sum(axis=1)``: the map is computed by the fold's row
    tiles, which read it by rows -- no partials cross workers as they would from the
    map's own column tiles (predicted 320 bytes, measured 240 on 2 workers)."""
    with workers(2, 2) as be:
        x0 = np.random.default_rng(2).random((10, 5))
        x = sp.array(x0, tiling=tiling)
        sp.evaluate(x)
        got = assert_agrees((x - x.mean(axis=0)).sum(axis=1), be)
        np.testing.assert_allclose(np.asarray(got), (x0 - x0.mean(0)).sum(1), atol=1e-12)


def test_pipelined_runs_teach_the_real_update_cost(monkeypatch):
    monkeypatch.setattr(planning, "_history", UpdateHistory())
    with workers(3, 2) as be:
        x = sp.array(X, tiling="row")
        sp.evaluate(x)
        for _ in range(3):
            r = kmeans(x)
            assert_agrees(r, be)
            for node in sp.explain(r).plan.program:
                site = node.params.get("site")
                if site is not None:
                    assert 0.5 <= planning._history.factor(site) <= 2, (node.name, site)
