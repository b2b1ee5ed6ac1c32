"""The driver's lowering grows linearly in tiles (issue 41).

The lowering of a fold, a map and a dot over thousands of tiny tiles is counted, not
timed: the overlap queries it makes (tiles yielded by ``Grid.overlapping`` and
``Tiling.overlapping``) and the pieces it builds stay within a small multiple of the
tiles, also where the output is replicated on every worker (each copy combines every
input tile's partial: worked out once, not once per worker). The tilings are fixed
here (``planning.choose`` replaced) so the test does not depend on the optimizer's
choice; the results must still equal NumPy's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import spartan as sp
from spartan.backend import session
from spartan.backend.base import Piece
from spartan.backend.local import LocalBackend
from spartan.frontend import planning
from spartan.frontend.expr import Expr
from spartan.frontend.fold import Fold
from spartan.frontend.taskgrid import Grid
from spartan.tiling import Tiling

WORKERS = 16
TILES = 1024  # 64 tiles per worker, one row each


class Counts:
    """Overlap queries (tiles yielded) and pieces built since :meth:`reset`."""

    def __init__(self) -> None:
        self.overlaps = 0
        self.pieces = 0

    def reset(self) -> None:
        self.overlaps = self.pieces = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    c = Counts()

    def counting(query: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def run(*args: Any) -> Iterator[Any]:
            for hit in query(*args):
                c.overlaps += 1
                yield hit

        return run

    monkeypatch.setattr(Grid, "overlapping", counting(Grid.overlapping))
    monkeypatch.setattr(Tiling, "overlapping", counting(Tiling.overlapping))
    made = Piece.__init__

    def piece(self: Piece, *args: Any, **kwargs: Any) -> None:
        c.pieces += 1
        made(self, *args, **kwargs)

    monkeypatch.setattr(Piece, "__init__", piece)
    return c


@pytest.fixture
def many_workers(local: LocalBackend) -> Iterator[LocalBackend]:
    """In-process workers enough that a per-worker, per-tile cost would show, lent to
    this thread (the session's own in-process backend stays current: no array made here
    starts a default backend in the background)."""
    be = LocalBackend(num_workers=WORKERS)
    with session.borrowed(be):
        yield be
    be.shutdown()


def forced(monkeypatch: pytest.MonkeyPatch, rule: Callable[[Expr], Tiling]) -> None:
    """Every evaluation's tilings from ``rule`` (no optimizer: no plan to learn from)."""
    monkeypatch.setattr(
        planning, "choose", lambda order, nworkers: ({e.uid: rule(e) for e in order}, None)
    )


def rows(e: Expr) -> Tiling:
    return Tiling.row(e.shape, TILES) if e.shape else Tiling.single(e.shape)


def test_fold_to_a_replicated_output_is_linear_in_tiles(many_workers, counts, monkeypatch):
    # a row's sum on every worker: each copy combines all 4,096 tiles' partials
    forced(monkeypatch, lambda e: Tiling.duplicated(e.shape) if isinstance(e, Fold) else rows(e))
    a = np.arange(TILES * 2, dtype=float).reshape(TILES, 2)
    x = sp.asarray(a)
    sp.evaluate(x)
    assert x.tiling == Tiling.row(a.shape, TILES)
    counts.reset()
    y = x.sum(axis=1)
    sp.evaluate(y)
    assert y.tiling.replicated
    # quadratic: WORKERS * TILES (16,384) of each
    assert counts.overlaps <= 2 * TILES
    assert counts.pieces <= 3 * TILES
    np.testing.assert_array_equal(y.to_numpy(), a.sum(axis=1))


@pytest.mark.parametrize("out", ["row", "dup"])
def test_fold_over_rows_is_linear_in_tiles(many_workers, counts, monkeypatch, out):
    def rule(e: Expr) -> Tiling:
        if isinstance(e, Fold):
            return Tiling.duplicated(e.shape) if out == "dup" else Tiling.row(e.shape, 2)
        return rows(e)

    forced(monkeypatch, rule)
    a = np.arange(TILES * 2, dtype=float).reshape(TILES, 2)
    x = sp.asarray(a)
    sp.evaluate(x)
    counts.reset()
    y = (x * 2).sum(axis=0)
    sp.evaluate(y)
    assert counts.overlaps <= 2 * TILES
    assert counts.pieces <= 3 * TILES
    np.testing.assert_array_equal(y.to_numpy(), (a * 2).sum(axis=0))


def test_map_and_dot_are_linear_in_tiles(many_workers, counts, monkeypatch):
    def rule(e: Expr) -> Tiling:
        if e.ndim == 2 and e.shape[0] == TILES:
            return rows(e)
        return Tiling.duplicated(e.shape)  # the weights and the product's result

    forced(monkeypatch, rule)
    a = np.arange(TILES * 2, dtype=float).reshape(TILES, 2) % 7
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    x, wx = sp.asarray(a), sp.asarray(w)
    sp.evaluate(x, wx)
    counts.reset()
    z = sp.sqrt(x * x + 1)
    sp.evaluate(z)
    assert counts.overlaps <= 2 * TILES and counts.pieces <= 3 * TILES
    counts.reset()
    g = x.T @ x  # every tile's update, combined on every worker
    sp.evaluate(g)
    assert g.tiling.replicated
    assert counts.overlaps <= 2 * TILES and counts.pieces <= 3 * TILES
    np.testing.assert_allclose(z.to_numpy(), np.sqrt(a * a + 1))
    np.testing.assert_allclose(g.to_numpy(), a.T @ a)
    assert wx.shape == (2, 2)


def test_driver_time_per_phase_in_stats(backend):
    """``spartan.stats()["driver_seconds"]``: the driver's own time per evaluation
    phase, cumulative, cleared by ``spartan.reset_stats()``."""
    sp.reset_stats()
    zero = sp.stats()["driver_seconds"]
    assert zero == dict.fromkeys(("plan", "lower", "dispatch", "wait"), 0.0)
    x = sp.asarray(np.arange(24.0).reshape(6, 4))
    y = (x * 2 + 1).sum(axis=0)
    np.testing.assert_array_equal(y.to_numpy(), (np.arange(24.0).reshape(6, 4) * 2 + 1).sum(0))
    once = sp.stats()["driver_seconds"]
    assert set(once) == set(zero)
    assert all(s >= 0 for s in once.values())
    assert once["plan"] > 0 and once["lower"] > 0 and once["wait"] > 0
    z = sp.sqrt(x + 3).sum()
    assert float(z) == pytest.approx(np.sqrt(np.arange(24.0) + 3).sum())
    twice = sp.stats()["driver_seconds"]
    assert all(twice[p] >= once[p] for p in once)
    assert sum(twice.values()) > sum(once.values())
    sp.reset_stats()
    assert sp.stats()["driver_seconds"] == zero
    assert sp.stats()["tasks"] == 0


def test_driver_time_nests_exclusively(monkeypatch):
    """A phase inside another is counted to the inner one only (a fake clock)."""
    from spartan.backend import base

    now = [0.0]
    monkeypatch.setattr(base.time, "perf_counter", lambda: now[0])
    t = base.DriverTime()
    with t.phase("lower"):
        now[0] += 1.0
        with t.phase("dispatch"):
            now[0] += 2.0
        now[0] += 4.0
        with t.phase("wait"):
            now[0] += 8.0
    assert t.snapshot() == {"plan": 0.0, "lower": 5.0, "dispatch": 2.0, "wait": 8.0}
    t.reset()
    assert t.snapshot() == dict.fromkeys(base.DriverTime.PHASES, 0.0)


def test_driver_time_phases_nest_per_thread(monkeypatch):
    """A phase another thread has open is not around this thread's phases: each is
    counted to its own thread's nesting (a fake clock moved by this thread only)."""
    import threading

    from spartan.backend import base

    now = [0.0]
    monkeypatch.setattr(base.time, "perf_counter", lambda: now[0])
    t = base.DriverTime()
    opened, release, closed = threading.Event(), threading.Event(), threading.Event()

    def other() -> None:
        with t.phase("wait"):  # opens at 1, closes at 9
            opened.set()
            release.wait(timeout=30)
        closed.set()

    thread = threading.Thread(target=other)
    with t.phase("lower"):  # 0 to 10, "plan" inside it
        now[0] = 1.0
        thread.start()
        assert opened.wait(timeout=30)
        now[0] = 3.0
        with t.phase("plan"):
            now[0] = 5.0
        now[0] = 9.0
        release.set()
        assert closed.wait(timeout=30)
        now[0] = 10.0
    thread.join(timeout=30)
    # one shared stack would give plan's 2 s to the other thread's "wait" (6) and the
    # whole "wait" to this thread's "lower" (2)
    assert t.snapshot() == {"plan": 2.0, "lower": 8.0, "dispatch": 0.0, "wait": 8.0}
