"""Reductions and scans over offset, strided and reversed views run where the data is.

A fold or a scan over a view runs one task per base tile the view reads, on that
tile's worker (``spartan.frontend.taskgrid``): ``x[1:].sum(axis=0)`` moves a partial
row per worker, not (P-1)/P of ``x`` as when such a view was one task. Results equal
NumPy's under every tiling, and the optimizer predicts the bytes exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
from spartan.backend import session
from spartan.frontend.planning import resolve_tiling
from spartan.frontend.taskgrid import Grid, view_grid
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Tiling

SHAPE = (13, 7)

#: view name -> the same index applied to a NumPy array and to a spartan array
VIEWS = {
    "x[1:]": lambda a: a[1:],
    "x[::2]": lambda a: a[::2],
    "x[::-1]": lambda a: a[::-1],
    "x[3:-2:3]": lambda a: a[3:-2:3],
    "x[:, 1:]": lambda a: a[:, 1:],
    "x[1:, ::-2]": lambda a: a[1:, ::-2],
    "x[11:0:-4, 2:6]": lambda a: a[11:0:-4, 2:6],
    "x.T[1:]": lambda a: a.T[1:],
    "x[None, 2:]": lambda a: a[None, 2:],
    "x[5:5]": lambda a: a[5:5],
    "x[1:, 2::3]": lambda a: a[1:, 2::3],
}


def _ops(v):
    """(name, result) of the reductions and scans checked, for a NumPy or spartan view."""
    out = []
    for axis in (0, 1, None):
        out.append((f"sum{axis}", v.sum(axis=axis)))
        out.append((f"cumsum{axis}", v.cumsum(axis=axis)))
    if v.size:  # (NumPy raises for these on an empty view)
        out.append(("max0", v.max(axis=0)))
        out.append(("argmin0", v.argmin(axis=0)))
        out.append(("argmax", v.argmax()))
        out.append(("mean0", v.mean(axis=0)))
    out.append(("prod1", v.prod(axis=1)))
    return out


def _check(got, expected, name: str) -> None:
    g = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert g.shape == np.shape(expected), (name, g.shape, np.shape(expected))
    assert g.dtype == np.asarray(expected).dtype, (name, g.dtype)
    if np.issubdtype(g.dtype, np.floating):
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12, err_msg=name)
    else:
        np.testing.assert_array_equal(g, expected, err_msg=name)


@pytest.mark.parametrize("view", list(VIEWS))
def test_view_reductions_match_numpy(backend, tiling, view):
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 6, SHAPE)  # integers: sums and scans compare exactly
    f = rng.standard_normal(SHAPE)
    x, y = sp.array(a, tiling=tiling), sp.array(f, tiling=tiling)
    pick = VIEWS[view]
    for got_all, exp_all in ((_ops(pick(x)), _ops(pick(a))), (_ops(pick(y)), _ops(pick(f)))):
        sp.evaluate(*(r for _, r in got_all))  # one plan for all of them
        for (name, got), (_, expected) in zip(got_all, exp_all):
            _check(got, expected, f"{view}.{name}")


def test_views_of_a_3d_array_and_of_a_computed_base(backend, tiling):
    rng = np.random.default_rng(1)
    a = rng.integers(-9, 10, (6, 5, 4))
    x = sp.array(a, tiling=tiling)
    for axis in (0, 1, 2, None):
        _check(x[1:, ::-2, 1:].sum(axis=axis), a[1:, ::-2, 1:].sum(axis=axis), f"3d sum{axis}")
    for axis in (0, 1, 2):
        _check(x[::-1, 2, 1:].cumsum(axis=axis % 2), a[::-1, 2, 1:].cumsum(axis=axis % 2), "2")
        _check(x[4:0:-3].cumsum(axis=axis), a[4:0:-3].cumsum(axis=axis), f"3d cumsum{axis}")
    _check(x[2].sum(axis=0), a[2].sum(axis=0), "x[2]")
    # the base computed in the same evaluation as the fold over its view
    _check((x * 2)[1:, 1:].sum(axis=0), (a * 2)[1:, 1:].sum(axis=0), "computed base")
    _check((x + 1)[::2].cumsum(axis=0), (a + 1)[::2].cumsum(axis=0), "computed base scan")


def test_keepdims_and_orderless_ufuncs_over_views(local, tiling):
    a = np.arange(1.0, 1.0 + np.prod(SHAPE)).reshape(SHAPE)
    x = sp.array(a, tiling=tiling)
    _check(x[1:].sum(axis=0, keepdims=True), a[1:].sum(axis=0, keepdims=True), "keepdims")
    _check(sp.subtract.reduce(x[::2], axis=0), np.subtract.reduce(a[::2], axis=0), "sub")
    _check(sp.subtract.accumulate(x[1::3], axis=0), np.subtract.accumulate(a[1::3], axis=0), "acc")
    _check(sp.cumprod(x[::-3] / 7, axis=0), np.cumprod(a[::-3] / 7, axis=0), "cumprod")


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.integers(1, 12),
    st.integers(1, 9),
    st.sampled_from(["row", "column", "block", "dup"]),
    st.tuples(st.integers(-14, 14) | st.none(), st.integers(-14, 14) | st.none()),
    st.sampled_from([1, 2, 3, -1, -2, 5]),
    st.sampled_from([0, 1, None]),
)
def test_random_slices_match_numpy(local, n, m, tiling, bounds, step, axis):
    a = np.arange(n * m, dtype=np.int64).reshape(n, m) * 7 % 11 - 5
    x = sp.array(a, tiling=tiling)
    key = (slice(bounds[0], bounds[1], step), slice(None, None, -1 if step < 0 else 2))
    v, w = x[key], a[key]
    _check(v.sum(axis=axis), w.sum(axis=axis), f"{key} sum{axis}")
    _check(v.cumsum(axis=axis), w.cumsum(axis=axis), f"{key} cumsum{axis}")
    if w.size:
        _check(v.argmin(axis=axis), w.argmin(axis=axis), f"{key} argmin{axis}")


# ---- where the tasks run and what moves --------------------------------------------------
def test_view_grid_follows_the_base_tiles():
    # rows 0..7 in 4 tiles of 2 on workers 0..3; x[1:] starts one row into tile 0
    g = view_grid(ViewMap.from_index((8,), slice(1, None)), (8,), Tiling((4,)), 4)
    assert g.bounds == ((0, 1, 3, 5, 7),) and g.workers == (0, 1, 2, 3)
    # reversed: view rows 0..1 are base rows 7..6, on worker 3
    g = view_grid(ViewMap.from_index((8,), slice(None, None, -1)), (8,), Tiling((4,)), 4)
    assert g.bounds == ((0, 2, 4, 6, 8),) and g.workers == (3, 2, 1, 0)
    # every other row of 8 tiles on 2 workers: one task per base tile
    g = view_grid(ViewMap.from_index((16, 3), slice(None, None, 2)), (16, 3), Tiling((8, 1)), 2)
    assert g.bounds == ((0, 1, 2, 3, 4, 5, 6, 7, 8), (0, 3)) and g.workers == (0,) * 4 + (1,) * 4
    # a view that is the whole array: the array's own tiles
    whole = ViewMap.from_index((16, 3), slice(None))
    assert view_grid(whole, (16, 3), Tiling((8, 1)), 2) == Grid.of(Tiling((8, 1)), (16, 3), 2)


P = 8
ROWS, COLS = 4000, 50
ROW_BYTES = COLS * 8


@pytest.fixture
def eight_workers():
    """The in-process backend with 8 workers, for this module's byte counts."""
    from spartan.backend.local import LocalBackend

    old = session.current()
    be = LocalBackend(num_workers=P)
    session.use(be)
    yield be
    session.use(old)
    be.shutdown()


def _moved(be, result) -> tuple[int, dict, dict]:
    """Bytes moved to evaluate ``result``, with the plan's predicted and measured bytes."""
    be.reset_stats()
    sp.evaluate(result)
    moved = be.stats().bytes_moved
    plan = sp.explain(result).plan
    return moved, plan.predicted, plan.measured


#: (result, upper bound on the bytes moved): a partial row per worker goes to the owners
#: of the output's tiles; a scan's tile receives the last row of every tile before it
MOVES = {
    "x[1:].sum(axis=0)": (lambda x: x[1:].sum(axis=0), P * ROW_BYTES),
    "x[::2].sum(axis=0)": (lambda x: x[::2].sum(axis=0), P * ROW_BYTES),
    "x[::-1].sum(axis=0)": (lambda x: x[::-1].sum(axis=0), P * ROW_BYTES),
    "x[1:].sum()": (lambda x: x[1:].sum(), P * 8),
    "x[1:].sum(axis=1)": (lambda x: x[1:].sum(axis=1), 0),
    "x[::2].cumsum(axis=0)": (lambda x: x[::2].cumsum(axis=0), P * P // 2 * ROW_BYTES),
    "x[1:].cumsum(axis=0)": (lambda x: x[1:].cumsum(axis=0), P * P // 2 * ROW_BYTES),
    "x[3:-2:3].cumsum(axis=1)": (lambda x: x[3:-2:3].cumsum(axis=1), 8 * ROW_BYTES),
}


@pytest.mark.parametrize("name", list(MOVES))
@pytest.mark.parametrize("retile_inputs", [True, False])
def test_offset_and_strided_views_move_a_row_per_worker(
    eight_workers, name, retile_inputs, monkeypatch
):
    make, bound = MOVES[name]
    monkeypatch.setattr(sp.config, "retile_inputs", retile_inputs)
    a = np.random.default_rng(2).random((ROWS, COLS))
    x = sp.array(a, tiling=Tiling.row(a.shape, P))
    sp.evaluate(x)
    moved, predicted, measured = _moved(eight_workers, make(x))
    # one task on one worker moved (P-1)/P of x; the bound is far below that
    assert moved <= bound < a.nbytes * (P - 1) // P // 10, (name, moved)
    assert moved == sum(predicted.values()), (name, moved, predicted)
    assert measured == {n: predicted[n] for n in measured}, (name, predicted, measured)
    assert x._expr.data.tiling == Tiling.row(a.shape, P)  # nothing re-tiled
    np.testing.assert_allclose(make(x).to_numpy(), make(a), rtol=1e-12)


@pytest.mark.parametrize("base_tiling", ["row", "column", "block", "dup"])
@pytest.mark.parametrize("view", ["x[1:]", "x[::-1]", "x[11:0:-4, 2:6]", "x[1:, 2::3]", "x.T[1:]"])
def test_predicted_equals_measured_for_every_output_tiling(local, base_tiling, view):
    """Each output tiling (pinned): the fold's and the scan's bytes as predicted, on the
    grid's own tiles and re-cut to others (uneven grids, reversed owners)."""
    sp.config.retile_inputs = False
    try:
        a = np.random.default_rng(3).random((12, 10))
        x = sp.array(a, tiling=base_tiling)
        sp.evaluate(x)
        v, w = VIEWS[view](x), VIEWS[view](a)
        for axis in (0, 1):
            for kind in ("sum", "cumsum"):
                out_shape = getattr(w, kind)(axis=axis).shape
                for out_t in ("row", "column", "block", "dup"):
                    r = getattr(v, kind)(axis=axis)
                    r._expr.tiling_hint = resolve_tiling(out_t, out_shape, 8, local.nworkers)
                    moved, predicted, measured = _moved(local, r)
                    assert moved == sum(predicted.values()), (view, kind, axis, out_t)
                    assert measured == {n: predicted[n] for n in measured}
                    np.testing.assert_allclose(r.to_numpy(), getattr(w, kind)(axis=axis))
    finally:
        sp.config.retile_inputs = True
