"""1-d convolution and correlation as a ``join_update``: each group of the long
signal convolves its run with the whole (short) kernel and adds its ``full``-mode
piece into the output, overlapping neighbours summed by ``f_accum=add``.

Communication: the kernel to every group, and ``len(kernel) - 1`` overlapping
output elements per group boundary.

>>> sp.convolve(sp.asarray([0.0, 4.0, 0.0, 4.0]), [0.25, 0.5, 0.25], mode="same")
array([1., 2., 2., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.join_update import JoinUpdate


def _run_convolution(extents, run: np.ndarray, kernel: np.ndarray):
    lo = extents[0].box[0][0]
    if run.size == 0:
        return []
    piece = np.convolve(run, kernel, mode="full")
    return [((slice(lo, lo + piece.size),), piece)]


def convolve(a: Any, v: Any, mode: str = "full") -> Array:
    """Discrete linear convolution of two 1-d sequences (see :func:`numpy.convolve`)."""
    x, k = asarray(a), asarray(v)
    if x.ndim != 1 or k.ndim != 1:
        raise ValueError("object too deep for desired array")
    if x.size == 0:
        raise ValueError("a cannot be empty")
    if k.size == 0:
        raise ValueError("v cannot be empty")
    if k.size > x.size:
        x, k = k, x
    n, m = x.size, k.size
    dtype = np.convolve(np.ones(1, x.dtype), np.ones(1, k.dtype)).dtype
    full = Array(
        JoinUpdate(
            _run_convolution,
            np.add,
            [x._expr, k._expr],
            [0, -1],
            (n + m - 1,),
            dtype,
            name="convolve",
        )
    )
    if mode == "full":
        return full
    if mode == "same":
        start = (m - 1) // 2
        return full[start : start + n]
    if mode == "valid":
        return full[m - 1 : n]
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


def correlate(a: Any, v: Any, mode: str = "valid") -> Array:
    """Cross-correlation of two 1-d sequences (see :func:`numpy.correlate`)."""
    x, k = asarray(a), asarray(v)
    if x.ndim != 1 or k.ndim != 1:
        raise ValueError("object too deep for desired array")
    flipped = np.conj(k[::-1]) if k.dtype.kind == "c" else k[::-1]
    if k.size > x.size:
        # NumPy correlates the longer against the shorter and reverses the result
        rev = np.conj(x[::-1]) if x.dtype.kind == "c" else x[::-1]
        out = convolve(k, rev, mode)
        return np.conj(out[::-1]) if out.dtype.kind == "c" else out[::-1]
    return convolve(x, flipped, mode)
