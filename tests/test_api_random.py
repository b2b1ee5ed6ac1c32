"""Random arrays: independent of tiling and worker count, with NumPy's shapes/dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp


def draw(make):
    sp.random.seed(7)
    return make().to_numpy()


@pytest.mark.parametrize(
    "make",
    [
        lambda: sp.random.rand(5, 4),
        lambda: sp.random.randn(9),
        lambda: sp.random.randint(0, 10, (3, 5)),
        lambda: sp.random.exponential(2.0, 7),
        lambda: sp.random.permutation(23),
        lambda: sp.random.choice(10, 6, replace=False),
        lambda: sp.random.choice(np.arange(5) * 3, (2, 3)),
    ],
)
def test_independent_of_tiling(local, make):
    old = sp.config.tiles_per_worker
    first = draw(make)
    sp.config.tiles_per_worker = 3
    try:
        np.testing.assert_array_equal(draw(make), first)
    finally:
        sp.config.tiles_per_worker = old


def test_generator(local):
    a = sp.random.default_rng(3).normal(size=(4, 4)).to_numpy()
    b = sp.random.default_rng(3).normal(size=(4, 4)).to_numpy()
    c = sp.random.default_rng(4).normal(size=(4, 4)).to_numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    g = sp.random.default_rng(0)
    ints = g.integers(2, 5, size=1000, endpoint=True).to_numpy()
    assert ints.min() == 2 and ints.max() == 5
    u = g.uniform(-1, 1, size=2000).to_numpy()
    assert -1 <= u.min() and u.max() < 1 and abs(u.mean()) < 0.1
    e = g.exponential(size=2000).to_numpy()
    assert e.min() > 0 and 0.85 < e.mean() < 1.15


def test_permutation_shuffle_choice(local):
    p = sp.random.permutation(50).to_numpy()
    np.testing.assert_array_equal(np.sort(p), np.arange(50))
    x = sp.arange(20) * 2
    sp.random.shuffle(x)
    got = x.to_numpy()
    np.testing.assert_array_equal(np.sort(got), np.arange(20) * 2)
    rows = sp.random.permutation(sp.array(np.arange(12).reshape(4, 3))).to_numpy()
    np.testing.assert_array_equal(np.sort(rows[:, 0]), [0, 3, 6, 9])
    c = sp.random.choice(4, 3000, p=[0.1, 0.0, 0.6, 0.3]).to_numpy()
    assert set(np.unique(c)) <= {0, 2, 3} and 0.5 < np.mean(c == 2) < 0.7
    assert np.ndim(sp.random.choice(5).to_numpy()) == 0


def test_errors(local):
    with pytest.raises(ValueError):
        sp.random.randint(5, 5)
    with pytest.raises(ValueError):
        sp.random.normal(0, -1, 3)
    with pytest.raises(ValueError):
        sp.random.choice(3, 5, replace=False)
    with pytest.raises(ValueError):
        sp.random.choice(3, 2, p=[0.5, 0.5, 0.5])
