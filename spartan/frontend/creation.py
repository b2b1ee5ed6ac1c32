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


def _zeros(box: Box, dtype: np.dtype) -> np.ndarray:
    return np.zeros(box_shape(box), dtype=dtype)  # (strings: '', not '0')


def zeros(shape: ShapeLike, dtype: Any = float, tiling: Any = None) -> Array:
    return newarray(shape, _zeros, dtype, tiling, "zeros")


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


def _typed(value: Any, v: int) -> Any:
    """``v`` as a value of ``value``'s type (NumPy scalar or Python number)."""
    return value.dtype.type(v) if isinstance(value, np.generic) else type(value)(v)


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
        # NumPy's own choice, from an empty range of values of the same types
        dtype = np.arange(_typed(start, 0), _typed(stop, 0), _typed(step, 1)).dtype
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


def _logspace(start: float, step: float, base: float, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[0]
    return np.power(base, start + np.arange(lo, hi) * step).astype(dtype)


def logspace(
    start: float,
    stop: float,
    num: int = 50,
    endpoint: bool = True,
    base: float = 10.0,
    dtype: Any = None,
    tiling: Any = None,
) -> Array:
    """``base ** linspace(start, stop, num)`` (see :func:`numpy.logspace`)."""
    from spartan.frontend.ufuncs import elementwise

    y = linspace(start, stop, num, endpoint, tiling=tiling)
    out = elementwise(np.power, base, y, name="logspace")
    return out.astype(dtype) if dtype is not None else out


def geomspace(
    start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None
) -> Array:
    """Numbers spaced evenly on a log scale between ``start`` and ``stop``."""
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    ref = np.geomspace(start, stop, min(num, 2), endpoint=endpoint)
    sign = -1.0 if (np.real(start) < 0 and np.real(stop) < 0) else 1.0
    out = sign * logspace(
        np.log10(sign * start), np.log10(sign * stop), num, endpoint, dtype=ref.dtype
    )
    return out.astype(dtype) if dtype is not None else out


def _tri(k: int, box: Box, dtype: np.dtype) -> np.ndarray:
    (r0, r1), (c0, c1) = box
    return (np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None] + k).astype(dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float, tiling: Any = None) -> Array:
    """Ones at and below the ``k``-th diagonal, zeros elsewhere.

    >>> sp.tri(3, k=-1).to_numpy()[2].tolist()      # doctest: +SKIP
    [1.0, 1.0, 0.0]
    """
    shape = (int(N), int(N if M is None else M))
    return newarray(shape, functools.partial(_tri, int(k)), dtype, tiling, "tri")


def _tri_mask(a: Any, k: int, lower: bool) -> Array:
    from spartan.frontend.manipulation import where

    x = asarray(a)
    if x.ndim == 0:
        raise ValueError("input array must be at least 1-d")
    # like NumPy, a 1-d input is broadcast against the (n, n) mask
    n, m = x.shape[-2:] if x.ndim >= 2 else (x.shape[0], x.shape[0])
    keep = tri(n, m, k if lower else k - 1, dtype=bool)
    if not lower:
        keep = ~keep
    return where(keep, x, np.zeros((), x.dtype))


def tril(m: Any, k: int = 0) -> Array:
    """Lower triangle of an array (the last two axes)."""
    return _tri_mask(m, int(k), True)


def triu(m: Any, k: int = 0) -> Array:
    """Upper triangle of an array (the last two axes)."""
    return _tri_mask(m, int(k), False)


def diag(v: Any, k: int = 0) -> Array:
    """The ``k``-th diagonal of a 2-d array, or a 2-d array with ``v`` on it.

    >>> sp.diag(sp.arange(3)).to_numpy()[1].tolist()      # doctest: +SKIP
    [0, 1, 0]
    """
    x = asarray(v)
    k = int(k)
    if x.ndim == 2:
        from spartan.frontend.linalg import diagonal

        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    from spartan.frontend.join_update import JoinUpdate

    return Array(
        JoinUpdate(_DiagRun(k), None, [x._expr], [0], (n, n), x.dtype, fill=0, name="diag")
    )


class _DiagRun:
    """``f_join`` of :func:`diag`: one 1x1 update per element is slow, so each group
    writes its run of the diagonal as one dense square block (zeros off the diagonal)."""

    def __init__(self, k: int):
        self.k = k

    def __call__(self, extents, v):
        lo, hi = extents[0].box[0]
        if hi <= lo:
            return []
        r0 = lo if self.k >= 0 else lo - self.k
        c0 = lo + self.k if self.k >= 0 else lo
        return [((slice(r0, r0 + hi - lo), slice(c0, c0 + hi - lo)), np.diag(v))]


def diagflat(v: Any, k: int = 0) -> Array:
    """A 2-d array with the flattened input on the ``k``-th diagonal."""
    return diag(asarray(v).ravel(), k)


def indices(dimensions: Sequence[int], dtype: Any = int, sparse: bool = False) -> Any:
    """An array of grid indices, shape ``(len(dimensions), *dimensions)``."""
    dims = normalize_shape(dimensions)
    grids = []
    for i in range(len(dims)):
        shape = tuple(n if j == i else (1 if sparse else n) for j, n in enumerate(dims))
        grids.append(newarray(shape, functools.partial(_axis_index, i), dtype, None, "indices"))
    if sparse:
        return tuple(grids)
    from spartan.frontend.manipulation import stack

    if not dims:
        return zeros((0,), dtype=dtype)
    return stack(grids)


def _axis_index(axis: int, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[axis]
    shape = [1] * len(box)
    shape[axis] = hi - lo
    return np.broadcast_to(np.arange(lo, hi, dtype=dtype).reshape(shape), box_shape(box))


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    """Coordinate arrays from coordinate vectors (see :func:`numpy.meshgrid`)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [asarray(x).ravel() for x in xi]
    nd = len(xs)
    out = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        # 'xy' (Cartesian) indexing swaps the roles of the first two axes
        pos = (1 - i if i < 2 else i) if indexing == "xy" and nd > 1 else i
        shape[pos] = x.shape[0]
        out.append(x.reshape(shape))
    if not sparse:
        from spartan.frontend.manipulation import broadcast_arrays

        out = [o.copy() if copy else o for o in broadcast_arrays(*out)]
    return tuple(out)


class _FromFunction:
    def __init__(self, fn: Any, kwargs: dict, index_dtype: np.dtype):
        self.fn, self.kwargs, self.index_dtype = fn, kwargs, index_dtype

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        ranges = [np.arange(lo, hi, dtype=self.index_dtype) for lo, hi in box]
        grids = np.meshgrid(*ranges, indexing="ij")
        return np.asarray(self.fn(*grids, **self.kwargs))


def fromfunction(
    function: Any, shape: ShapeLike, *, dtype: Any = float, tiling: Any = None, **kwargs: Any
) -> Array:
    """An array whose element at ``idx`` is ``function(*idx)``, evaluated per tile.

    >>> sp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int)     # doctest: +SKIP
    """
    nd = len(normalize_shape(shape))
    probe = np.asarray(function(*[np.zeros((1,) * nd, dtype)] * nd, **kwargs))
    return newarray(
        shape, _FromFunction(function, kwargs, np.dtype(dtype)), probe.dtype, tiling, "fromfunction"
    )


def asanyarray(a: Any, dtype: Any = None) -> Array:
    return asarray(a, dtype=dtype)


def ascontiguousarray(a: Any, dtype: Any = None) -> Array:
    """Tiles are always C-contiguous blocks: this is :func:`asarray`."""
    return asarray(a, dtype=dtype)


asfortranarray = ascontiguousarray


def require(a: Any, dtype: Any = None, requirements: Any = None) -> Array:
    """``a`` as a spartan array of ``dtype`` (memory-layout flags do not apply to tiles)."""
    return asarray(a, dtype=dtype)


def _window(kind: str, m: int, beta: float, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[0]
    n = np.arange(lo, hi, dtype=np.float64)
    if m == 1:
        return np.ones(hi - lo, dtype)
    if kind == "kaiser":
        alpha = (m - 1) / 2.0
        return (np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(beta)).astype(dtype)
    if kind == "bartlett":
        return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1)).astype(
            dtype
        )
    c = 2.0 * np.pi * n / (m - 1)
    if kind == "blackman":
        return (0.42 - 0.5 * np.cos(c) + 0.08 * np.cos(2 * c)).astype(dtype)
    a = 0.54 if kind == "hamming" else 0.5
    return (a - (1 - a) * np.cos(c)).astype(dtype)


def _window_fn(kind: str, M: int, beta: float = 0.0) -> Array:
    m = int(M)
    if m < 1:
        return zeros((0,))
    return newarray((m,), functools.partial(_window, kind, m, float(beta)), np.float64, name=kind)


def bartlett(M: int) -> Array:
    """The Bartlett (triangular) window."""
    return _window_fn("bartlett", M)


def blackman(M: int) -> Array:
    return _window_fn("blackman", M)


def hamming(M: int) -> Array:
    return _window_fn("hamming", M)


def hanning(M: int) -> Array:
    return _window_fn("hanning", M)


def kaiser(M: int, beta: float) -> Array:
    return _window_fn("kaiser", M, beta)
