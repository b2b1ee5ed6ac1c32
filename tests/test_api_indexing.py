"""Integer-array (fancy) indexing, masks, nonzero family and assignment vs NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
A = np.random.default_rng(0).standard_normal((7, 9))


def same(got, expected):
    g = got.to_numpy()
    assert g.shape == np.shape(expected) and g.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(g, expected)


def test_fancy_getitem(local, tiling):
    x = sp.array(A, tiling=tiling)
    idx = np.array([3, -1, 0, 3, 6])
    same(x[idx], A[idx])
    same(x[:, idx], A[:, idx])
    same(x[idx, idx + 1], A[idx, idx + 1])
    same(x[1:, [0, 2]], A[1:, [0, 2]])
    same(x[[[1, 2], [3, 4]]], A[[[1, 2], [3, 4]]])
    same(x[idx, 2], A[idx, 2])
    same(x[sp.array(idx)], A[idx])
    same(x[A[:, 0] > 0], A[A[:, 0] > 0])
    same(x[A > 0], A[A > 0])


@FAST
@given(
    data=hnp.arrays(np.int64, st.integers(1, 30), elements=st.integers(-50, 50)),
    idx=st.lists(st.integers(-30, 29), min_size=0, max_size=25),
)
def test_take_matches_numpy(local, data, idx):
    idx = [i for i in idx if -len(data) <= i < len(data)]
    ix = np.array(idx, dtype=np.intp)
    same(sp.take(sp.array(data), ix), np.take(data, ix))


def test_take_modes_and_axes(local, tiling):
    x = sp.array(A, tiling=tiling)
    same(sp.take(x, [0, 5, 62]), np.take(A, [0, 5, 62]))
    same(sp.take(x, [1, 3], axis=1), np.take(A, [1, 3], axis=1))
    same(sp.take(x, [[1, 3], [0, 0]], axis=0), np.take(A, [[1, 3], [0, 0]], axis=0))
    same(sp.take(x, [-20, 30], axis=1, mode="wrap"), np.take(A, [-20, 30], axis=1, mode="wrap"))
    same(sp.take(x, [-20, 30], axis=1, mode="clip"), np.take(A, [-20, 30], axis=1, mode="clip"))
    order = np.argsort(A, axis=1)
    same(sp.take_along_axis(x, order, 1), np.take_along_axis(A, order, 1))
    order0 = np.argsort(A, axis=0)[:3]
    same(sp.take_along_axis(x, order0, 0), np.take_along_axis(A, order0, 0))


def test_nonzero_family(local, tiling):
    a = np.where(A > 0.3, A, 0)
    x = sp.array(a, tiling=tiling)
    for got, exp in zip(sp.nonzero(x), np.nonzero(a)):
        same(got, exp)
    same(sp.argwhere(x), np.argwhere(a))
    same(sp.flatnonzero(x), np.flatnonzero(a))
    same(sp.extract(x > 0, x), np.extract(a > 0, a))
    same(sp.compress([True, False, True], x, axis=1), np.compress([True, False, True], a, axis=1))
    same(sp.compress(A[:, 0] > 0, x, axis=0), np.compress(A[:, 0] > 0, a, axis=0))
    same(sp.where(x > 0)[1], np.where(a > 0)[1])


def test_choose_select(local, tiling):
    a = np.arange(12).reshape(3, 4) % 3
    x = sp.array(a, tiling=tiling)
    choices = [np.full((3, 4), 10), np.arange(12).reshape(3, 4), -np.ones((3, 4), int)]
    same(sp.choose(x, choices), np.choose(a, choices))
    same(sp.choose(x, choices, mode="clip"), np.choose(a, choices, mode="clip"))
    conds = [a == 0, a == 1]
    same(sp.select(conds, [a * 10, a * 100], default=-1), np.select(conds, [a * 10, a * 100], -1))


def test_fancy_setitem(local, tiling):
    a = A.copy()
    x = sp.array(a, tiling=tiling)
    x[[1, 5, 1]] = 7.0
    a[[1, 5, 1]] = 7.0
    same(x, a)
    x[np.array([0, 2])] = np.arange(18.0).reshape(2, 9)
    a[np.array([0, 2])] = np.arange(18.0).reshape(2, 9)
    same(x, a)
    x[a > 1] = 0.0
    a[a > 1] = 0.0
    same(x, a)
    x[a < 0] = -a[a < 0]
    a[a < 0] = -a[a < 0]
    same(x, a)
    x[[0, 6], [8, 1]] = -5.0
    a[[0, 6], [8, 1]] = -5.0
    same(x, a)
    y = sp.arange(10)
    sp.put(y, [0, 9, -2], [5, 6, 7])
    z = np.arange(10)
    np.put(z, [0, 9, -2], [5, 6, 7])
    same(y, z)


def test_last_write_wins(local):
    x = sp.zeros(5, dtype=int)
    x[[2, 2, 2]] = sp.array([1, 2, 3])
    assert x.to_numpy()[2] == 3


def test_errors(local):
    x = sp.array(A)
    with pytest.raises(IndexError):
        x[[0.5]]
    with pytest.raises(IndexError):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError):
        x[np.ones(3, bool)]
    with pytest.raises(ValueError):
        x[[0, 1]] = np.ones((3, 9))
    with pytest.raises(ValueError):
        sp.take(x, [0], mode="bogus")
    with pytest.raises(IndexError):
        sp.take(x, [100]).to_numpy()
    with pytest.raises(TypeError):
        sp.select([np.ones(3)], [np.ones(3)])
    with pytest.raises(ValueError):
        sp.nonzero(sp.array(1.0))


def test_fancy_on_ray(backend):
    a = np.arange(40).reshape(8, 5)
    x = sp.array(a, tiling="row")
    same(x[[7, 0, 3]], a[[7, 0, 3]])
    x[[1, 6]] = 0
    a[[1, 6]] = 0
    same(x, a)


def test_ufunc_at(local, tiling):
    a = np.zeros((6, 4))
    x = sp.array(a, tiling=tiling)
    sp.add.at(x, [1, 1, 5, 0, 1], np.arange(4.0))
    np.add.at(a, [1, 1, 5, 0, 1], np.arange(4.0))
    same(x, a)
    sp.multiply.at(x, ([0, 0, 3], [1, 1, 3]), [2.0, 3.0, 5.0])
    np.multiply.at(a, ([0, 0, 3], [1, 1, 3]), [2.0, 3.0, 5.0])
    same(x, a)
    v = sp.arange(6.0)
    sp.negative.at(v, [0, 2, 2])
    c = np.arange(6.0)
    np.negative.at(c, [0, 2, 2])
    same(v, c)
    with pytest.raises(ValueError):
        sp.add.at(x, [0])
