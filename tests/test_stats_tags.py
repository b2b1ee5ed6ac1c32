"""The bytes each evaluation moves, by task tag: asked for by the evaluation's own tags,
and kept by the workers for a bounded number of tags."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp
from spartan.backend import worker as worker_module
from spartan.frontend import planning
from spartan.tiling import Tiling

SHAPE = (12, 10)


def _moving_product(rng: np.random.Generator):
    """``A @ v`` with ``A`` cut by columns: the partial products cross workers."""
    data, v = rng.random(SHAPE), rng.random(SHAPE[1])
    a = sp.array(data, tiling=Tiling.column(SHAPE, 2))
    y = a @ sp.array(v)
    return y, data @ v


def _moving_join(a: sp.Array) -> sp.Array:
    """Row sums of column-cut ``a`` as a user's ``join_update``: every column group's
    partial sums cross workers, and how many bytes the update moves is what the
    optimizer learns for this call site (a product's it computes exactly)."""
    return sp.join_update(
        lambda extents, block: [((), block.sum(axis=1))], np.add, [a], [1], (a.shape[0],)
    )


def test_stats_for_tags_hold_only_those_tags(backend):
    rng = np.random.default_rng(0)
    y, want = _moving_product(rng)
    z, _ = _moving_product(rng)
    sp.evaluate(y, z)
    everything = backend.stats().bytes_by_tag
    assert len(everything) >= 2 and sum(everything.values()) > 0
    tag = next(iter(everything))
    asked = backend.stats({tag, "no such tag"}).bytes_by_tag
    assert asked == {tag: everything[tag]}
    np.testing.assert_allclose(y.glom(), want)


@pytest.fixture
def asks(backend, monkeypatch):
    """The tags of every counter ask the backend gets, with no join site learned yet."""
    monkeypatch.setattr(planning, "_steady", {})
    monkeypatch.setattr(planning, "_unmeasured", {})
    asked = []
    stats_later = backend.stats_later

    def spy(tags=None):
        asked.append(tags)
        return stats_later(tags)

    monkeypatch.setattr(backend, "stats_later", spy)
    return asked


def test_an_evaluation_learns_and_explains_its_own_moved_bytes(backend, asks):
    data = np.random.default_rng(1).random(SHAPE)
    y, want = _moving_join(sp.array(data, tiling=Tiling.column(SHAPE, 2))), data.sum(axis=1)
    np.testing.assert_allclose(sp.compute(y)[0], want)
    explained = sp.explain(y)
    planned = explained.planned
    # the evaluation and explain asked for the plan's tags, not for every tag kept
    assert len(asks) == 2 and all(tags == planned.tags for tags in asks)
    assert planned.plan.total > 0
    assert sum(planned.plan.measured.values()) == backend.stats().bytes_moved > 0


def test_workers_keep_the_newest_tags_only(local, monkeypatch):
    monkeypatch.setattr(worker_module, "TAGS_KEPT", 2)
    rng = np.random.default_rng(2)
    tags = []
    for _ in range(4):
        y, want = _moving_product(rng)
        np.testing.assert_allclose(sp.compute(y)[0], want)
        tags.append(sp.explain(y).planned.tags)
    kept = [set(w.bytes_by_tag) for w in local.workers]
    assert all(len(k) <= 2 for k in kept)
    newest, oldest = tags[-1], tags[0]
    assert any(k & newest for k in kept)
    assert not any(k & oldest for k in kept)


def test_a_loop_stops_asking_for_moved_bytes_once_its_joins_are_learned(backend, asks):
    rng = np.random.default_rng(3)
    data = rng.random(SHAPE)
    a = sp.array(data, tiling=Tiling.column(SHAPE, 2))
    runs = 40
    for _ in range(runs):
        y = _moving_join(a)  # one call site: its learned update cost settles after a few
        np.testing.assert_allclose(sp.compute(y)[0], data.sum(axis=1))
    # measured until settled, then once every MEASURE_EVERY evaluations
    most = planning.SETTLED_AFTER + 1 + runs // planning.MEASURE_EVERY
    assert 1 <= len(asks) <= most < runs
    # explain still measures the last, unmeasured evaluation itself
    planned = sp.explain(y).planned
    assert sum(planned.plan.measured.values()) > 0
