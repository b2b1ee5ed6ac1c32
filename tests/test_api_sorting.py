"""The distributed sample sort and the functions on it (argsort, partition,
searchsorted, unique, set routines) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
values = hnp.arrays(
    st.sampled_from([np.float64, np.int32, np.int8, np.int16]),
    st.integers(0, 60),
    elements={"min_value": -5, "max_value": 5},  # many ties
)


@FAST
@given(a=values, workers_tiles=st.sampled_from([1, 2, 3]))
def test_sample_sort_matches_numpy(local, a, workers_tiles):
    sp.config.tiles_per_worker = workers_tiles
    x = sp.array(a)
    got = sp.sort(x).to_numpy()
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, np.sort(a))
    np.testing.assert_array_equal(sp.argsort(x).to_numpy(), np.argsort(a, kind="stable"))


def test_sort_floats_with_nan_and_inf(local, tiling):
    a = np.array([3.0, np.nan, -np.inf, 1.0, np.nan, np.inf, -0.5, 1.0, 2.0])
    x = sp.array(a, tiling=tiling)
    np.testing.assert_array_equal(sp.sort(x).to_numpy(), np.sort(a))
    np.testing.assert_array_equal(sp.argsort(x).to_numpy(), np.argsort(a, kind="stable"))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_sort_along_axes(local, tiling, axis):
    a = np.random.default_rng(1).integers(0, 6, (6, 7)).astype(float)
    x = sp.array(a, tiling=tiling)
    np.testing.assert_array_equal(sp.sort(x, axis=axis).to_numpy(), np.sort(a, axis=axis))
    np.testing.assert_array_equal(
        sp.argsort(x, axis=axis).to_numpy(), np.argsort(a, axis=axis, kind="stable")
    )
    if axis is not None:
        np.testing.assert_array_equal(
            sp.partition(x, 2, axis=axis).to_numpy(), np.partition(a, 2, axis=axis)
        )
        np.testing.assert_array_equal(
            sp.argpartition(x, 2, axis=axis).to_numpy(), np.argpartition(a, 2, axis=axis)
        )


def test_partition_1d_property(local):
    a = np.random.default_rng(2).standard_normal(40)
    for k in (0, 7, 39, -1):
        p = sp.partition(sp.array(a), k).to_numpy()
        assert p[k] == np.sort(a)[k]
        assert np.all(p[:k] <= p[k]) and np.all(p[k:] >= p[k])
        i = sp.argpartition(sp.array(a), k).to_numpy()
        assert a[i][k] == np.sort(a)[k]


def test_searchsorted(local, tiling):
    a = np.sort(np.random.default_rng(3).integers(0, 20, 30))
    v = np.array([[-1, 0, 5], [7, 19, 25]])
    x = sp.array(a, tiling=tiling)
    for side in ("left", "right"):
        np.testing.assert_array_equal(
            sp.searchsorted(x, v, side).to_numpy(), np.searchsorted(a, v, side)
        )
    assert int(sp.searchsorted(x, 5)) == np.searchsorted(a, 5)
    perm = np.random.default_rng(4).permutation(30)
    b = a[perm]
    np.testing.assert_array_equal(
        sp.searchsorted(b, v.ravel(), sorter=np.argsort(b, kind="stable")).to_numpy(),
        np.searchsorted(b, v.ravel(), sorter=np.argsort(b, kind="stable")),
    )


@FAST
@given(
    a=hnp.arrays(
        np.int64, st.tuples(st.integers(1, 5), st.integers(1, 8)), elements=st.integers(-4, 4)
    )
)
def test_unique_with_everything(local, a):
    got = sp.unique(sp.array(a), return_index=True, return_inverse=True, return_counts=True)
    exp = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g.to_numpy(), e)


def test_unique_nan_and_array_api(local, tiling):
    a = np.array([2.0, np.nan, 1.0, 2.0, np.nan])
    x = sp.array(a, tiling=tiling)
    np.testing.assert_array_equal(sp.unique(x).to_numpy(), np.unique(a))
    np.testing.assert_array_equal(
        sp.unique(x, equal_nan=False).to_numpy(), np.unique(a, equal_nan=False)
    )
    c = sp.unique_counts(x)
    e = np.unique_counts(a)
    np.testing.assert_array_equal(c.values.to_numpy(), e.values)
    np.testing.assert_array_equal(c.counts.to_numpy(), e.counts)
    ui = sp.unique_inverse(x)
    np.testing.assert_array_equal(
        ui.inverse_indices.to_numpy(), np.unique_inverse(a).inverse_indices
    )
    ua = sp.unique_all(x)
    np.testing.assert_array_equal(ua.indices.to_numpy(), np.unique_all(a).indices)


@FAST
@given(
    a=hnp.arrays(np.int64, st.integers(0, 25), elements=st.integers(0, 12)),
    b=hnp.arrays(np.int64, st.integers(0, 25), elements=st.integers(0, 12)),
)
def test_set_routines(local, a, b):
    x, y = sp.array(a), sp.array(b)
    for name in ("intersect1d", "union1d", "setdiff1d", "setxor1d"):
        np.testing.assert_array_equal(getattr(sp, name)(x, y).to_numpy(), getattr(np, name)(a, b))
    np.testing.assert_array_equal(sp.isin(x, y).to_numpy(), np.isin(a, b))
    np.testing.assert_array_equal(sp.isin(x, b, invert=True).to_numpy(), np.isin(a, b, invert=True))
    got = sp.intersect1d(x, y, return_indices=True)
    exp = np.intersect1d(a, b, return_indices=True)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g.to_numpy(), e)


def test_isin_nd(local, tiling):
    a = np.arange(20).reshape(4, 5) % 7
    np.testing.assert_array_equal(
        sp.isin(sp.array(a, tiling=tiling), [1, 6]).to_numpy(), np.isin(a, [1, 6])
    )


def test_errors(local):
    x = sp.arange(5)
    with pytest.raises(ValueError):
        sp.sort(x, kind="bogo")
    with pytest.raises(np.exceptions.AxisError):
        sp.sort(x, axis=1)
    with pytest.raises(ValueError):
        sp.partition(x, 5)
    with pytest.raises(TypeError):
        sp.partition(x, 1.5)
    with pytest.raises(ValueError):
        sp.searchsorted(x, 1, side="middle")
    with pytest.raises(ValueError):
        sp.searchsorted(sp.ones((2, 2)), 1)


def test_sort_on_ray_moves_no_driver_data(backend):
    a = np.random.default_rng(5).standard_normal(200)
    x = sp.array(a, tiling="row").evaluate()
    backend.reset_stats()
    s = sp.sort(x).evaluate()
    stats = backend.stats().as_dict()
    # only the per-bucket counts come back to the driver while sorting
    assert stats["bytes_to_driver"] < 1000
    np.testing.assert_array_equal(s.to_numpy(), np.sort(a))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_slices(local, tiling, axis):
    a = np.random.default_rng(7).integers(0, 3, (12, 2))
    got = sp.unique(
        sp.array(a, tiling=tiling),
        axis=axis,
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    exp = np.unique(a, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g.to_numpy(), e)
    b = np.random.default_rng(8).integers(0, 2, (3, 4, 2)).astype(float)
    np.testing.assert_array_equal(
        sp.unique(sp.array(b, tiling=tiling), axis=1).to_numpy(), np.unique(b, axis=1)
    )
