"""Row pipelines as a priced choice (issue 39): the lowering runs a pipeline only where
the plan, priced as each lowering runs it, moves no more bytes for it (or far fewer
bytes of intermediates reach memory) -- so the chosen plan is the measured-cheapest of
the pinned tilings, and measured bytes equal the predicted per node.

``python bench/corpus.py --show 98`` prints the program of the corpus cases below.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from model_agreement import assert_agrees, workers

import spartan as sp

_spec = importlib.util.spec_from_file_location(
    "spartan_bench_corpus", Path(__file__).resolve().parent.parent / "bench" / "corpus.py"
)
assert _spec is not None and _spec.loader is not None
corpus = sys.modules.get(_spec.name) or importlib.util.module_from_spec(_spec)
if _spec.name not in sys.modules:
    sys.modules[_spec.name] = corpus  # (its dataclasses look their module up)
    _spec.loader.exec_module(corpus)

pytestmark = pytest.mark.usefixtures("local")
X = np.random.default_rng(98).random((17, 8))


def _logistic(x, iters: int = 2):
    w = sp.zeros(x.shape[1])
    for _ in range(iters):
        p = 1 / (1 + sp.exp(-(x @ w)))
        w = w - 0.1 * (x.T @ (p - x[:, 0]))
    return sp.dot(w, w - w.mean(axis=0))


def _moved(be, pipelines: bool) -> int:
    with sp.config.set(pipeline_rows=pipelines, retile_inputs=False):
        x = sp.array(X, tiling="column")
        sp.evaluate(x)
        be.reset_stats()
        assert_agrees(_logistic(x), be, reset=False)
        return be.stats().bytes_moved


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_pipelines_that_move_more_are_not_run(nworkers):
    """Logistic-regression steps over column-tiled X held fixed: every pipeline the
    rules allow moved 7,072 B on 8 workers, none 4,216 B; the plan now moves no more
    than without pipelines, and exactly what it predicts."""
    with workers(nworkers, 2) as be:
        assert _moved(be, True) <= _moved(be, False)


@pytest.mark.parametrize("nworkers", [2, 3, 8])
def test_corpus_case_is_the_measured_cheapest(nworkers):
    """Corpus program 98 (the case above, with a strided view): its one pinned
    combination moved 720 B on 2 workers where the chosen plan moved 1,120 B."""
    r = corpus.pinned_check(corpus.random_program(98), nworkers)
    assert r is not None and r.exhaustive
    assert r.hit, (r.chosen, r.best)


def test_a_pipeline_that_saves_memory_traffic_is_kept():
    """k-means' one-hot matrix over row-tiled X: computed inside its two consumers
    (never made as tiles), the pipelines moving no more than tiles would."""
    rng = np.random.default_rng(1)
    data = rng.random((64, 3))
    with workers(2, 2) as be:
        x = sp.array(data, tiling="row")
        centers = sp.array(data[:4].copy())
        sp.evaluate(x, centers)
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        onehot = (dist.argmin(axis=1)[:, None] == sp.arange(4)).astype(x.dtype)
        sums = onehot.T @ x
        assert_agrees(sums, be)
        assert onehot._expr.data is None


def test_refiltered_input_is_retiled_where_the_plan_priced_it():
    """A filter's uneven row tiles cut evenly by the plan (same axes, other bounds) are
    re-tiled as priced: the bytes are counted under the input, not its reader (corpus
    program 111 on 8 workers: 64 B predicted under the filter, measured under a map)."""
    m = corpus.measure(corpus.random_program(111), 8)
    corpus.check_values(corpus.random_program(111), m.values)
    assert m.plans >= 2 and not m.off, [(n.node, n.predicted, n.measured) for n in m.off]


def _every_pipeline(monkeypatch):
    """Lower with every pipeline the rules allow: the prices the choice compares must
    be right for the pipelines it rejects too. (With bytes moved worth nothing, a
    pipeline only saves: the choice keeps them all.)"""
    from spartan.frontend import planning

    monkeypatch.setattr(planning, "PIPELINE_MEMORY_RATIO", 0)


@pytest.mark.parametrize(
    ("seed", "nworkers"),
    [
        (353, 2),  # t0 @ t0, t0 a pipelined vector: computed once (pipeline._twins)
        (353, 8),  # dot(t0.T, sqrt(t0.T + 1)): t0 in two row trees, its rows read twice
        (98, 2),  # dot(t0, t0 - t0.mean()): t0 in two trees, what it reads whole once
        (201, 8),  # t0.T @ t0 over a re-tiled input: groups follow its new cuts
    ],
)
def test_every_pipeline_is_priced_as_it_runs(monkeypatch, seed, nworkers):
    _every_pipeline(monkeypatch)
    case = corpus.random_program(seed)
    m = corpus.measure(case, nworkers)
    corpus.check_values(case, m.values)
    assert not m.off, [(n.node, n.label, n.predicted, n.measured) for n in m.off]


def test_a_vector_read_twice_by_a_pipeline_is_computed_once(monkeypatch):
    """``t @ t`` of a pipelined vector: one row tree, its leaves read once."""
    _every_pipeline(monkeypatch)
    data = np.random.default_rng(353).random((9, 4))
    with workers(2, 2) as be:
        x = sp.array(data, tiling="column")
        sp.evaluate(x)
        t = x.max(axis=1)
        got = assert_agrees(t @ t, be)
        np.testing.assert_allclose(np.asarray(got), data.max(1) @ data.max(1))


def test_a_node_two_consumers_compute_is_priced_in_each_ones_groups(monkeypatch):
    """Corpus program 224 on 8 workers: ``t2 = (x.T @ x).argmin(axis=1)`` computed in
    a product's 4 row groups and in a fold's own tiles; the fold's whole reads of x
    were priced by the product's groups (3,144 B predicted, 5,560 B measured)."""
    _every_pipeline(monkeypatch)
    case = corpus.random_program(224)
    m = corpus.measure(case, 8)
    corpus.check_values(case, m.values)
    folds = [n for n in m.nodes if n.label == "fold(minimum)"]
    assert folds and all(n.ok for n in folds), [(n.predicted, n.measured) for n in folds]
