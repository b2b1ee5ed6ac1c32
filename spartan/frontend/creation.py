"""Array creation: tiles are made on the workers that hold them (``newarray``).

Every function takes ``tiling=`` (a :class:`~spartan.tiling.Tiling` or ``"row"``,
``"column"``, ``"block"``, ``"dup"``); without it the optimizer chooses.

>>> sp.zeros((4, 4), tiling="column")     # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.expr import Expr
from spartan.frontend.source import FromNumpy, NewArray
from spartan.tiling import Box, box_shape

ShapeLike = int | Sequence[int]


def normalize_shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        out = tuple(int(n) for n in shape)
    except TypeError:
        raise TypeError(
            f"'{type(shape).__name__}' object cannot be interpreted as an integer"
        ) from None
    if any(n < 0 for n in out):
        raise ValueError("negative dimensions are not allowed")
    return out


def with_tiling(expr: Expr, tiling: Any) -> Array:
    """Wrap ``expr``, fixing its tiling if the caller named one."""
    if tiling is not None:
        from spartan.backend import session
        from spartan.frontend.planning import resolve_tiling

        expr.tiling_hint = resolve_tiling(
            tiling, expr.shape, expr.dtype.itemsize, session.current().nworkers
        )
    return Array(expr)


def newarray(
    shape: ShapeLike,
    init: Any,
    dtype: Any = float,
    tiling: Any = None,
    name: str = "newarray",
) -> Array:
    """An array whose tile at global extent ``box`` is ``init(box, dtype)``.

    >>> sp.newarray((4,), lambda box, dt: np.arange(*box[0]), dtype=int)  # doctest: +SKIP
    """
    return with_tiling(NewArray(normalize_shape(shape), dtype, init, name), tiling)


def _fill(value: Any, box: Box, dtype: np.dtype) -> np.ndarray:
    return np.full(box_shape(box), value, dtype=dtype)


def full(shape: ShapeLike, fill_value: Any, dtype: Any = None, tiling: Any = None) -> Array:
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    return newarray(shape, functools.partial(_fill, fill_value), dtype, tiling, "full")


def zeros(shape: ShapeLike, dtype: Any = float, tiling: Any = None) -> Array:
    return newarray(shape, functools.partial(_fill, 0), dtype, tiling, "zeros")


def ones(shape: ShapeLike, dtype: Any = float, tiling: Any = None) -> Array:
    return newarray(shape, functools.partial(_fill, 1), dtype, tiling, "ones")


def empty(shape: ShapeLike, dtype: Any = float, tiling: Any = None) -> Array:
    """Like :func:`zeros` (tiles are always initialized: no garbage from other tasks)."""
    return zeros(shape, dtype, tiling)


def _like(name: str, a: Any, *args: Any, dtype: Any = None, shape: Any = None, tiling: Any = None):
    a_shape = np.shape(a) if not isinstance(a, Array) else a.shape
    a_dtype = a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype
    fn = globals()[name]
    return fn(shape if shape is not None else a_shape, *args, dtype=dtype or a_dtype, tiling=tiling)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, tiling: Any = None) -> Array:
    return _like("zeros", a, dtype=dtype, shape=shape, tiling=tiling)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, tiling: Any = None) -> Array:
    return _like("ones", a, dtype=dtype, shape=shape, tiling=tiling)


def empty_like(a: Any, dtype: Any = None, shape: Any = None, tiling: Any = None) -> Array:
    return _like("zeros", a, dtype=dtype, shape=shape, tiling=tiling)


def full_like(
    a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, tiling: Any = None
) -> Array:
    return _like("full", a, fill_value, dtype=dtype, shape=shape, tiling=tiling)


def _arange(start: Any, step: Any, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[0]
    return (start + np.arange(lo, hi, dtype=np.result_type(dtype, np.int64)) * step).astype(dtype)


def arange(
    start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, tiling: Any = None
) -> Array:
    """Evenly spaced values in ``[start, stop)``, like :func:`numpy.arange`."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("division by zero")  # NumPy's error for step=0
    n = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        dtype = (
            np.arange(start, start + step, step).dtype if n else np.result_type(start, stop, step)
        )
    return newarray((n,), functools.partial(_arange, start, step), dtype, tiling, "arange")


def _linspace(start: float, step: float, num: int, stop: float, endpoint: bool, box, dtype):
    lo, hi = box[0]
    out = start + np.arange(lo, hi) * step
    if endpoint and hi == num and num > 1:
        out[-1] = stop
    return out.astype(dtype)


def linspace(
    start: float,
    stop: float,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    tiling: Any = None,
) -> Any:
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else float("nan")
    dtype = dtype or np.result_type(start, stop, float)
    init = functools.partial(_linspace, start, step if div > 0 else 0.0, num, stop, endpoint)
    out = newarray((num,), init, dtype, tiling, "linspace")
    return (out, step) if retstep else out


def _eye(k: int, box: Box, dtype: np.dtype) -> np.ndarray:
    (r0, r1), (c0, c1) = box
    rows = np.arange(r0, r1)[:, None]
    cols = np.arange(c0, c1)[None, :]
    return (cols - rows == k).astype(dtype)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, tiling: Any = None) -> Array:
    return newarray((N, N if M is None else M), functools.partial(_eye, k), dtype, tiling, "eye")


def identity(n: int, dtype: Any = float, tiling: Any = None) -> Array:
    return eye(n, dtype=dtype, tiling=tiling)


def array(obj: Any, dtype: Any = None, copy: bool = True, tiling: Any = None) -> Array:
    """A spartan array from data (a NumPy array, nested lists, or a spartan array)."""
    if isinstance(obj, Array):
        out = obj.astype(dtype) if dtype is not None else obj
        return out.retile(tiling) if tiling is not None else out
    return with_tiling(FromNumpy(np.array(obj, dtype=dtype)), tiling)


def asarray(obj: Any, dtype: Any = None, tiling: Any = None) -> Array:
    if isinstance(obj, Array) and dtype is None and tiling is None:
        return obj
    return array(obj, dtype=dtype, tiling=tiling)
