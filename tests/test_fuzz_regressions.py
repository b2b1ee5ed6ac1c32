"""Silent wrong results found by fuzzing (issue 35, 2c), each against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp


def test_a_float_axis_is_a_type_error(backend, tiling):
    x = sp.array(np.arange(12.0).reshape(3, 4), tiling=tiling)
    with pytest.raises(TypeError):
        np.arange(12.0).reshape(3, 4).sum(axis=1.5)
    with pytest.raises(TypeError):
        x.sum(axis=1.5)
    with pytest.raises(TypeError):
        sp.mean(x, axis=(0, 1.0))


def test_string_zeros_are_empty_strings(backend, tiling):
    for make in (sp.zeros, sp.empty):
        got = make((3, 2), dtype="U3", tiling=tiling)
        np.testing.assert_array_equal(np.asarray(got), np.zeros((3, 2), dtype="U3"))
    like = sp.zeros_like(sp.array(np.array([["ab", "c"]]), tiling=tiling))
    np.testing.assert_array_equal(np.asarray(like), np.zeros((1, 2), dtype="U2"))


def test_count_nonzero_counts_objects_by_truth(backend, tiling):
    a = np.array([[None, 1, 0, ""], ["x", 0.0, [], 2]], dtype=object)
    got = sp.count_nonzero(sp.array(a, tiling=tiling))
    assert int(got) == np.count_nonzero(a) == 3  # None, 0, '', 0.0 and [] are zeros


def test_mean_of_timedeltas_is_a_timedelta(backend, tiling):
    a = np.array([[1, 2, 4], [7, 1, 1]], dtype="m8[s]")
    x = sp.array(a, tiling=tiling)
    for axis in (None, 0, 1):
        got, want = x.mean(axis=axis), a.mean(axis=axis)
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(np.asarray(got), want)


def test_user_functions_returning_the_wrong_thing_raise(backend, tiling):
    x = sp.array(np.arange(12.0).reshape(3, 4), tiling=tiling)
    with pytest.raises(ValueError, match=r"spartan\.map\(.*none\)"):

        def none(t):
            return None

        np.asarray(sp.map(none, x, dtype=float))
    with pytest.raises(ValueError, match=r"spartan\.filter\(.*flat\)"):

        def flat(t):
            return (t > 2).ravel()  # one axis for a tile of two: never the tile's shape

        np.asarray(sp.filter(x, flat))
    with pytest.raises(IndexError):
        sp.filter(x, sp.array(np.array([[True, False, True, False]]), tiling=tiling))
