"""Predicted bytes equal the bytes the backend moves, operator by operator.

Each test builds the same computation twice: with spartan's frontend (tilings pinned)
and as an optimizer :class:`Program`; it evaluates node by node on the in-process and
the Ray backend and compares ``stats().bytes_moved`` with the plan's prediction.
"""

from __future__ import annotations

import sys

import cloudpickle
import numpy as np
import pytest

import spartan as sp
from spartan.frontend import products
from spartan.frontend.filter import Filter
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.optimizer import Choice, Program, UpdateHistory, optimize, plan_for
from spartan.tiling import Tiling

SHAPE = (12, 10)

# Ray workers cannot import this test module: ship its task functions by value
for _pickler in (cloudpickle, pytest.importorskip("ray.cloudpickle")):
    _pickler.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(autouse=True)
def _inputs_keep_their_tiling():
    """Each check pins every tiling; the planner must not re-tile evaluated inputs."""
    sp.config.retile_inputs = False
    yield
    sp.config.retile_inputs = True


def moved(backend, arr) -> int:
    """Bytes moved between workers to evaluate ``arr`` (its inputs already evaluated)."""
    backend.reset_stats()
    sp.evaluate(arr)
    return backend.stats().bytes_moved


def pinned(arr, tiling: Tiling):
    arr._expr.tiling_hint = tiling
    return arr


def tilings(shape, nworkers: int) -> list[Tiling]:
    out = [Tiling.row(shape, nworkers), Tiling.column(shape, nworkers)]
    if len(shape) >= 2:
        out.append(Tiling.block(shape, 4))
    return out + [Tiling.duplicated(shape)]


class Twin:
    """A spartan computation and its optimizer program, built side by side."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.P = backend.nworkers
        self.p = Program()
        self.fixed: dict[int, Tiling | Choice] = {}
        self.measured: dict[int, int] = {}
        self.rng = np.random.default_rng(0)

    def source(self, data: np.ndarray, tiling: Tiling):
        arr = sp.array(data, tiling=tiling)
        sp.evaluate(arr)
        nid = self.p.source(data.shape, data.itemsize, tiling=tiling)
        self.fixed[nid] = tiling
        return arr, nid

    def rand(self, shape, tiling: Tiling):
        return self.source(self.rng.random(shape), tiling)

    def run(self, arr, nid: int, choice: Tiling | Choice):
        tiling = choice.tiling if isinstance(choice, Choice) else choice
        self.fixed[nid] = choice
        self.measured[nid] = moved(self.backend, pinned(arr, tiling))
        return arr, nid

    def check(self) -> None:
        plan = plan_for(self.p, self.P, self.fixed)
        for nid, got in self.measured.items():
            assert got == plan.predicted[nid], (nid, self.p[nid].op, got, plan.predicted[nid])


def _add3(x, y, z):
    return x + y + z


@pytest.mark.parametrize("k", range(4))
def test_map_broadcast_transpose_and_slices(backend, k):
    t = Twin(backend)
    ta = tilings(SHAPE, t.P)[k]
    for to in tilings(SHAPE, t.P):
        a, pa = t.rand(SHAPE, ta)
        b, pb = t.rand(SHAPE[::-1], tilings(SHAPE[::-1], t.P)[(k + 1) % 4])
        v, pv = t.rand((SHAPE[1],), Tiling.row((SHAPE[1],), t.P))
        abv = sp.map(_add3, a, b.T, v)  # one map node (chains of maps may be fused)
        t.run(abv, t.p.map(pa, t.p.transpose(pb), pv), to)
        sub = sp.slice(a, (slice(1, None, 2), slice(None, None, -3)))
        psub = t.p.slice(pa, (slice(1, None, 2), slice(None, None, -3)))
        t.run(sub * 2, t.p.map(psub), tilings(sub.shape, t.P)[k])
        row = sp.slice(a, 5)
        t.run(row + 1, t.p.map(t.p.slice(pa, 5)), Tiling.row(row.shape, t.P))
    t.check()


@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_fold_over_arrays_and_views(backend, axis):
    t = Twin(backend)
    for ta in tilings(SHAPE, t.P):
        a, pa = t.rand(SHAPE, ta)
        for transposed in (False, True):
            x, px = (a.T, t.p.transpose(pa)) if transposed else (a, pa)
            out = x.sum(axis=axis)
            for to in tilings(out.shape, t.P) if out.shape else [Tiling(())]:
                t.run(x.sum(axis=axis), t.p.fold(px, axis), to)
    t.check()


def test_scan_keeps_the_input_grid(backend):
    t = Twin(backend)
    for ta in tilings(SHAPE, t.P):
        a, pa = t.rand(SHAPE, ta)
        for axis in (0, 1):
            # the frontend's scan keeps its input's grid (a duplicated input: one tile)
            grid = Tiling.single(SHAPE) if ta.replicated else ta
            t.run(sp.cumsum(a, axis=axis), t.p.scan(pa, axis), grid)
            view_grid = Tiling.single(SHAPE[::-1]) if ta.replicated else Tiling(ta.cuts[::-1])
            t.run(sp.cumsum(a.T, axis=axis), t.p.scan(t.p.transpose(pa), axis), view_grid)
    t.check()


def test_filter_reads_in_the_row_grid(backend):
    t = Twin(backend)
    mask_np = np.zeros(SHAPE, dtype=bool)
    mask_np[:, ::2] = True  # every row keeps half: rows stay where they were
    for ta in tilings(SHAPE, t.P):
        for tm in tilings(SHAPE, t.P):
            a, pa = t.rand(SHAPE, ta)
            m, pm = t.source(mask_np, tm)
            count = int(mask_np.sum())
            out = sp.Array(Filter(a._expr, m._expr))  # the operator itself, no mask cast
            nid = t.p.filter(pa, pm, count)
            t.measured[nid] = moved(backend, out)
            t.fixed[nid] = Tiling.row((count,), t.P if not ta.replicated else 1)
            np.testing.assert_array_equal(np.asarray(out), a.to_numpy()[mask_np])
    t.check()


def _rows(extents, xt, y):
    return [(extents[0].rows, xt @ y)]


def _whole(extents, *blocks):
    return [((), np.full((SHAPE[0], 6), float(sum(b.sum() for b in blocks))))]


@pytest.mark.parametrize("k", range(4))
def test_join_update_reads_and_updates(backend, k):
    t = Twin(backend)
    tx = tilings(SHAPE, t.P)[k]
    for ty in tilings((SHAPE[1], 6), t.P)[::2]:
        x, px = t.rand(SHAPE, tx)
        y, py = t.rand((SHAPE[1], 6), ty)
        for to in tilings((SHAPE[0], 6), t.P):
            j = sp.join_update(
                _rows, np.add, [x, y], axes=[0, -1], shape=(SHAPE[0], 6), update_axis=0
            )
            pj = t.p.join_update([px, py], [0, -1], (SHAPE[0], 6), update_axis=0)
            t.run(j, pj, to)
            j = sp.join_update(_whole, np.add, [x, y], axes=[1, 0], shape=(SHAPE[0], 6))
            pj = t.p.join_update([px, py], [1, 0], (SHAPE[0], 6))
            t.run(j, pj, to)
            # two groups, updates onto a base array
            base, pbase = t.rand((SHAPE[0], 6), tilings((SHAPE[0], 6), t.P)[(k + 2) % 4])
            expr = JoinUpdate(
                _rows,
                np.add,
                [x._expr, y._expr],
                [0, -1],
                (SHAPE[0], 6),
                float,
                base=base._expr,
                groups=2,
                update_axis=0,
            )
            pj = t.p.join_update(
                [px, py], [0, -1], (SHAPE[0], 6), update_axis=0, groups=2, base=pbase
            )
            t.run(sp.Array(expr), pj, to)
    t.check()


def _half_rows(extents, xt, y):
    """Sparse updates: only the first half of the group's rows."""
    lo, hi = extents[0].box[0]
    half = (hi - lo) // 2
    return [((slice(lo, lo + half),), (xt @ y)[:half])]


def test_measured_updates_correct_the_next_prediction(backend):
    """A join_update in a loop: the second plan predicts what the first run measured."""
    P = backend.nworkers
    rng = np.random.default_rng(2)
    tx, ty = Tiling.row(SHAPE, P), Tiling.row((SHAPE[1], 6), P)
    x = sp.array(rng.random(SHAPE), tiling=tx)
    y = sp.array(rng.random((SHAPE[1], 6)), tiling=ty)
    sp.evaluate(x, y)
    p = Program()
    px, py = p.source(SHAPE, tiling=tx), p.source((SHAPE[1], 6), tiling=ty)
    pj = p.join_update([px, py], [0, -1], (SHAPE[0], 6), update_axis=0, site="loop")
    history = UpdateHistory()
    for to in tilings((SHAPE[0], 6), P)[1:]:  # outputs the updates must travel to
        tilings_ = {px: tx, py: ty, pj: to}
        first = plan_for(p, P, tilings_, history)
        j = sp.join_update(_half_rows, np.add, [x, y], axes=[0, -1], shape=(SHAPE[0], 6))
        got = moved(backend, pinned(j, to))
        first.record_measured(pj, got)
        first.teach(history)
        assert plan_for(p, P, tilings_, history).predicted[pj] == got


def test_a_site_learns_from_all_its_joins_together():
    """A loop's joins share a site: the history learns their sum, not the last one's
    (CG's last ``A @ p`` moves 16 of its 16,000 bytes; alone it set every prediction to 0)."""
    P = 2
    tx, ty = Tiling.row(SHAPE, P), Tiling.row((SHAPE[1], 6), P)
    p = Program()
    px, py = p.source(SHAPE, tiling=tx), p.source((SHAPE[1], 6), tiling=ty)
    joins = [
        p.join_update([px, py], [0, -1], (SHAPE[0], 6), update_axis=0, site="loop")
        for _ in range(2)
    ]
    to = Tiling.column((SHAPE[0], 6), P)  # the updates must travel
    plan = plan_for(p, P, {px: tx, py: ty, **dict.fromkeys(joins, to)}, UpdateHistory())
    (u1, e1), (u2, e2) = (plan.updates[j] for j in joins)
    assert e1 > 0 and e1 == e2
    plan.record_measured(joins[0], plan.predicted[joins[0]] - u1 + e1)  # every update moved
    plan.record_measured(joins[1], plan.predicted[joins[1]] - u2)  # none did
    history = UpdateHistory()
    plan.teach(history)
    assert history.factor("loop") == pytest.approx(0.5)


@pytest.mark.parametrize("impl", ["rows", "inner"])
def test_dot_algorithms(backend, impl):
    t = Twin(backend)
    fn = products._rows_times_whole if impl == "rows" else products._partial_product
    axes, accum = ([0, -1], None) if impl == "rows" else ([1, 0], np.add)
    # more row tiles than workers: each worker's groups fetch the whole y once
    for tx in [*tilings(SHAPE, t.P), Tiling.row(SHAPE, 2 * t.P), Tiling.block(SHAPE, 4 * t.P)]:
        x, px = t.rand(SHAPE, tx)
        y, py = t.rand((SHAPE[1], 6), Tiling.row((SHAPE[1], 6), t.P))
        for to in tilings((SHAPE[0], 6), t.P):
            z = sp.Array(JoinUpdate(fn, accum, [x._expr, y._expr], axes, (SHAPE[0], 6), float))
            t.run(z, t.p.dot(px, py), Choice(to, impl))
            np.testing.assert_allclose(z.to_numpy(), x.to_numpy() @ y.to_numpy())
    t.check()


def test_whole_operand_is_fetched_once_per_worker(backend):
    """``x @ y`` by rows with two row tiles of ``x`` per worker: each worker fetches the
    parts of ``y`` it lacks once for both its groups (it fetched them per group), and
    the output rows stay where they are made."""
    P = backend.nworkers
    x = sp.array(np.random.default_rng(1).random(SHAPE), tiling=Tiling.row(SHAPE, 2 * P))
    y = sp.array(np.random.default_rng(2).random((SHAPE[1], 6)), tiling=Tiling.row((10, 6), P))
    sp.evaluate(x, y)
    z = sp.Array(
        JoinUpdate(
            products._rows_times_whole,
            None,
            [x._expr, y._expr],
            [0, -1],
            (SHAPE[0], 6),
            float,
            update_axis=0,
        )
    )
    assert moved(backend, pinned(z, Tiling.row((SHAPE[0], 6), P))) == (P - 1) * y.nbytes
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() @ y.to_numpy())


@pytest.mark.parametrize("new", [(120,), (3, 4, 10), (12, 5, 2)])
def test_reshape(backend, new):
    t = Twin(backend)
    for ta in tilings(SHAPE, t.P):
        a, pa = t.rand(SHAPE, ta)
        for to in tilings(new, t.P):
            t.run(a.reshape(new), t.p.reshape(pa, new), to)
    t.check()


def test_concatenate(backend):
    t = Twin(backend)
    for ta in tilings(SHAPE, t.P):
        a, pa = t.rand(SHAPE, ta)
        b, pb = t.rand((5, 10), Tiling.column((5, 10), t.P))
        c, pc = t.rand((12, 3), Tiling.row((12, 3), t.P))
        for to in tilings((17, 10), t.P):
            t.run(sp.concatenate([a, b]), t.p.concatenate([pa, pb]), to)
        for to in tilings((12, 13), t.P):
            t.run(sp.concatenate([a, c], axis=1), t.p.concatenate([pa, pc], 1), to)
    t.check()


def test_retiling_an_evaluated_array(backend):
    t = Twin(backend)
    for ta in tilings(SHAPE, t.P):
        for tb in tilings(SHAPE, t.P):
            a = sp.array(t.rng.random(SHAPE), tiling=ta)
            sp.evaluate(a)
            p = Program()
            src = p.source(SHAPE, tiling=ta)
            assert moved(backend, a.retile(tb)) == plan_for(p, t.P, {src: tb}).predicted[src]


def test_optimized_program_moves_what_it_predicts(backend):
    """Fig. 3.3 with evaluated inputs, tiled by the optimizer, run, measured."""
    P = backend.nworkers
    n = 24
    rng = np.random.default_rng(1)
    a_np, b_np = rng.random((n, n)), rng.random((n, n))
    a = sp.array(a_np, tiling=Tiling.row((n, n), P))
    b = sp.array(b_np, tiling=Tiling.row((n, n), P))
    sp.evaluate(a, b)
    p = Program()
    pa = p.source((n, n), tiling=Tiling.row((n, n), P))
    pb = p.source((n, n), tiling=Tiling.row((n, n), P))
    pc = p.map(pa, pb)
    pd = p.map(p.transpose(pa), p.transpose(pb))
    pe = p.map(pc, pd)
    pf = p.fold(pe, 0)
    plan = optimize(p, P)
    c = pinned(a + b, plan.tiling[pc])
    d = pinned(a.T + b.T, plan.tiling[pd])
    e = pinned(c + d, plan.tiling[pe])
    f = pinned(e.sum(axis=0), plan.tiling[pf])
    for arr, nid in ((c, pc), (d, pd), (e, pe), (f, pf)):
        plan.record_measured(nid, moved(backend, arr))
    assert sum(plan.measured.values()) == plan.total
    np.testing.assert_allclose(f.to_numpy(), (a_np + b_np + a_np.T + b_np.T).sum(axis=0))
    assert "measured B" in plan.explain()
