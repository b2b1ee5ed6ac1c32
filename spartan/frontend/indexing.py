"""Indexing: basic indices are views, boolean masks are filters, assignment is a
``join_update`` onto the array (through a view: onto the base the view shares, see
:mod:`spartan.frontend.aliasing`).

>>> x[1:, ::-1]          # a view
array([[5., 4., 3.]])
>>> x[x > 2]             # a filter
array([3., 4., 5.])
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
    """``key`` as a boolean mask array, if it is one (a Python or NumPy bool is a 0-d
    mask, as in NumPy: ``x[True]`` adds an axis, it does not pick row 1)."""
    if isinstance(key, Array) and key.dtype == bool:
        return key
    if isinstance(key, (bool, np.bool_)):
        return asarray(np.asarray(key))
    if isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype == bool:
        return asarray(np.asarray(key))
    return None


def _scalar_index(key: Any, ndim: int) -> bool:
    """An integer for every axis and nothing else: NumPy returns a scalar (a copy)."""
    parts = key if isinstance(key, tuple) else (key,)
    return len(parts) == ndim and all(isinstance(p, (int, np.integer)) for p in parts)


def scalar_bools(x: Array, key: Any) -> tuple[Array, Any]:
    """``(x', key')`` that index like ``x[key]`` with no Python/NumPy bool scalar inside
    a tuple key. NumPy reads such a bool as a 0-d mask: it adds an axis of length 1
    (True) or 0 (False) there, an advanced index that takes part in broadcasting with the
    key's other advanced indices. Spelled out: a new axis of length 1 in ``x`` where
    the bool stands, indexed by ``[0]`` or ``[]`` (never the integer 0 or 1).
    """
    if not isinstance(key, tuple) or not any(isinstance(p, (bool, np.bool_)) for p in key):
        return x, key
    from spartan.frontend.fancy import consumed
    from spartan.frontend.manipulation import expand_dims

    parts = list(key)
    ellipsis = next((i for i, p in enumerate(parts) if p is Ellipsis), None)
    spare = x.ndim - sum(consumed(p) for p in parts)
    axes, axis = [], 0
    for i, p in enumerate(parts):
        if isinstance(p, (bool, np.bool_)):
            axes.append(axis + len(axes))
            parts[i] = np.array([0] if p else [], dtype=np.intp)
        elif p is Ellipsis:
            axis += max(spare, 0)
        else:
            axis += consumed(p)
    if ellipsis is None and spare < 0:
        return x, key  # too many indices: the indexing below raises NumPy's IndexError
    return expand_dims(x, tuple(axes)), tuple(parts)


def getitem(x: Array, key: Any) -> Array:
    x, key = scalar_bools(x, key)
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


def check_mask(x: Array, mask: Array) -> None:
    """IndexError unless ``mask`` can index ``x``: its shape that of the leading axes of
    ``x``, where (as in NumPy) an axis of length 0 matches any length."""
    k = mask.ndim
    if k > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {k} were indexed"
        )
    if mask.shape == x.shape[:k] or (
        mask.size == 0 and all(m in (n, 0) for m, n in zip(mask.shape, x.shape))
    ):
        return
    axis = next(i for i in range(k) if mask.shape[i] != x.shape[i])
    raise IndexError(
        f"boolean index did not match indexed array along axis {axis}; size of axis is "
        f"{x.shape[axis]} but size of corresponding boolean axis is {mask.shape[axis]}"
    )


def compress_mask(x: Array, mask: Array) -> Array:
    """``x[mask]`` for a boolean mask over the leading axes of ``x`` (a filter; building
    it forces the per-tile counts, since the result's length depends on the data).

    As in NumPy, a 0-d mask adds a leading axis of length 1 (True) or 0 (False), and a
    mask with an axis of length 0 matches any length there (it selects nothing)."""
    from spartan.frontend.creation import empty

    check_mask(x, mask)
    k, rest = mask.ndim, x.shape[mask.ndim :]
    if k == 0:  # x[True] / x[False]: one value decides (a copy, as NumPy's is)
        return x.reshape((1,) + rest).copy() if bool(mask) else empty((0,) + rest, x.dtype)
    if mask.size == 0:
        return empty((0,) + rest, x.dtype)
    if 0 in rest:  # nothing to filter; the length is the mask's count
        return empty((int(mask.sum()),) + rest, x.dtype)
    if k < x.ndim:
        from spartan.frontend.manipulation import broadcast_to

        mask = broadcast_to(mask.reshape(mask.shape + (1,) * (x.ndim - k)), x.shape)
    out = Filter(x._expr, mask._expr)
    evaluate(out)
    result = Array(out)
    return result.reshape((-1,) + rest) if k < x.ndim else result


def _checked_value(value: Any, target: tuple[int, ...]) -> Array:
    """``value`` as an array, ValueError (NumPy's message) unless it broadcasts to the
    shape ``target`` of what the index selects."""
    v = asarray(value)
    try:
        np.broadcast_shapes(v.shape, target)
    except ValueError:
        raise ValueError(
            f"shape mismatch: value array of shape {v.shape} could not be broadcast to "
            f"indexing result of shape {target}"
        ) from None
    return v


def set_masked(x: Array, mask: Array, value: Any) -> Array:
    """The array equal to ``x`` with ``x[mask] = value`` applied: a ``where`` for a
    scalar value (no data-dependent step), else a scatter to the mask's positions."""
    from spartan.frontend import fancy
    from spartan.frontend.manipulation import where

    check_mask(x, mask)
    k, rest = mask.ndim, x.shape[mask.ndim :]
    if k == 0:  # x[True] = v writes all of x (v may have the added axis); x[False] none
        flag = bool(mask)
        v = _checked_value(value, (int(flag),) + rest)
        if not flag:
            return x
        if v.ndim > x.ndim:
            v = v.reshape(v.shape[1:])
        return place(x, ViewMap.from_index(x.shape, Ellipsis), v)
    if mask.size == 0 or x.size == 0:
        _checked_value(value, (0,) + rest)
        return x
    v = asarray(value)
    if v.ndim == 0:
        full = mask.reshape(mask.shape + (1,) * (x.ndim - k))
        return where(full, v.astype(x.dtype), x)
    (pos,) = fancy.nonzero(mask.ravel())
    v = _checked_value(v, pos.shape + rest)
    rows = x.reshape((mask.size,) + rest) if k != 1 else x
    return fancy._scatter_rows(rows, pos, v).reshape(x.shape)


def setitem(x: Array, key: Any, value: Any) -> Array:
    """The array equal to ``x`` with ``x[key] = value`` applied."""
    if isinstance(key, tuple) and any(isinstance(p, (bool, np.bool_)) for p in key):
        plain = tuple(p for p in key if not isinstance(p, (bool, np.bool_)))
        if is_basic(plain):
            # the bools only add axes of length 1 (True) or 0 (False): NumPy checks the
            # value against that shape, then writes where the key without them points
            target = np.broadcast_to(np.empty((), x.dtype), x.shape)[key].shape
            v = asarray(value)
            if np.broadcast_shapes(v.shape, target) != target:
                raise ValueError(
                    f"could not broadcast input array from shape {v.shape} into shape {target}"
                )
            if 0 in target:
                return x
            from spartan.frontend.manipulation import broadcast_to

            place_shape = np.broadcast_to(np.empty((), x.dtype), x.shape)[plain].shape
            return setitem(x, plain, broadcast_to(v, target).reshape(place_shape))
    mask = _bool_mask(key)
    if mask is not None:
        return set_masked(x, mask, value)
    if is_basic(key):
        return place(x, ViewMap.from_index(x.shape, key), value)
    from spartan.frontend import fancy

    return fancy.setitem(x, key, value)


def nonzero(a: Any) -> tuple[Array, ...]:
    from spartan.frontend import fancy

    return fancy.nonzero(a)
