"""Creation functions against NumPy, under every tiling (tiny tiles)."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp


def eq(got, expected):
    g = got.to_numpy() if isinstance(got, sp.Array) else got
    assert g.shape == np.shape(expected)
    assert g.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(g, expected)


@pytest.mark.parametrize("k", [-2, 0, 1])
def test_tri_family(local, tiling, k):
    a = np.arange(35.0).reshape(5, 7)
    x = sp.array(a, tiling=tiling)
    eq(sp.tri(5, 7, k), np.tri(5, 7, k))
    eq(sp.tril(x, k), np.tril(a, k))
    eq(sp.triu(x, k), np.triu(a, k))
    eq(sp.diag(x, k), np.diag(a, k))
    eq(sp.diag(sp.arange(4), k), np.diag(np.arange(4), k))
    eq(sp.diagflat(x[:2, :2], k), np.diagflat(a[:2, :2], k))


def test_ranges(local):
    eq(sp.logspace(0, 3, 7), np.logspace(0, 3, 7))
    eq(
        sp.logspace(1, 2, 5, base=2.0, endpoint=False),
        np.logspace(1, 2, 5, base=2.0, endpoint=False),
    )
    eq(sp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4))
    eq(sp.geomspace(-1, -64, 7), np.geomspace(-1, -64, 7))
    with pytest.raises(ValueError):
        sp.geomspace(0, 10)


def test_grids(local):
    for indexing in ("xy", "ij"):
        for g, e in zip(
            sp.meshgrid(np.arange(3), np.arange(4.0), indexing=indexing),
            np.meshgrid(np.arange(3), np.arange(4.0), indexing=indexing),
        ):
            eq(g, e)
    for g, e in zip(
        sp.meshgrid(np.arange(2), np.arange(3), sparse=True),
        np.meshgrid(np.arange(2), np.arange(3), sparse=True),
    ):
        eq(g, e)
    eq(sp.indices((3, 4)), np.indices((3, 4)))
    eq(
        sp.fromfunction(lambda i, j: i * 10 + j, (4, 3)),
        np.fromfunction(lambda i, j: i * 10 + j, (4, 3)),
    )
    eq(
        sp.fromfunction(lambda i, j: i == j, (3, 3), dtype=int),
        np.fromfunction(lambda i, j: i == j, (3, 3), dtype=int),
    )


def test_bad_input(local):
    with pytest.raises(ValueError):
        sp.diag(sp.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        sp.tril(sp.array(1.0))
    np.testing.assert_array_equal(sp.tril(sp.arange(3)).to_numpy(), np.tril(np.arange(3)))
    with pytest.raises(ValueError):
        sp.meshgrid(np.arange(2), indexing="yx")


@pytest.mark.parametrize(
    "args", [(6.0,), (6,), (1, 10, 0.5), (0, 5, np.float32(1)), (np.int8(0), 5), (5, 0, -2)]
)
def test_arange_dtype(local, args):
    eq(sp.arange(*args), np.arange(*args))
