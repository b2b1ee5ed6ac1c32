"""Regressions from the data-apis array-api-tests suite (bench/array_api.sh), each checked
against NumPy (or, where NumPy lacks the standard's keyword, against the NumPy code
array-api-compat runs for it). Small arrays, distributed (``local_below_bytes=0`` from
conftest) unless a test says otherwise; docs/array-api.md lists what the suite reports."""

from __future__ import annotations

import inspect
import operator
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


def _sort_desc(a: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.sort(np.flip(a, axis), axis=axis, kind="stable"), axis)


def _argsort_desc(a: np.ndarray, axis: int) -> np.ndarray:
    flipped = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return a.shape[axis] - 1 - np.flip(flipped, axis)


# -- sort / argsort descending= (the standard's keyword; NumPy lacks it) ---------------


@FAST
@given(
    a=hnp.arrays(
        st.sampled_from([np.float64, np.int16, np.uint8]),
        hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=7),
        elements={"min_value": 0, "max_value": 3},  # many ties: stability shows
    ),
    data=st.data(),
)
def test_sort_argsort_descending_match_numpy(local, a, data):
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    x = sp.asarray(a)
    got = sp.sort(x, axis=axis, descending=True).to_numpy()
    np.testing.assert_array_equal(got, _sort_desc(a, axis))
    idx = sp.argsort(x, axis=axis, descending=True).to_numpy()
    np.testing.assert_array_equal(idx, _argsort_desc(a, axis))
    assert idx.dtype == np.intp


def test_descending_nan_first_and_stable(backend, tiling):
    a = np.array([1.0, np.nan, 3.0, 1.0, -0.0, 0.0, 3.0, np.nan, 2.0])
    x = sp.asarray(a, tiling=tiling)
    np.testing.assert_array_equal(sp.sort(x, descending=True).to_numpy(), _sort_desc(a, 0))
    np.testing.assert_array_equal(sp.argsort(x, descending=True).to_numpy(), _argsort_desc(a, 0))
    np.testing.assert_array_equal(sp.sort(x).to_numpy(), np.sort(a))


def test_descending_on_small_arrays_in_the_driver(local):
    sp.config.local_below_bytes = 1 << 20
    a = np.array([[2, 1, 2, 0], [5, 5, 4, 5]])
    x = sp.asarray(a)
    assert x.tiling is None  # computed with NumPy in the driver
    np.testing.assert_array_equal(sp.argsort(x, descending=True).to_numpy(), _argsort_desc(a, 1))
    np.testing.assert_array_equal(
        sp.sort(x, axis=None, descending=True).to_numpy(), np.sort(a, axis=None)[::-1]
    )
    # no descending=: NumPy's own call, as before
    np.testing.assert_array_equal(sp.sort(x, axis=0).to_numpy(), np.sort(a, axis=0))


def test_sort_signatures_have_the_standards_keywords():
    for f in (sp.sort, sp.argsort):
        params = inspect.signature(f).parameters
        assert params["descending"].default is False
        assert params["stable"].kind is inspect.Parameter.KEYWORD_ONLY


# -- clip: the standard's min=/max= and NumPy's a_min=/a_max= -------------------------


def test_clip_bound_names(local):
    a = np.arange(-3, 6)
    x = sp.asarray(a)
    assert list(inspect.signature(sp.clip).parameters)[1:3] == ["min", "max"]
    for args, kwargs in [
        ((1, 3), {}),
        ((), {"min": 1}),
        ((), {"max": 2}),
        ((), {"min": 0, "max": 4}),
        ((), {"a_min": 1, "a_max": 3}),
        ((None, 2), {}),
    ]:
        np.testing.assert_array_equal(
            sp.clip(x, *args, **kwargs).to_numpy(), np.clip(a, *args, **kwargs)
        )
    with pytest.raises(ValueError, match="not both"):
        sp.clip(x, 1, a_max=3)


# -- boolean masks: 0-d masks, axes of length 0, mismatches ----------------------------

MASK_CASES = [
    ((4,), (4,)),
    ((1,), (0,)),  # an axis of length 0 matches any length (NumPy)
    ((0,), ()),  # 0-d mask on an empty array
    ((2, 3), ()),
    ((2, 3), (0,)),
    ((2, 3), (2, 0)),
    ((2, 0), (2,)),
    ((2, 3), (2,)),
    ((2, 3, 2), (2, 3)),
    ((), ()),
    ((3,), (1,)),  # IndexError
    ((2,), (2, 2)),  # IndexError
]


def _outcome(f, *args):
    try:
        return f(*args)
    except (IndexError, ValueError) as e:
        return type(e)


@pytest.mark.parametrize("xs, ms", MASK_CASES)
def test_boolean_mask_get_and_set_match_numpy(local, xs, ms):
    rng = np.random.default_rng(len(xs) * 10 + len(ms))
    a = rng.integers(0, 9, xs)
    for m in (np.ones(ms, bool), np.zeros(ms, bool), rng.integers(0, 2, ms).astype(bool)):
        ref = _outcome(operator.getitem, a, m)
        got = _outcome(lambda x, k: x[k].to_numpy(), sp.asarray(a), sp.asarray(m))
        if isinstance(ref, type):
            assert got is ref, (xs, ms, m)
        else:
            assert got.shape == ref.shape and got.dtype == ref.dtype
            np.testing.assert_array_equal(got, ref)
        rest = xs[len(ms) :]
        for value in (7, np.arange(int(np.prod(rest))).reshape(rest) + 100):
            b = a.copy()
            ref = _outcome(operator.setitem, b, m, value)
            x = sp.asarray(a)
            got = _outcome(operator.setitem, x, sp.asarray(m), value)
            if isinstance(ref, type):
                assert got is ref, (xs, ms, m, value)
            else:
                np.testing.assert_array_equal(x.to_numpy(), b)


def test_python_bool_index_is_a_mask(backend):
    a = np.arange(6).reshape(2, 3)
    x = sp.asarray(a)
    assert x[True].shape == (1, 2, 3) and x[False].shape == (0, 2, 3)
    np.testing.assert_array_equal(x[True].to_numpy(), a[True])
    x[np.True_] = 9
    np.testing.assert_array_equal(x.to_numpy(), np.full((2, 3), 9))


def test_masked_assignment_broadcasts_and_checks_value(backend):
    a = np.arange(8.0)
    x = sp.asarray(a)
    x[x > 3] = np.array([-1.0])  # a length-1 value broadcasts over the selection
    a[a > 3] = -1.0
    np.testing.assert_array_equal(x.to_numpy(), a)
    with pytest.raises(ValueError, match="shape mismatch"):
        x[sp.asarray(np.zeros(8, bool))] = np.ones(5)


# -- reductions: where= with initial=, the nan* functions' NumPy keywords --------------


def test_where_with_initial_counts_initial_once(backend):
    a = np.arange(1.0, 13.0).reshape(3, 4)
    w = (np.arange(12).reshape(3, 4) % 3) != 1
    x = sp.asarray(a)
    for name, initial in (("prod", 2.0), ("sum", 5.0), ("max", -1.0), ("min", 100.0)):
        got = getattr(sp, name)(x, axis=1, where=w, initial=initial).to_numpy()
        np.testing.assert_allclose(got, getattr(np, name)(a, axis=1, where=w, initial=initial))


def test_nanfunc_keywords_match_numpy(local):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5))
    a[a > 0.8] = np.nan
    w = rng.integers(0, 2, (4, 5)).astype(bool)
    w[:, 0] = True
    x = sp.asarray(a)
    calls = [
        ("nansum", {"axis": 0, "where": w, "initial": 1.5}),
        ("nanprod", {"axis": 1, "where": w, "initial": 2.0}),
        ("nanmax", {"axis": 1, "where": w, "initial": -9.0}),
        ("nanmin", {"initial": 9.0}),
        ("nanmean", {"axis": 1, "where": w}),
        ("nanvar", {"axis": 1, "where": w, "ddof": 1}),
        ("nanstd", {"axis": 0, "correction": 1}),
        ("nanvar", {"axis": 1, "mean": np.nanmean(a, axis=1, keepdims=True)}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's: a slice with no data
        for name, kw in calls:
            got = getattr(sp, name)(x, **kw).to_numpy()
            np.testing.assert_allclose(
                got, getattr(np, name)(a, **kw), equal_nan=True, err_msg=name
            )
    with pytest.raises(ValueError, match="initial"):
        sp.nanmax(x, where=w)


# -- other keywords of the standard's (and NumPy's) signatures --------------------------


def test_take_along_axis_default_axis_is_last(local):
    a = np.arange(12).reshape(3, 4)
    idx = np.argsort(-a, axis=-1)
    got = sp.take_along_axis(sp.asarray(a), sp.asarray(idx)).to_numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(a, idx, axis=-1))


def test_cumulative_out_and_isinf_out(local):
    x = sp.asarray(np.arange(1, 5))
    out = sp.zeros(5, dtype=np.int64)
    assert sp.cumulative_sum(x, include_initial=True, out=out) is out
    np.testing.assert_array_equal(out.to_numpy(), [0, 1, 3, 6, 10])
    flags = sp.zeros(3, dtype=bool)
    sp.isneginf(sp.asarray([np.inf, -np.inf, 1.0]), out=flags)
    np.testing.assert_array_equal(flags.to_numpy(), [False, True, False])


def test_small_argsort_is_stable_like_the_distributed_one(local):
    a = np.array([1, 0, 1, 0] * 10, dtype=np.uint8)  # ties beyond insertion-sort sizes
    stable = np.argsort(a, kind="stable")
    sp.config.local_below_bytes = 1 << 20
    small = sp.asarray(a)
    assert small.tiling is None
    np.testing.assert_array_equal(sp.argsort(small).to_numpy(), stable)
    np.testing.assert_array_equal(small.argsort().to_numpy(), stable)
    sp.config.local_below_bytes = 0
    np.testing.assert_array_equal(sp.argsort(sp.asarray(a)).to_numpy(), stable)


# a Python/NumPy bool inside a tuple key is a 0-d mask (an axis of length 1 or 0), never
# the integer 0 or 1
BOOL_KEYS = [
    (slice(None), True),
    (Ellipsis, False),
    (1, np.True_),
    (True, 1),
    ([0, 2], True),
    (True, [0, 2]),
    (slice(None), None, True, [1, 3]),
    (True, Ellipsis, 1),
    (0, 1, 2, True),
]


@pytest.mark.parametrize("key", BOOL_KEYS, ids=repr)
def test_bool_scalar_inside_a_tuple_key(local, tiling, key):
    a = np.arange(60.0).reshape(3, 4, 5)
    got = sp.asarray(a, tiling=tiling)[key]
    np.testing.assert_array_equal(np.asarray(got), a[key])
    assert np.shape(got) == a[key].shape


@pytest.mark.parametrize(
    "key, value",
    [
        ((slice(None), True), 7.0),
        ((slice(None), True), np.arange(5.0)),
        ((1, True), np.arange(20.0).reshape(4, 5)),
        ((Ellipsis, False), 3.0),
        ((True, 2, slice(1, 3)), np.ones((1, 2, 5))),
    ],
    ids=repr,
)
def test_bool_scalar_inside_a_tuple_key_assignment(local, tiling, key, value):
    a = np.arange(60.0).reshape(3, 4, 5)
    x = sp.asarray(a.copy(), tiling=tiling)
    a[key] = value
    x[key] = value
    np.testing.assert_array_equal(x.to_numpy(), a)
    with pytest.raises(ValueError):
        x[key] = np.ones((2, 7))


def test_cov_keeps_the_dtype_asked_for(local, tiling):
    X = np.random.default_rng(0).random((3, 6))
    for kw in ({}, {"ddof": 0}, {"fweights": [1, 2, 1, 1, 3, 1]}):
        want = np.cov(X, dtype=np.float32, **kw)
        got = sp.cov(sp.asarray(X, tiling=tiling), dtype=np.float32, **kw)
        assert got.dtype == want.dtype  # (float32; float64 with weights, as NumPy)
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


MASK = np.arange(20).reshape(4, 5) % 3 == 0


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), MASK),
        (Ellipsis, MASK),
        (1, MASK),
        (slice(1, 3), MASK, None),
        (slice(None), MASK[0]),  # a mask that does not fit: NumPy's IndexError
        (MASK[:, 0],),
        (slice(None), np.zeros(0, bool)),  # an empty mask matches any length
    ],
    ids=repr,
)
def test_multi_axis_mask_after_other_indices(local, tiling, key):
    a = np.arange(60.0).reshape(3, 4, 5)
    x = sp.asarray(a, tiling=tiling)
    try:
        want = a[key]
    except IndexError as err:
        with pytest.raises(IndexError, match=str(err).split(";")[0]):
            x[key]
        return
    got = x[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.to_numpy(), want)
