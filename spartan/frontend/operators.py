"""The five high-level operators and the views, as public functions.

Everything in spartan's NumPy namespace is written on these; user code may call them
directly with functions that work on whole tiles (NumPy arrays).

>>> sp.map(lambda t: t * 2, x)                                   # doctest: +SKIP
>>> sp.fold(np.add, x, axis=0)                                   # doctest: +SKIP
>>> sp.scan(np.add, x, axis=1)                                   # doctest: +SKIP
>>> sp.filter(x, lambda t: t > 0)                                # doctest: +SKIP
>>> sp.join_update(f_join, np.add, [x, y], axes=[1, 0], shape=(n, m))  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from spartan.frontend.aliasing import Strided
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, newarray
from spartan.frontend.fold import Fold
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.map import Map
from spartan.frontend.reductions import normalize_axes, ufunc_reduce
from spartan.frontend.scan import Scan
from spartan.frontend.ufuncs import as_operand, probe, result_shape
from spartan.frontend.viewmap import ViewMap

__all__ = ["map", "fold", "scan", "filter", "join_update", "newarray", "slice", "swapaxes"]


def map(fn: Callable[..., np.ndarray], *arrays: Any, dtype: Any = None) -> Array:  # noqa: A001
    """``fn`` applied tile by tile; the output has the inputs' broadcast shape.

    ``fn`` receives one block per input (the region of its output tile) and must
    return a block of that shape.
    """
    operands = [as_operand(a) for a in arrays]
    shape = result_shape(operands)
    if dtype is None:
        stand_ins = [
            np.ones((1,) * len(o.shape), o.dtype) if hasattr(o, "uid") else o for o in operands
        ]
        dtype = np.asarray(probe(lambda *a: fn(*a), stand_ins)).dtype
    return Array(Map(fn, operands, shape, dtype, elementwise=False))


def _as_ufunc(f_accum: Callable[[Any, Any], Any]) -> np.ufunc:
    return f_accum if isinstance(f_accum, np.ufunc) else np.frompyfunc(f_accum, 2, 1)


def _generic_local(uf: np.ufunc, dtype: np.dtype, block: np.ndarray, axes, box) -> np.ndarray:
    out = block
    for ax in sorted(axes, reverse=True):
        out = uf.reduce(out, axis=ax)
    return np.asarray(out).astype(dtype)


def fold(f_accum: Callable[[Any, Any], Any], x: Any, axis: Any = None, dtype: Any = None) -> Array:
    """Reduce ``x`` over ``axis`` with an associative, commutative binary ``f_accum``
    (a NumPy ufunc, or any Python function of two arrays)."""
    x = asarray(x)
    if isinstance(f_accum, np.ufunc):
        return ufunc_reduce(f_accum, x, axis, dtype)
    axes = normalize_axes(axis, x.ndim)
    dtype = np.dtype(dtype or x.dtype)
    local = functools.partial(_generic_local, _as_ufunc(f_accum), dtype)
    return Array(
        Fold(x._expr, axes, local, f_accum, dtype, name=getattr(f_accum, "__name__", "fold"))
    )


def scan(f_accum: Callable[[Any, Any], Any], x: Any, axis: int = 0, dtype: Any = None) -> Array:
    """Cumulative ``f_accum`` along ``axis``; the output has ``x``'s shape."""
    x = asarray(x)
    (ax,) = normalize_axes(axis, x.ndim)
    dtype = np.dtype(dtype or x.dtype)
    return Array(Scan(x._expr, _as_ufunc(f_accum), ax, dtype))


def filter(x: Any, mask: Any) -> Array:  # noqa: A001
    """The elements of ``x`` where ``mask`` (an array, or a predicate on tiles) holds."""
    x = asarray(x)
    if callable(mask) and not isinstance(mask, Array):
        mask = map(mask, x, dtype=bool)
    from spartan.frontend.indexing import compress_mask

    return compress_mask(x, asarray(mask).astype(bool, copy=False))


def join_update(
    f_join: Callable[..., Iterable[tuple[Any, Any]]],
    f_accum: Callable[[Any, Any], Any] | None,
    inputs: Sequence[Any],
    axes: Sequence[int],
    shape: Sequence[int],
    dtype: Any = float,
    fill: Any = 0,
    groups: int | None = None,
    update_axis: int | None = None,
) -> Array:
    """Join groups of tiles and combine their ``(location, update)`` pairs.

    Input ``i`` is split into groups along ``axes[i]`` (-1: whole array). ``f_join``
    is called as ``f_join(extents, *blocks)`` per group (``extents[i].box`` is block
    ``i``'s global region) and yields ``(location, update)``: ``location`` a tuple of
    slices of the output, ``update`` an array. Overlapping updates are combined with
    ``f_accum`` onto an output that starts at ``fill`` (``f_accum=None``: overwrite).
    ``update_axis=k`` promises that a group's updates stay within the output range,
    along axis ``k``, that the group spans of the first joined input: each group then
    feeds only the output tiles it overlaps, and a worker finishes the tiles only it
    feeds in its own join task. With ``f_accum=None``, an ``f_join`` making one update
    per group may also have ``place(extents)`` (that update's location) and
    ``into(out, *blocks)`` (the update written into ``out``): an update landing whole in
    a tile its task finishes is then written there in place, not made and copied.

    >>> def rows_times(ext, xt, w):                  # doctest: +SKIP
    ...     return [(ext[0].rows, xt @ w)]
    >>> sp.join_update(rows_times, None, [x, w], [0, -1], (n, 3), update_axis=0)  # doctest: +SKIP
    """
    exprs = [asarray(x)._expr for x in inputs]
    return Array(
        JoinUpdate(
            f_join,
            f_accum,
            exprs,
            axes,
            tuple(shape),
            dtype,
            fill,
            groups=groups,
            update_axis=update_axis,
        )
    )


def slice(x: Any, region: Any) -> Array:  # noqa: A001
    """A view of ``x`` (any basic index: slices, ints, None, Ellipsis)."""
    x = asarray(x)
    return x._linked(Strided(ViewMap.from_index(x.shape, region)))


def swapaxes(x: Any, axis1: int, axis2: int) -> Array:
    """A view of ``x`` with two axes exchanged (a column-tiled x reads row-tiled)."""
    from spartan.frontend.manipulation import swapaxes as _swap

    return _swap(x, axis1, axis2)
