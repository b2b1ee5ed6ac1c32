"""Functions of whole 1-d lanes (``sort(axis=1)``, ``median(axis=0)``...) as one
``join_update``: the lanes run along the given axes, groups cut the other axes.

The reduced axes are moved last by a view, so no copy is made before the join; a
group reads its lanes whole, which moves a tile's bytes only when the array is cut
along a lane axis (cost: at most ``nbytes`` of the input, once).

>>> along_axes(lambda m: np.sort(m, axis=1), -x, (1,), (x.shape[1],), x.dtype)
array([[-2., -1., -0.],
       [-5., -4., -3.]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.array import Array
from spartan.frontend.join_update import JoinUpdate

LaneFn = Callable[[np.ndarray], np.ndarray]


class _Lanes:
    """``f_join``: the group's lanes as an (m, K) matrix through ``fn``, written back."""

    def __init__(self, fn: LaneFn, nkept: int, tail: tuple[int, ...]):
        self.fn, self.nkept, self.tail = fn, nkept, tail

    def __call__(self, extents, block: np.ndarray):
        kept = block.shape[: self.nkept]
        m = math.prod(kept)
        # (not reshape(m, -1): no group of zero lanes knows its lanes' length from -1)
        out = self.fn(block.reshape(m, math.prod(block.shape[self.nkept :])))
        out = array_module(block, out).asarray(out)  # (CuPy tiles: a CuPy result)
        return [(extents[0].rows, out.reshape(kept + self.tail))]


def along_axes(
    fn: LaneFn,
    x: Array,
    axes: Sequence[int],
    tail: Sequence[int],
    dtype: Any,
    name: str = "along_axes",
) -> Array:
    """``fn`` over the lanes of ``x`` along ``axes`` (non-negative, sorted).

    ``fn`` gets an ``(m, K)`` block (``K`` the product of the lane axes) and returns
    ``(m, *tail)``; the result has shape ``kept_shape + tail``. With no kept axis the
    whole array is one lane, computed by one task.
    """
    from spartan.frontend.manipulation import moveaxis

    axes = tuple(axes)
    kept = [i for i in range(x.ndim) if i not in axes]
    y = moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim))) if axes else x
    if not kept:
        y = y.reshape((1,) + y.shape)
    tail = tuple(int(n) for n in tail)
    shape = tuple(y.shape[: max(len(kept), 1)]) + tail
    expr = JoinUpdate(
        _Lanes(fn, max(len(kept), 1), tail), None, [y._expr], [0], shape, dtype, name=name
    )
    out = Array(expr)
    return out.reshape(tail) if not kept else out


class _ApplyLanes:
    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __call__(self, m: np.ndarray) -> np.ndarray:
        xp = array_module(m)
        return xp.stack([xp.asarray(self.fn(row, *self.args, **self.kwargs)) for row in m])


def apply_along_axis(
    func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any
) -> Array:
    """``func1d`` on every 1-d lane along ``axis`` (see :func:`numpy.apply_along_axis`);
    the output shape comes from one call on the first lane's stand-in of zeros."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.reductions import normalize_axes

    x = asarray(arr)
    (ax,) = normalize_axes(axis, x.ndim)
    probe = np.asarray(func1d(np.zeros(x.shape[ax], x.dtype), *args, **kwargs))
    out = along_axes(
        _ApplyLanes(func1d, args, kwargs),
        x,
        (ax,),
        probe.shape,
        probe.dtype,
        name="apply_along_axis",
    )
    # NumPy puts the function's output axes where ``axis`` was
    k = probe.ndim
    return (
        moveaxis(out, tuple(range(x.ndim - 1, x.ndim - 1 + k)), tuple(range(ax, ax + k)))
        if k
        else out
    )


def apply_over_axes(func: Callable[..., Any], a: Any, axes: Any) -> Array:
    """``func(a, axis)`` applied for each axis in turn, keeping dimensions."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import expand_dims

    val = asarray(a)
    for ax in np.atleast_1d(axes):
        ax = int(ax) % val.ndim
        res = asarray(func(val, ax))
        if res.ndim == val.ndim:
            val = res
        elif res.ndim == val.ndim - 1:
            val = expand_dims(res, ax)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return val
