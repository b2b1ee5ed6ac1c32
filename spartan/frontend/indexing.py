"""Indexing: basic indices are views, boolean masks are filters, assignment is a
functional update (the Python object is rebound to the updated array).

>>> x[1:, ::-1]          # doctest: +SKIP   (a view)
>>> x[x > 0]             # a filter
>>> x[0, :2] = 7         # join_update onto x
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.evaluate import evaluate
from spartan.frontend.filter import Filter
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.view import view
from spartan.frontend.viewmap import ViewMap


def _is_basic(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)) for p in parts)


def _bool_mask(key: Any) -> Array | None:
    if isinstance(key, Array) and key.dtype == bool:
        return key
    if isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype == bool:
        return asarray(np.asarray(key))
    return None


def getitem(x: Array, key: Any) -> Array:
    if _is_basic(key):
        return Array(view(x._expr, ViewMap.from_index(x.shape, key)))
    mask = _bool_mask(key)
    if mask is not None:
        return compress_mask(x, mask)
    from spartan.frontend import fancy

    return fancy.getitem(x, key)


def compress_mask(x: Array, mask: Array) -> Array:
    """``x[mask]`` for a boolean mask over the leading axes of ``x`` (a filter; building
    it forces the per-tile counts, since the result's length depends on the data)."""
    k = mask.ndim
    if mask.shape != x.shape[:k]:
        axis = next((i for i in range(min(k, x.ndim)) if mask.shape[i] != x.shape[i]), 0)
        raise IndexError(
            f"boolean index did not match indexed array along axis {axis}; size of axis is "
            f"{x.shape[axis] if x.ndim else 0} but size of corresponding boolean axis is "
            f"{mask.shape[axis] if mask.ndim else 0}"
        )
    if k < x.ndim:
        from spartan.frontend.manipulation import broadcast_to

        mask = broadcast_to(mask.reshape(mask.shape + (1,) * (x.ndim - k)), x.shape)
    out = Filter(x._expr, mask._expr)
    evaluate(out)
    result = Array(out)
    return result.reshape((-1,) + x.shape[k:]) if k < x.ndim else result


class _Place:
    """``f_join`` for assignment: the whole value goes to one (strided) location."""

    def __init__(self, loc: tuple):
        self.loc = loc

    def __call__(self, extents, value):
        return [(self.loc, value)]


def setitem(x: Array, key: Any, value: Any) -> Array:
    """The array equal to ``x`` with ``x[key] = value`` applied."""
    mask = _bool_mask(key)
    if mask is not None and mask.shape == x.shape:
        from spartan.frontend.manipulation import where

        v = asarray(value)
        if v.ndim == 0:
            return where(mask, v.astype(x.dtype), x)
    if _is_basic(key):
        vm = ViewMap.from_index(x.shape, key)
        target = vm.shape
        v = asarray(value)
        try:
            np.broadcast_shapes(v.shape, target)
        except ValueError:
            raise ValueError(
                f"could not broadcast input array from shape {v.shape} into shape {target}"
            ) from None
        from spartan.frontend.manipulation import broadcast_to

        # the value over the selected base elements, in base axis order (basic indices
        # keep axis order; unit axes from None go, integer axes are dropped)
        kept = [a for a in vm.axes if a.base is not None]
        v = broadcast_to(v.astype(x.dtype), target).reshape(tuple(a.count for a in kept))
        loc: list[Any] = [0] * x.ndim
        for axis, index in vm.fixed:
            loc[axis] = index
        for a in kept:
            stop = a.start + a.step * a.count
            loc[a.base] = slice(a.start, stop if stop >= 0 else None, a.step)
        expr = JoinUpdate(
            _Place(tuple(loc)),
            None,
            [v._expr],
            [-1],
            x.shape,
            x.dtype,
            base=x._expr,
            name="setitem",
        )
        return Array(expr)
    from spartan.frontend import fancy

    return fancy.setitem(x, key, value)


def nonzero(a: Any) -> tuple[Array, ...]:
    from spartan.frontend import fancy

    return fancy.nonzero(a)
