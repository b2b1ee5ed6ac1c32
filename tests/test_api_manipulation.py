"""Shape manipulation against NumPy under every tiling (views, concatenations, takes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp

FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


def same(got, expected):
    g = got.to_numpy()
    assert g.shape == expected.shape and g.dtype == expected.dtype
    np.testing.assert_array_equal(g, expected)


A = np.arange(35).reshape(5, 7) - 10


def test_flips_and_rolls(local, tiling):
    x = sp.array(A, tiling=tiling)
    same(sp.flip(x), np.flip(A))
    same(sp.flip(x, 1), np.flip(A, 1))
    same(sp.fliplr(x), np.fliplr(A))
    same(sp.flipud(x), np.flipud(A))
    for k in range(-1, 4):
        same(sp.rot90(x, k), np.rot90(A, k))
    same(sp.roll(x, 3), np.roll(A, 3))
    same(sp.roll(x, -9, axis=1), np.roll(A, -9, axis=1))
    same(sp.roll(x, (1, 2), axis=(0, 1)), np.roll(A, (1, 2), axis=(0, 1)))


def test_tile_repeat_resize(local, tiling):
    x = sp.array(A, tiling=tiling)
    same(sp.tile(x, (2, 3)), np.tile(A, (2, 3)))
    same(sp.tile(x[0], 3), np.tile(A[0], 3))
    same(sp.tile(x, (2, 1, 2)), np.tile(A, (2, 1, 2)))
    same(sp.repeat(x, 2), np.repeat(A, 2))
    same(sp.repeat(x, 3, axis=1), np.repeat(A, 3, axis=1))
    same(sp.repeat(x, [2, 0, 1, 1, 3], axis=0), np.repeat(A, [2, 0, 1, 1, 3], axis=0))
    same(sp.repeat(x[0], sp.arange(7)), np.repeat(A[0], np.arange(7)))
    same(sp.resize(x, (3, 15)), np.resize(A, (3, 15)))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad(local, tiling, mode):
    x = sp.array(A, tiling=tiling)
    for width in (1, (2, 3), ((1, 9), (0, 2))):
        same(sp.pad(x, width, mode=mode), np.pad(A, width, mode=mode))


@FAST
@given(
    n=st.integers(1, 9),
    before=st.integers(0, 20),
    after=st.integers(0, 20),
    mode=st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]),
)
def test_pad_any_width(local, n, before, after, mode):
    a = np.arange(n) * 3 - 4
    same(sp.pad(sp.array(a), (before, after), mode=mode), np.pad(a, (before, after), mode=mode))


def test_splits_and_stacks(local, tiling):
    x = sp.array(A, tiling=tiling)
    for got, exp in zip(sp.array_split(x, 3, axis=1), np.array_split(A, 3, axis=1)):
        same(got, exp)
    for got, exp in zip(sp.split(x, [1, 3]), np.split(A, [1, 3])):
        same(got, exp)
    for got, exp in zip(sp.hsplit(x[:, :6], 2), np.hsplit(A[:, :6], 2)):
        same(got, exp)
    for got, exp in zip(sp.unstack(x, axis=1), np.unstack(A, axis=1)):
        same(got, exp)
    same(sp.dstack([x, x]), np.dstack([A, A]))
    same(sp.column_stack([x[0], x[1]]), np.column_stack([A[0], A[1]]))
    same(sp.block([[x, x[:, :2]], [x, x[:, :2]]]), np.block([[A, A[:, :2]], [A, A[:, :2]]]))
    same(sp.atleast_3d(x), np.atleast_3d(A))
    same(sp.atleast_2d(x[0]), np.atleast_2d(A[0]))


def test_edits(local, tiling):
    x = sp.array(A, tiling=tiling)
    same(sp.append(x, x[:2], axis=0), np.append(A, A[:2], axis=0))
    same(sp.append(x, [1, 2]), np.append(A, [1, 2]))
    same(sp.delete(x, [0, 2], axis=1), np.delete(A, [0, 2], axis=1))
    same(sp.delete(x, slice(1, 3)), np.delete(A, slice(1, 3)))
    same(sp.insert(x, 2, 99, axis=1), np.insert(A, 2, 99, axis=1))
    same(sp.insert(x, 0, 5), np.insert(A, 0, 5))


def test_diff(local, tiling):
    x = sp.array(A * A, tiling=tiling)
    same(sp.diff(x), np.diff(A * A))
    same(sp.diff(x, 2, axis=0), np.diff(A * A, 2, axis=0))
    same(sp.diff(x, prepend=0, append=[[1]] * 5), np.diff(A * A, prepend=0, append=[[1]] * 5))
    same(sp.diff(x > 0), np.diff(A * A > 0))
    same(sp.ediff1d(x, to_begin=[7], to_end=[8, 9]), np.ediff1d(A * A, to_begin=[7], to_end=[8, 9]))
    same(
        sp.cumulative_sum(x, axis=1, include_initial=True),
        np.cumulative_sum(A * A, axis=1, include_initial=True),
    )
    same(
        sp.cumulative_prod(x[0], include_initial=True),
        np.cumulative_prod(A[0] * A[0], include_initial=True),
    )


def test_errors(local):
    x = sp.array(A)
    with pytest.raises(ValueError):
        sp.split(x, 2)
    with pytest.raises(ValueError):
        sp.pad(x, -1)
    with pytest.raises(ValueError):
        sp.repeat(x, -1)
    with pytest.raises(ValueError):
        sp.rot90(x, axes=(0, 0))
    with pytest.raises(np.exceptions.AxisError):
        sp.flip(x, 2)
    with pytest.raises(IndexError):
        sp.delete(x, 7, axis=1)
    with pytest.raises(ValueError):
        sp.diff(x, -1)


VIEWS = {
    "transposed": lambda x: x.T,
    "strided, reversed, transposed": lambda x: x[::-1, ::2].T,
    "reversed columns": lambda x: x[:, ::-1],
    "plain": lambda x: x,
    "sliced, transposed, reversed": lambda x: x[1:4].T[::-1],
}


@pytest.mark.parametrize("view", VIEWS)
def test_ravel_in_memory_order_follows_the_views_strides(local, tiling, view):
    x = sp.array(A, tiling=tiling)
    v, want = VIEWS[view](x), VIEWS[view](A)
    same(v.ravel("K"), want.ravel("K"))
    same(v.flatten("K"), want.flatten("K"))
    same(sp.ravel(v, order="K"), np.ravel(want, order="K"))


def test_methods_take_numpys_arguments(local, tiling):
    x = sp.array(A, tiling=tiling)
    for i in (0, 4, 13, -1, np.int64(7)):  # one integer: a flat index
        assert x.item(i) == A.item(i)
    assert x.item(2, 3) == A.item(2, 3) and x.item((1, 4)) == A.item((1, 4))
    with pytest.raises(IndexError, match="out of bounds for size 35"):
        x.item(35)
    same(x.transpose(None), A.transpose(None))
    with pytest.raises(TypeError):
        x.sort(axis=None)
