"""Matrix products on ``join_update`` (thesis Fig. 2.2, 2.5).

``dot(X, Y)`` with X n×k and Y k×m has two implementations: (a) row groups of X joined
with the whole of Y, each writing its rows of Z; (b) column groups of X joined with the
matching row groups of Y, each producing a full n×m partial summed with ``add``.
Like the thesis, (b) is chosen when ``X.shape[0] <= X.shape[1]``.

>>> sp.dot(sp.ones((4, 3)), sp.ones((3, 2))).to_numpy()     # doctest: +SKIP
array([[3., 3.], [3., 3.], [3., 3.], [3., 3.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.join_update import JoinUpdate


def _rows_times_whole(extents, xt: np.ndarray, y: np.ndarray):
    return [(extents[0].rows, xt @ y)]


def _partial_product(extents, xt: np.ndarray, yt: np.ndarray):
    return [((), xt @ yt)]


def dot2d(x: Array, y: Array) -> Array:
    """``x @ y`` for 2-D arrays, as one of the two join_update implementations."""
    n, k = x.shape
    k2, m = y.shape
    if k != k2:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {k} (dim 1) != {k2} (dim 0)")
    dtype = np.result_type(x.dtype, y.dtype)
    if x.shape[0] <= x.shape[1]:
        expr = JoinUpdate(
            _partial_product, np.add, [x._expr, y._expr], [1, 0], (n, m), dtype, name="dot(b)"
        )
    else:
        expr = JoinUpdate(
            _rows_times_whole, None, [x._expr, y._expr], [0, -1], (n, m), dtype, name="dot(a)"
        )
    return Array(expr)


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """Dot product of two arrays (see :func:`numpy.dot`), for 0-, 1- and 2-d inputs."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.reductions import _out

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return _out(x * y, out)
    if x.ndim > 2 or y.ndim > 2:
        return _out(tensordot(x, y, axes=([x.ndim - 1], [max(y.ndim - 2, 0)])), out)
    x2 = x if x.ndim == 2 else x[None, :]
    y2 = y if y.ndim == 2 else y[:, None]
    z = dot2d(x2, y2)
    if x.ndim == 1 and y.ndim == 1:
        z = z[0, 0]
    elif x.ndim == 1:
        z = z[0]
    elif y.ndim == 1:
        z = z[:, 0]
    return _out(z, out)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` (see :func:`numpy.matmul`); scalars are rejected like NumPy does."""
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if x.ndim <= 2 and y.ndim <= 2:
        return dot(x, y)
    from spartan.frontend import manipulation as mp

    # batched: broadcast the leading axes, then one 2-d product per batch element
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    x = mp.broadcast_to(x, batch + x.shape[-2:]) if x.ndim > 1 else x
    y = mp.broadcast_to(y, batch + y.shape[-2:]) if y.ndim > 1 else y
    outs = [dot(x[idx], y[idx]) for idx in np.ndindex(*batch)]
    return mp.stack(outs).reshape(batch + outs[0].shape)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    """Sum products over the given axes (see :func:`numpy.tensordot`), via reshapes."""
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        ax_a, ax_b = [list(np.atleast_1d(v)) for v in axes]
    ax_a = [i % x.ndim for i in ax_a]
    ax_b = [i % y.ndim for i in ax_b]
    for i, j in zip(ax_a, ax_b):
        if x.shape[i] != y.shape[j]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [i for i in range(y.ndim) if i not in ax_b]
    k = int(np.prod([x.shape[i] for i in ax_a]))
    xa = x.transpose(free_a + ax_a).reshape(-1, k)
    yb = y.transpose(ax_b + free_b).reshape(k, -1)
    shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[i] for i in free_b)
    return dot2d(xa, yb).reshape(shape)


def vdot(a: Any, b: Any) -> Array:
    from spartan.frontend.creation import asarray

    return dot(np.conj(asarray(a)).ravel(), asarray(b).ravel())


def inner(a: Any, b: Any) -> Array:
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]))


def outer(a: Any, b: Any) -> Array:
    from spartan.frontend.creation import asarray

    return asarray(a).ravel()[:, None] * asarray(b).ravel()[None, :]
