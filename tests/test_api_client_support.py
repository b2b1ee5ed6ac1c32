"""Functions client libraries reach through spartan's namespace, against NumPy:
``spartan.lib.stride_tricks.sliding_window_view`` (xarray's ``rolling``,
``rolling(...).construct`` and ``cumulative``) and ``gradient`` with coordinate spacings (xarray's
``differentiate``). No client is needed to run these."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp

RNG = np.random.default_rng(3)
A = RNG.standard_normal((5, 7, 6))
swv = np.lib.stride_tricks.sliding_window_view


@pytest.mark.parametrize(
    "window, axis",
    [
        ((2, 3, 4), None),
        (3, 1),
        (3, -1),
        ((2, 2), (0, 2)),
        ((2, 3), (1, 1)),  # the same axis twice, as NumPy allows
        (1, 0),
        (5, 0),  # the whole axis
        (0, 2),  # empty windows
    ],
)
def test_sliding_window_view_matches_numpy(local, tiling, window, axis):
    x = sp.array(A, tiling=tiling)
    got = sp.lib.stride_tricks.sliding_window_view(x, window, axis)
    expected = swv(A, window, axis)
    assert type(got) is sp.Array and got.shape == expected.shape and got.dtype == A.dtype
    np.testing.assert_array_equal(got.to_numpy(), expected)


def test_sliding_window_view_is_read_only_like_numpys(local):
    x = sp.array(A)
    windows = sp.lib.stride_tricks.sliding_window_view(x, 2, axis=0)
    with pytest.raises(ValueError, match="read-only"):
        windows[0] = 1.0
    with pytest.raises(ValueError, match="writeable=True"):
        sp.lib.stride_tricks.sliding_window_view(x, 2, axis=0, writeable=True)
    np.testing.assert_array_equal(x.to_numpy(), A)  # the input is untouched


@pytest.mark.parametrize(
    "window, axis",
    [((8,), 1), ((2, 2), 0), ((-1,), 0), ((2,), None), (2, 3)],
)
def test_sliding_window_view_errors_are_numpys(local, window, axis):
    with pytest.raises(Exception) as expected:
        swv(A, window, axis)
    with pytest.raises(type(expected.value), match=str(expected.value)[:30].replace("(", r"\(")):
        sp.lib.stride_tricks.sliding_window_view(sp.array(A), window, axis)


def test_sliding_window_view_of_a_small_array_is_numpys_view(local):
    """A small array held in the driver gets NumPy's own (read-only) view."""
    old = sp.config.local_below_bytes
    sp.config.local_below_bytes = 1 << 20
    try:
        x = sp.arange(10.0)
        got = sp.lib.stride_tricks.sliding_window_view(x, 4)
        assert got.tiling is None and got.shape == (7, 4)
        np.testing.assert_array_equal(got.to_numpy(), swv(np.arange(10.0), 4))
    finally:
        sp.config.local_below_bytes = old


COORDS_X = np.array([0.0, 1.0, 3.0, 4.5, 8.0])  # uneven
COORDS_Y = np.array([0, 1, 2, 4, 5, 7, 8])  # integer, uneven
EVEN = np.arange(6) * 0.25  # even: NumPy reduces it to the scalar 0.25


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_gradient_with_coordinates_matches_numpy_exactly(local, tiling, edge_order, dtype):
    """NumPy's formulas term for term: the same bits, and f's dtype (float32 stays
    float32 under float64 coordinates; integers give float64)."""
    f = (A * 10).astype(dtype)
    x = sp.array(f, tiling=tiling)
    cases = [
        ((COORDS_X, COORDS_Y, EVEN), {}),
        ((COORDS_Y,), {"axis": 1}),
        ((2.0, COORDS_X.tolist()), {"axis": (2, 0)}),
        ((EVEN,), {"axis": -1}),
    ]
    for args, kwargs in cases:
        got = sp.gradient(x, *args, edge_order=edge_order, **kwargs)
        expected = np.gradient(f, *args, edge_order=edge_order, **kwargs)
        got = got if isinstance(got, tuple) else (got,)
        expected = expected if isinstance(expected, tuple) else (expected,)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g.to_numpy(), e)


def test_gradient_with_spartan_coordinates(local):
    """Coordinates that are a spartan array stay distributed."""
    f = sp.array(A[:, :, 0])
    got = sp.gradient(f, sp.array(COORDS_X), axis=0)
    np.testing.assert_allclose(got.to_numpy(), np.gradient(A[:, :, 0], COORDS_X, axis=0))


@pytest.mark.parametrize(
    "spacing, match",
    [(np.ones((2, 7)), "scalars or 1d"), (np.ones(4), "must match the length")],
)
def test_gradient_coordinate_errors_are_numpys(local, spacing, match):
    with pytest.raises(ValueError, match=match):
        np.gradient(A[0], spacing, axis=1)
    with pytest.raises(ValueError, match=match):
        sp.gradient(sp.array(A[0]), spacing, axis=1)
