"""``sliding_window_view``: NumPy's moving windows, for rolling computations.

NumPy returns a strided view (no copy); a distributed array has no strides to play
with, so spartan stacks the ``w`` shifted slices of each windowed axis instead: the
result is a read-only array of ``w`` times the input's elements per windowed axis,
built from views (only tile edges move between workers) and one concatenate. xarray
reaches it as ``xp.lib.stride_tricks.sliding_window_view`` for ``rolling``,
``rolling(...).construct`` and ``cumulative``.

>>> import spartan as sp
>>> sliding_window_view = sp.lib.stride_tricks.sliding_window_view
>>> sliding_window_view(sp.arange(5), 3).to_numpy()
array([[0, 1, 2],
       [1, 2, 3],
       [2, 3, 4]])
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spartan.frontend.aliasing import read_only
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, zeros
from spartan.frontend.manipulation import broadcast_arrays, broadcast_to, concatenate, expand_dims
from spartan.frontend.small import local_first


def sliding_window_view(
    x: Any,
    window_shape: Any,
    axis: Any = None,
    *,
    subok: bool = False,
    writeable: bool = False,
) -> Array:
    """Every window of ``window_shape`` over ``axis`` (all axes when None), as
    :func:`numpy.lib.stride_tricks.sliding_window_view`: the windowed axes shrink by
    ``w - 1`` and the window axes come last, in the order of ``axis``.

    The result is a read-only copy. ``writeable=True`` (NumPy: a writable view whose
    windows overlap in the input's memory) is refused: there is no such view of a
    distributed array.

    >>> sliding_window_view(sp.arange(6).reshape(2, 3), 2, axis=1).shape
    (2, 2, 2)
    """
    a = asarray(x)
    if writeable:
        raise ValueError(
            "spartan's sliding_window_view is a read-only copy of the windows: "
            "writeable=True (a writable view into the input) is not supported"
        )
    # NumPy checks the arguments and gives the result's shape, on a stand-in of
    # a's shape that holds no memory (every stride 0)
    probe = np.lib.stride_tricks.sliding_window_view(
        np.broadcast_to(np.zeros((), a.dtype), a.shape), window_shape, axis
    )
    windows = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    if axis is None:
        axes: tuple[int, ...] = tuple(range(a.ndim))
    else:
        given = tuple(axis) if np.iterable(axis) else (axis,)
        axes = tuple(operator.index(ax) % a.ndim for ax in given)
    if 0 in windows:  # NumPy allows empty windows: nothing to copy
        return read_only(zeros(probe.shape, a.dtype))
    out = a
    for w, ax in zip(windows, axes):
        # window i along ax is the slice starting at i; stacked as a new last axis
        n = out.shape[ax] - w + 1
        shifted = [out[(slice(None),) * ax + (slice(i, i + n),)] for i in range(w)]
        out = concatenate([expand_dims(s, -1) for s in shifted], axis=-1)
    if out.shape != probe.shape:  # what must stay true: NumPy's shape, axis by axis
        raise AssertionError(f"sliding_window_view: shape {out.shape} != {probe.shape}")
    return read_only(Array(out._expr)) if out is a else read_only(out)


#: small arrays in the driver get NumPy's own (read-only) view
sliding_window_view = local_first(np.lib.stride_tricks.sliding_window_view, sliding_window_view)
broadcast_shapes = np.broadcast_shapes

__all__ = ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "sliding_window_view"]
