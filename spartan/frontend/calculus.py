"""Finite differences and integration: ``gradient`` and ``trapezoid``, written on
shifted views (one fused map per difference, a fold for the sum), so only tile edges
move between workers.

>>> sp.gradient(f, dx); sp.trapezoid(y, x)            # doctest: +SKIP
"""

from __future__ import annotations

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
    if not np.ndim(h) == 0:
        raise TypeError("spartan.gradient takes scalar spacings")
    interior = (_along(f, axis, 2, None) - _along(f, axis, None, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (_along(f, axis, 1, 2) - _along(f, axis, 0, 1)) / h
        last = (_along(f, axis, n - 1, n) - _along(f, axis, n - 2, n - 1)) / h
    else:
        first = (
            -1.5 * _along(f, axis, 0, 1) + 2.0 * _along(f, axis, 1, 2) - 0.5 * _along(f, axis, 2, 3)
        ) / h
        last = (
            0.5 * _along(f, axis, n - 3, n - 2)
            - 2.0 * _along(f, axis, n - 2, n - 1)
            + 1.5 * _along(f, axis, n - 1, n)
        ) / h
    return concatenate([first, interior, last], axis=axis)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Central differences inside, one-sided at the edges (uniform scalar spacings)."""
    x = asarray(f)
    if x.dtype.kind in "biu":
        x = x.astype(np.float64)
    axes = normalize_axes(axis, x.ndim) if axis is not None else tuple(range(x.ndim))
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
    out = [_gradient_axis(x, ax, h, edge_order) for ax, h in zip(axes, spacing)]
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
