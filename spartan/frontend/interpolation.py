"""Lookups against small sorted tables: ``interp`` and ``digitize``.

The table (``xp``/``fp``, ``bins``) is a constant sent with the task;
``x`` stays where it is and is mapped tile by tile.

>>> sp.interp(sp.asarray([0.5, 1.5]), [0, 1, 2], [0, 10, 5])
array([5. , 7.5])
>>> sp.digitize(x, [1, 3])
array([[0, 1, 1],
       [2, 2, 2]])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.ufuncs import elementwise


def _small(a: Any, name: str) -> np.ndarray:
    """A lookup table: a NumPy array (a spartan table is gathered, as it is small)."""
    if isinstance(a, Array):
        if a.size > 1 << 20:
            raise ValueError(f"{name} tables larger than 2**20 entries are not supported")
        return a.to_numpy()
    return np.asarray(a)


def _interp(
    xp: np.ndarray, fp: np.ndarray, left: Any, right: Any, period: Any, x: np.ndarray
) -> np.ndarray:
    return np.interp(x, xp, fp, left=left, right=right, period=period)


def interp(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> Array:
    """One-dimensional piecewise linear interpolation (see :func:`numpy.interp`)."""
    xp_, fp_ = _small(xp, "interp"), _small(fp, "interp")
    if xp_.ndim != 1 or fp_.ndim != 1:
        raise ValueError("object too deep for desired array")
    if xp_.shape != fp_.shape:
        raise ValueError("fp and xp are not of the same length.")
    if xp_.size == 0:
        raise ValueError("array of sample points is empty")
    fn = functools.partial(_interp, xp_, fp_, left, right, period)
    return elementwise(fn, asarray(x), name="interp")


def _digitize(bins: np.ndarray, right: bool, x: np.ndarray) -> np.ndarray:
    return np.digitize(x, bins, right=right)


def digitize(x: Any, bins: Any, right: bool = False) -> Array:
    """Indices of the bins each value falls in."""
    b = _small(bins, "digitize")
    if b.ndim != 1:
        raise ValueError("bins must be one-dimensional")
    d = np.diff(b)
    if b.size > 1 and not (np.all(d >= 0) or np.all(d <= 0)):
        raise ValueError("bins must be monotonically increasing or decreasing")
    return elementwise(
        functools.partial(_digitize, b, right), asarray(x), name="digitize", dtype=np.intp
    )
