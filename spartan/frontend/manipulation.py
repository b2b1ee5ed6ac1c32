"""Shape manipulation: views where no data moves, reshape/concatenate nodes otherwise.

>>> sp.arange(6).reshape(2, 3).T.shape       # doctest: +SKIP
(3, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, with_tiling
from spartan.frontend.map import Map
from spartan.frontend.reductions import normalize_axes
from spartan.frontend.reshape import Concatenate, Reshape
from spartan.frontend.view import transpose as transpose_view
from spartan.frontend.view import view
from spartan.frontend.viewmap import Axis, ViewMap


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _cast(dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    return x.astype(dtype)


def reshape(a: Any, shape: Any, order: str = "C", newshape: Any = None) -> Array:
    """Same data, new shape (C order); ``-1`` infers one dimension."""
    x = asarray(a)
    shape = newshape if shape is None else shape
    if order == "F":
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return transpose(reshape(transpose(x), shape[::-1]))
    if order not in ("C", "A"):
        raise ValueError("order must be one of 'C', 'F', 'A'")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = [int(n) for n in shape]
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or x.size % known:
            raise ValueError(f"cannot reshape array of size {x.size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = x.size // known
    shape = tuple(shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if shape == x.shape:
        return x
    squeezed = [n for n in shape if n != 1]
    if squeezed == [n for n in x.shape if n != 1]:
        # only unit axes come or go: a view
        src = iter([i for i, n in enumerate(x.shape) if n != 1])
        axes = [Axis(None) if n == 1 else Axis(next(src), 0, 1, n) for n in shape]
        fixed = tuple((i, 0) for i, n in enumerate(x.shape) if n == 1)
        return Array(view(x._expr, ViewMap(x.ndim, tuple(axes), fixed)))
    return Array(Reshape(x._expr, shape))


def ravel(a: Any, order: str = "C") -> Array:
    return reshape(a, (-1,), order=order)


def flatten(a: Any, order: str = "C") -> Array:
    return copy(ravel(a, order))


def transpose(a: Any, axes: Sequence[int] | None = None) -> Array:
    x = asarray(a)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    if len(axes) != x.ndim:
        raise ValueError("axes don't match array")
    axes = tuple(normalize_axes(i, x.ndim)[0] for i in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError("repeated axis in transpose")
    return Array(transpose_view(x._expr, axes))


def matrix_transpose(a: Any) -> Array:
    x = asarray(a)
    if x.ndim < 2:
        raise ValueError("matrix_transpose requires an array of at least 2 dimensions")
    return swapaxes(x, -1, -2)


def swapaxes(a: Any, axis1: int, axis2: int) -> Array:
    x = asarray(a)
    (i,), (j,) = normalize_axes(axis1, x.ndim), normalize_axes(axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Array:
    x = asarray(a)
    src = [normalize_axes(s, x.ndim)[0] for s in np.atleast_1d(source)]
    dst = [normalize_axes(d, x.ndim)[0] for d in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def squeeze(a: Any, axis: Any = None) -> Array:
    x = asarray(a)
    axes = (
        tuple(i for i, n in enumerate(x.shape) if n == 1)
        if axis is None
        else normalize_axes(axis, x.ndim)
    )
    for i in axes:
        if x.shape[i] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return x[tuple(0 if i in axes else slice(None) for i in range(x.ndim))]


def expand_dims(a: Any, axis: Any) -> Array:
    x = asarray(a)
    axes = normalize_axes(axis, x.ndim + len(np.atleast_1d(axis)))
    key, src = [], 0
    for i in range(x.ndim + len(axes)):
        if i in axes:
            key.append(None)
        else:
            key.append(slice(None))
            src += 1
    return x[tuple(key)]


def broadcast_to(a: Any, shape: Any) -> Array:
    x = asarray(a)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if tuple(np.broadcast_shapes(x.shape, shape)) != shape:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {x.shape} and requested shape {shape}"
        )
    if shape == x.shape:
        return x
    return Array(Map(_identity, [x._expr], shape, x.dtype, name="broadcast_to"))


def broadcast_arrays(*args: Any) -> list[Array]:
    arrays = [asarray(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def astype(a: Any, dtype: Any, copy: bool = True) -> Array:
    import functools

    x = asarray(a)
    dtype = np.dtype(dtype)
    if dtype == x.dtype and not copy:
        return x
    return Array(Map(functools.partial(_cast, dtype), [x._expr], x.shape, dtype, name="astype"))


def copy(a: Any) -> Array:
    x = asarray(a)
    return Array(Map(_identity, [x._expr], x.shape, x.dtype, name="copy"))


def retile(a: Any, tiling: Any) -> Array:
    """``a`` re-cut into ``tiling`` (a :class:`Tiling` or row/column/block/dup)."""
    x = asarray(a)
    return with_tiling(Map(_identity, [x._expr], x.shape, x.dtype, name="retile"), tiling)


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Array:
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs, axis = [x.ravel() for x in xs], 0
    nd = xs[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    (ax,) = normalize_axes(axis, nd)
    for i, x in enumerate(xs):
        if x.ndim != nd:
            raise ValueError(
                "all the input array dimensions except for the concatenation axis must match "
                f"exactly, but along dimension 0, the array at index 0 has {nd} dimension(s) "
                f"and the array at index {i} has {x.ndim} dimension(s)"
            )
        for d in range(nd):
            if d != ax and x.shape[d] != xs[0].shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {d}, the array at index 0 has size "
                    f"{xs[0].shape[d]} and the array at index {i} has size {x.shape[d]}"
                )
    dtype = np.dtype(dtype) if dtype is not None else np.result_type(*(x.dtype for x in xs))
    return Array(Concatenate([x._expr for x in xs], ax, dtype))


def stack(arrays: Sequence[Any], axis: int = 0) -> Array:
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError("all input arrays must have the same shape")
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


def vstack(tup: Sequence[Any]) -> Array:
    xs = [asarray(a) for a in tup]
    return concatenate([x if x.ndim >= 2 else x.reshape(1, -1) for x in xs], axis=0)


def hstack(tup: Sequence[Any]) -> Array:
    xs = [asarray(a) for a in tup]
    return concatenate(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y``."""
    from spartan.frontend.ufuncs import elementwise

    if x is None and y is None:
        from spartan.frontend.indexing import nonzero

        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return elementwise(np.where, condition, x, y, name="where")
