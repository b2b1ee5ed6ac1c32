"""Copies between memory layouts equal NumPy's assignment."""

from __future__ import annotations

import numpy as np
import pytest

from spartan.backend import layout
from spartan.backend.device import contiguous


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.T,  # a transposed view: copied in strips
        lambda a: a.T[3:-2, 1:],  # a window of one
        lambda a: a[::-1].T,  # negative strides
        lambda a: a[:, ::2].T,  # gaps between the rows' elements
        lambda a: a,  # already row-major
        lambda a: a[:, None, 0],  # one column
        lambda a: a[:, :3].T,  # a narrow view of many rows: strips too
    ],
)
def test_copy_into_equals_assignment(monkeypatch, view):
    # small strips and no size floor, so the strips' edges are exercised on a small array
    monkeypatch.setattr(layout, "STRIP", 7)
    monkeypatch.setattr(layout, "MIN_BLOCKED_BYTES", 0)
    a = np.random.default_rng(0).standard_normal((45, 38))
    src = view(a)
    out = np.full(src.shape, np.nan)
    layout.copy_into(out, src)
    np.testing.assert_array_equal(out, src)


def test_copy_into_an_overlapping_view_equals_assignment(monkeypatch):
    monkeypatch.setattr(layout, "STRIP", 7)
    monkeypatch.setattr(layout, "MIN_BLOCKED_BYTES", 0)
    a = np.random.default_rng(1).standard_normal((40, 40))
    b, expected = a.copy(), a.copy()
    expected[...] = expected.T
    layout.copy_into(b, b.T)
    np.testing.assert_array_equal(b, expected)


def test_contiguous_copies_a_transposed_view_in_c_order(monkeypatch):
    monkeypatch.setattr(layout, "MIN_BLOCKED_BYTES", 0)
    a = np.arange(600.0).reshape(20, 30)
    c = contiguous(a.T)
    assert c.flags.c_contiguous and c.shape == (30, 20)
    np.testing.assert_array_equal(c, a.T)
    assert contiguous(a) is a
    assert contiguous(np.array(2.0)).shape == ()
