"""nan* reductions, order statistics, counting and averages against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
AXES = [None, 0, 1, -1, (0, 1)]


def close(got, expected):
    g = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert g.shape == np.shape(expected), (g.shape, np.shape(expected))
    np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12, equal_nan=True)


def with_nans(seed=0, shape=(6, 5)):
    a = np.random.default_rng(seed).standard_normal(shape)
    a[1, 2] = a[4, 0] = np.nan
    return a


@pytest.mark.parametrize("axis", AXES)
def test_nan_reductions(local, tiling, axis):
    a = with_nans()
    x = sp.array(a, tiling=tiling)
    for name in ["nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanvar", "nanstd"]:
        close(getattr(sp, name)(x, axis=axis), getattr(np, name)(a, axis=axis))
    close(
        sp.nanvar(x, axis=axis, ddof=1, keepdims=True),
        np.nanvar(a, axis=axis, ddof=1, keepdims=True),
    )
    if not isinstance(axis, tuple):
        np.testing.assert_array_equal(
            sp.nanargmax(x, axis=axis).to_numpy(), np.nanargmax(a, axis=axis)
        )
        np.testing.assert_array_equal(
            sp.nanargmin(x, axis=axis).to_numpy(), np.nanargmin(a, axis=axis)
        )


def test_nan_scans(local, tiling):
    a = with_nans(1)
    x = sp.array(a, tiling=tiling)
    close(sp.nancumsum(x), np.nancumsum(a))
    close(sp.nancumsum(x, axis=1), np.nancumsum(a, axis=1))
    close(sp.nancumprod(x, axis=0), np.nancumprod(a, axis=0))


def test_integer_nan_functions_are_plain(local):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = sp.array(a)
    assert sp.nansum(x).item() == np.nansum(a)
    assert sp.nanmax(x, axis=0).dtype == np.nanmax(a, axis=0).dtype
    close(sp.nanmean(x, axis=1), np.nanmean(a, axis=1))


@pytest.mark.parametrize("axis", AXES)
def test_order_statistics(local, tiling, axis):
    a = np.random.default_rng(2).standard_normal((7, 6))
    x = sp.array(a, tiling=tiling)
    close(sp.median(x, axis=axis), np.median(a, axis=axis))
    close(sp.median(x, axis=axis, keepdims=True), np.median(a, axis=axis, keepdims=True))
    methods = ("linear", "lower", "higher", "nearest", "midpoint") if axis in (None, 1) else ()
    for q in (0.25, [0.0, 0.5, 1.0]):
        for method in methods:
            close(
                sp.quantile(x, q, axis=axis, method=method),
                np.quantile(a, q, axis=axis, method=method),
            )
    close(sp.percentile(x, [10, 90], axis=axis), np.percentile(a, [10, 90], axis=axis))


def test_nan_order_statistics(local, tiling):
    a = with_nans(3)
    x = sp.array(a, tiling=tiling)
    close(sp.median(x), np.median(a))  # NaN propagates
    close(sp.median(x, axis=0), np.median(a, axis=0))
    close(sp.nanmedian(x), np.nanmedian(a))
    close(sp.nanmedian(x, axis=1), np.nanmedian(a, axis=1))
    close(sp.nanpercentile(x, 30, axis=0), np.nanpercentile(a, 30, axis=0))
    close(sp.nanquantile(x, [0.2, 0.8]), np.nanquantile(a, [0.2, 0.8]))


@FAST
@given(
    a=hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(-100, 100)),
    q=st.floats(0, 1),
)
def test_quantile_by_ranks_of_the_sort(local, a, q):
    close(sp.quantile(sp.array(a), q), np.quantile(a, q))


def test_counts(local, tiling):
    rng = np.random.default_rng(4)
    b = rng.integers(0, 7, 50)
    w = rng.random(50)
    np.testing.assert_array_equal(
        sp.bincount(sp.array(b, tiling=tiling)).to_numpy(), np.bincount(b)
    )
    close(sp.bincount(b, weights=w, minlength=10), np.bincount(b, weights=w, minlength=10))
    a = rng.standard_normal((8, 5))
    x = sp.array(a, tiling=tiling)
    for bins in (4, np.array([-3.0, -1, 0, 0.5, 3])):
        h, e = sp.histogram(x, bins)
        h2, e2 = np.histogram(a, bins)
        np.testing.assert_array_equal(h.to_numpy(), h2)
        np.testing.assert_allclose(e, e2)
    h, _ = sp.histogram(x, 5, range=(-1, 1), density=True)
    close(h, np.histogram(a, 5, range=(-1, 1), density=True)[0])


def test_average_and_covariance(local, tiling):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 4))
    x = sp.array(a, tiling=tiling)
    w = rng.random(4)
    close(sp.average(x), np.average(a))
    close(sp.average(x, axis=1, weights=w), np.average(a, axis=1, weights=w))
    avg, scl = sp.average(x, axis=0, weights=rng.random((6, 4)) * 0 + 1, returned=True)
    ea, es = np.average(a, axis=0, weights=np.ones((6, 4)), returned=True)
    close(avg, ea)
    close(scl, es)
    close(sp.cov(x), np.cov(a))
    close(sp.cov(x, rowvar=False, ddof=0), np.cov(a, rowvar=False, ddof=0))
    close(sp.corrcoef(x), np.corrcoef(a))


def test_errors(local):
    x = sp.ones((3, 4))
    with pytest.raises(ValueError):
        sp.quantile(x, 1.5)
    with pytest.raises(ValueError):
        sp.percentile(x, -1)
    with pytest.raises(np.exceptions.AxisError):
        sp.median(x, axis=2)
    with pytest.raises(ValueError):
        sp.bincount(sp.arange(4).reshape(2, 2))
    with pytest.raises(TypeError):
        sp.bincount(sp.ones(3))
    with pytest.raises(ValueError):
        sp.bincount(sp.array([1, -1]))
    with pytest.raises(TypeError):
        sp.average(x, weights=np.ones(4))
    with pytest.raises(ValueError):
        sp.quantile(x, 0.5, method="bogus")


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_where_masks(local, tiling, axis):
    a = np.random.default_rng(6).standard_normal((5, 6))
    w = a > -0.5
    x = sp.array(a, tiling=tiling)
    with np.errstate(all="ignore"):
        for name in ["sum", "prod", "mean", "var", "std"]:
            close(
                getattr(sp, name)(x, axis=axis, where=w), getattr(np, name)(a, axis=axis, where=w)
            )
        close(sp.max(x, axis=axis, where=w, initial=-9), np.max(a, axis=axis, where=w, initial=-9))
        close(
            sp.sum(x, axis=axis, where=[True, False] * 3),
            np.sum(a, axis=axis, where=[True, False] * 3),
        )
    with pytest.raises(ValueError):
        sp.min(x, where=w)


@pytest.mark.parametrize("bins", ["auto", "fd", "doane", "rice", "scott", "sqrt", "sturges"])
def test_histogram_bin_rules(local, tiling, bins):
    rng = np.random.default_rng(9)
    for a in (rng.standard_normal(300), rng.integers(0, 20, 150), np.ones(10)):
        x = sp.array(a, tiling=tiling)
        close(sp.histogram_bin_edges(x, bins), np.histogram_bin_edges(a, bins))
        np.testing.assert_array_equal(sp.histogram(x, bins)[0].to_numpy(), np.histogram(a, bins)[0])
    a = rng.standard_normal(200)
    close(
        sp.histogram_bin_edges(sp.array(a), bins, range=(0, 1)),
        np.histogram_bin_edges(a, bins, range=(0, 1)),
    )
    with pytest.raises(ValueError):
        sp.histogram(sp.array(a), "bogus")


def test_order_statistics_of_empty(local):
    e = sp.zeros(0)
    with np.errstate(all="ignore"):
        for name in ("median", "nanmedian"):
            assert np.isnan(getattr(sp, name)(e).to_numpy())
        assert np.isnan(sp.nanquantile(e, 0.5).to_numpy())
    for name, q in (("quantile", 0.5), ("percentile", 50)):
        with pytest.raises(IndexError):
            getattr(np, name)(np.zeros(0), q)
        with pytest.raises(IndexError):
            getattr(sp, name)(e, q)


# (not power or arctan2: NumPy's own reduce of those over axis 0 differs between the C
# and the Fortran order of the same array)
@pytest.mark.parametrize("ufunc", [np.subtract, np.divide])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_reductions_in_numpys_order(backend, tiling, ufunc, axis):
    """``subtract.reduce`` and the like are not reorderable: each row of the reduced
    axis is folded in NumPy's order (no partials of pieces joined), fused map or not."""
    sp.config.pipeline_chunk_bytes, old = 64, sp.config.pipeline_chunk_bytes
    try:
        a = np.random.default_rng(7).random((40, 6)) + 0.5
        x = sp.array(a, tiling=tiling)
        close(ufunc.reduce(x, axis=axis), ufunc.reduce(a, axis=axis))
        close(ufunc.reduce(x * 2.0, axis=axis), ufunc.reduce(a * 2.0, axis=axis))
        close(ufunc.reduce(sp.array(a[:, 0], tiling="row")), ufunc.reduce(a[:, 0]))
        # initial comes first, as in NumPy
        close(ufunc.reduce(x, axis=axis, initial=3.0), ufunc.reduce(a, axis=axis, initial=3.0))
        close(
            ufunc.reduce(sp.asarray(np.array(5.0)), axis=None, initial=2.0),
            -3.0 if ufunc is np.subtract else 0.4,
        )
    finally:
        sp.config.pipeline_chunk_bytes = old


@pytest.mark.parametrize(
    "call, a",
    [
        (
            lambda m, x: m.bitwise_or.reduce(x, axis=0, dtype=np.int64),
            np.arange(12.0).reshape(4, 3),
        ),
        (lambda m, x: m.subtract.reduce(x, axis=0, dtype=np.float64), np.eye(3, dtype=bool)),
        (lambda m, x: m.greater.reduce(x, axis=None, initial=2), np.array(True)),
        (lambda m, x: m.subtract.reduce(x, axis=None, initial=2.5), np.array(5)),
        (lambda m, x: m.subtract.reduce(x, axis=None, initial=None), np.array(5.0)),
        (lambda m, x: m.add.reduce(x, axis=None, initial=2.5), np.array(5)),
        (lambda m, x: m.maximum.reduce(x, axis=0, initial=True), np.eye(3, dtype=bool)),
    ],
)
def test_reduction_dtype_and_initial_as_numpy(local, call, a):
    """``dtype=`` decides what the ufunc reduces, and ``initial`` is cast to the result's
    type, as in NumPy."""
    want = call(np, a)
    got = call(np, sp.asarray(a))
    got = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def test_unreorderable_reduction_over_two_axes_is_numpys_error(local):
    a = np.ones((3, 4))
    with pytest.raises(ValueError) as expected:
        np.subtract.reduce(a, axis=(0, 1))
    with pytest.raises(ValueError) as got:
        np.subtract.reduce(sp.array(a), axis=(0, 1))
    assert str(got.value) == str(expected.value)
    with pytest.raises(NotImplementedError, match="where="):
        np.subtract.reduce(sp.array(a), axis=0, where=a > 0, initial=0.0)
