"""Finite differences and integration: ``gradient`` and ``trapezoid``, written on
shifted views (one fused map per difference, a fold for the sum), so only tile edges
move between workers.

>>> sp.gradient(sp.asarray([1.0, 2.0, 4.0, 7.0]))
array([1. , 1.5, 2.5, 3. ])
>>> float(sp.trapezoid(sp.asarray([1.0, 2.0, 3.0])))
4.0
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.reductions import normalize_axes


def _along(x: Array, axis: int, lo: int | None, hi: int | None) -> Array:
    return x[tuple(slice(lo, hi) if d == axis else slice(None) for d in range(x.ndim))]


def _gradient_axis(f: Array, axis: int, h: Any, edge_order: int) -> Array:
    from spartan.frontend.manipulation import concatenate

    n = f.shape[axis]
    if n < edge_order + 1:
        raise ValueError(
            "Shape of array too small to calculate a numerical gradient, at least "
            "(edge_order + 1) elements are required."
        )
    if _ndim(h) != 0:
        return _gradient_uneven(f, axis, h, edge_order)
    interior = (_along(f, axis, 2, None) - _along(f, axis, None, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (_along(f, axis, 1, 2) - _along(f, axis, 0, 1)) / h
        last = (_along(f, axis, n - 1, n) - _along(f, axis, n - 2, n - 1)) / h
    else:
        # NumPy's coefficients first, then the sum: a NumPy-scalar h (coordinates
        # reduced to one step) promotes float32 to float64 as in NumPy
        first = (
            (-1.5 / h) * _along(f, axis, 0, 1)
            + (2.0 / h) * _along(f, axis, 1, 2)
            + (-0.5 / h) * _along(f, axis, 2, 3)
        )
        last = (
            (0.5 / h) * _along(f, axis, n - 3, n - 2)
            + (-2.0 / h) * _along(f, axis, n - 2, n - 1)
            + (1.5 / h) * _along(f, axis, n - 1, n)
        )
    return concatenate([first, interior, last], axis=axis)


def _ndim(h: Any) -> int:
    return h.ndim if isinstance(h, Array) else np.ndim(h)


def _spacing(h: Any, n: int) -> Any:
    """NumPy's spacing along an axis of ``n`` points: a scalar as given, or the
    differences of 1-d coordinates (a scalar again when they are all equal, as NumPy
    reduces them). Coordinates that are a spartan array stay distributed; only the
    "all equal" answer is fetched."""
    if _ndim(h) == 0:
        return h
    if _ndim(h) != 1:
        raise ValueError("distances must be either scalars or 1d")
    if len(h) != n:
        raise ValueError("when 1d, distances must match the length of the corresponding dimension")
    x = h if isinstance(h, Array) else np.asarray(h)
    if x.dtype.kind in "biu":
        x = x.astype(np.float64)
    dx = x[1:] - x[:-1]
    if n > 1 and bool((dx == dx[0]).all()):
        return dx[0]
    return dx


def _gradient_uneven(f: Array, axis: int, dx: Any, edge_order: int) -> Array:
    """NumPy's second-order differences for uneven spacing ``dx`` (n - 1 steps): the
    coefficients are small 1-d arrays broadcast along ``axis``, with NumPy's formulas
    term for term (so results round as NumPy's do)."""
    from spartan.frontend.manipulation import concatenate

    n = f.shape[axis]
    shape = [1] * f.ndim
    shape[axis] = -1
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    interior = (
        a * _along(f, axis, None, n - 2)
        + b * _along(f, axis, 1, n - 1)
        + c * _along(f, axis, 2, None)
    )
    f0, f1, f2 = (_along(f, axis, i, i + 1) for i in range(3))
    g3, g2, g1 = (_along(f, axis, n - i, n - i + 1) for i in (3, 2, 1))
    if edge_order == 1:
        first = (f1 - f0) / dx[0]
        last = (g1 - g2) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        first = (
            -(2.0 * d1 + d2) / (d1 * (d1 + d2)) * f0
            + (d1 + d2) / (d1 * d2) * f1
            + -d1 / (d2 * (d1 + d2)) * f2
        )
        d1, d2 = dx[-2], dx[-1]
        last = (
            (d2) / (d1 * (d1 + d2)) * g3
            + -(d2 + d1) / (d1 * d2) * g2
            + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * g1
        )
    return concatenate([first, interior, last], axis=axis)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Central differences inside, one-sided at the edges; each spacing a scalar or
    the 1-d coordinates of its axis (uneven spacing, as NumPy's).

    >>> sp.gradient(sp.asarray([1.0, 2.0, 4.0]), [0.0, 1.0, 3.0])
    array([1., 1., 1.])
    """
    x = asarray(f)
    if x.dtype.kind in "biu":
        x = x.astype(np.float64)
    axes = normalize_axes(axis, x.ndim)  # (NumPy's errors; sorted)
    if axis is not None:  # spacings and results pair with the axes in the order given
        axes = tuple(operator.index(a) % x.ndim for a in np.atleast_1d(axis).tolist())
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    out = [
        _gradient_axis(x, ax, _spacing(h, x.shape[ax]), edge_order) for ax, h in zip(axes, spacing)
    ]
    # NumPy writes every difference into an array of f's dtype (float32 stays float32
    # under float64 coordinates)
    out = [g if g.dtype == x.dtype else g.astype(x.dtype) for g in out]
    return out[0] if len(out) == 1 else tuple(out)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """Integral by the trapezoidal rule along ``axis``."""
    from spartan.frontend.reductions import sum as _sum

    yy = asarray(y)
    (ax,) = normalize_axes(axis, yy.ndim)
    n = yy.shape[ax]
    mids = (_along(yy, ax, 1, None) + _along(yy, ax, None, n - 1)) / 2.0
    if x is None:
        return _sum(mids, axis=ax) * dx
    xx = asarray(x)
    if xx.ndim == 1:
        d = xx[1:] - xx[:-1]
        shape = [1] * yy.ndim
        shape[ax] = d.shape[0]
        d = d.reshape(shape)
    else:
        d = _along(xx, ax, 1, None) - _along(xx, ax, None, xx.shape[ax] - 1)
    return _sum(mids * d, axis=ax)
