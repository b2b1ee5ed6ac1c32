"""Invalid input raises the same exception type as NumPy, when the expression is built."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp

A = np.arange(12.0).reshape(3, 4)

CASES = [
    ("sort", (A,), {"axis": 2}),
    ("argsort", (A,), {"axis": -3}),
    ("median", (A,), {"axis": 5}),
    ("quantile", (A, 0.5), {"axis": 2}),
    ("nanmean", (A,), {"axis": 2}),
    ("nansum", (A,), {"axis": (0, 0)}),
    ("flip", (A,), {"axis": 2}),
    ("roll", (A, 1), {"axis": 2}),
    ("diff", (A,), {"axis": 2}),
    ("take", (A, [0]), {"axis": 2}),
    ("cumsum", (A,), {"axis": 2}),
    ("nancumsum", (A,), {"axis": 2}),
    ("repeat", (A, 2), {"axis": 2}),
    ("partition", (A, 1), {"axis": 2}),
    ("compress", ([True], A), {"axis": 2}),
    ("concatenate", ([A, A[:, :2]],), {"axis": 0}),
    ("stack", ([A, A[:2]],), {}),
    ("einsum", ("ij,jk->ik", A, A), {}),
    ("pad", (A, -1), {}),
    ("split", (A, 3), {"axis": 1}),
    ("searchsorted", (A, 1.0), {}),
    ("clip", (A, np.ones(3), 1), {}),
    ("where", (A > 0, A, np.ones(3)), {}),
    ("average", (A,), {"weights": np.ones(3)}),
    ("percentile", (A, 101), {}),
    ("diagonal", (np.ones(3),), {}),
    ("bincount", (np.array([-1, 2]),), {}),
    ("histogram", (A,), {"bins": np.array([3.0, 1.0, 2.0])}),
    ("unravel_index", (np.array([1.5]), (2, 2)), {}),
    ("moveaxis", (A, 0, 3), {}),
    ("tile", (A, -1), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CASES, ids=[c[0] for c in CASES])
def test_same_exception_as_numpy(local, name, args, kwargs):
    with pytest.raises(Exception) as expected:
        getattr(np, name)(*args, **kwargs)
    sargs = [sp.array(a) if isinstance(a, np.ndarray) and a.ndim else a for a in args]
    with pytest.raises(expected.type):
        getattr(sp, name)(*sargs, **kwargs)  # raised while building: nothing is evaluated


@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigh", "solve"])
def test_linalg_shape_errors(local, name):
    args = (np.ones((2, 3)),) if name != "solve" else (np.ones((2, 3)), np.ones(2))
    with pytest.raises(Exception) as expected:
        getattr(np.linalg, name)(*args)
    with pytest.raises(expected.type):
        getattr(sp.linalg, name)(*[sp.array(a) for a in args])
