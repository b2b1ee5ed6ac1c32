"""Indexing: basic indices are views, boolean masks are filters, assignment is a
``join_update`` onto the array (through a view: onto the base the view shares, see
:mod:`spartan.frontend.aliasing`).

>>> x[1:, ::-1]          # doctest: +SKIP   (a view)
>>> x[x > 0]             # a filter
>>> x[0, :2] = 7         # join_update onto x
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.aliasing import Strided, is_basic, place
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.evaluate import evaluate
from spartan.frontend.filter import Filter
from spartan.frontend.viewmap import ViewMap


def _bool_mask(key: Any) -> Array | None:
    if isinstance(key, Array) and key.dtype == bool:
        return key
    if isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype == bool:
        return asarray(np.asarray(key))
    return None


def _scalar_index(key: Any, ndim: int) -> bool:
    """An integer for every axis and nothing else: NumPy returns a scalar (a copy)."""
    parts = key if isinstance(key, tuple) else (key,)
    return len(parts) == ndim and all(isinstance(p, (int, np.integer)) for p in parts)


def getitem(x: Array, key: Any) -> Array:
    if is_basic(key):
        link = Strided(ViewMap.from_index(x.shape, key))
        if _scalar_index(key, x.ndim):
            return Array(link.apply(x._expr))  # NumPy's scalar: a copy, not a view
        return x._linked(link)
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


def setitem(x: Array, key: Any, value: Any) -> Array:
    """The array equal to ``x`` with ``x[key] = value`` applied."""
    mask = _bool_mask(key)
    if mask is not None and mask.shape == x.shape:
        from spartan.frontend.manipulation import where

        v = asarray(value)
        if v.ndim == 0:
            return where(mask, v.astype(x.dtype), x)
    if is_basic(key):
        return place(x, ViewMap.from_index(x.shape, key), value)
    from spartan.frontend import fancy

    return fancy.setitem(x, key, value)


def nonzero(a: Any) -> tuple[Array, ...]:
    from spartan.frontend import fancy

    return fancy.nonzero(a)
