"""Array creation: tiles are made on the workers that hold them (``newarray``).

Every function takes ``tiling=`` (a :class:`~spartan.tiling.Tiling` or ``"row"``,
``"column"``, ``"block"``, ``"dup"``); without it the optimizer chooses.

>>> sp.zeros((2, 2), tiling="column")
array([[0., 0.],
       [0., 0.]])
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from spartan.backend import session
from spartan.backend.device import check_device
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

    >>> sp.newarray((4,), lambda box, dt: np.arange(*box[0]), dtype=int)
    array([0, 1, 2, 3])
    """
    return with_tiling(NewArray(normalize_shape(shape), dtype, init, name), tiling)


def _fill(value: Any, box: Box, dtype: np.dtype) -> np.ndarray:
    return np.full(box_shape(box), value, dtype=dtype)


def _float_default(dtype: Any) -> np.dtype:
    """``dtype``, None read as NumPy's (and the standard's) default, float64."""
    return np.dtype(np.float64 if dtype is None else dtype)


def _check_order(order: Any, where: str, allowed: str = "CF") -> None:
    """NumPy's checks of ``order=`` (tiles are always C-ordered blocks: it changes no
    result, only which values are accepted)."""
    if order is None:
        return
    if not isinstance(order, str) or order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order.upper() not in allowed:
        raise ValueError(f"{where}: only 'C' or 'F' order is permitted")


def _copy_flag(copy: Any) -> bool | None:
    """``copy=`` as NumPy 2 reads it: True (always), False (never) or None (if needed)."""
    return None if copy is None else bool(copy)


def _no_copy(where: str, why: str) -> ValueError:
    """NumPy 2's error for ``copy=False`` where a copy is needed, saying why."""
    return ValueError(
        f"{where}: unable to avoid copy while creating an array as requested ({why}); "
        "pass copy=None to copy only when needed"
    )


def full(
    shape: ShapeLike,
    fill_value: Any,
    dtype: Any = None,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (its dtype when ``dtype`` is None).

    >>> sp.full((2, 2), 7, device="cpu").to_numpy().tolist()
    [[7, 7], [7, 7]]
    """
    _check_order(order, "full")
    check_device(device, "full")
    if isinstance(fill_value, Array):
        fill_value = fill_value.to_numpy()  # (a task takes values, not handles)
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    if np.ndim(fill_value) > 0:  # broadcast along the shape, as NumPy does
        from spartan.frontend.manipulation import broadcast_to

        values = asarray(np.asarray(fill_value, dtype=dtype))
        out = broadcast_to(values, normalize_shape(shape)).copy()
        return out.retile(tiling) if tiling is not None else out
    return newarray(shape, functools.partial(_fill, fill_value), dtype, tiling, "full")


def _zeros(box: Box, dtype: np.dtype) -> np.ndarray:
    return np.zeros(box_shape(box), dtype=dtype)  # (strings: '', not '0')


def zeros(
    shape: ShapeLike,
    dtype: Any = None,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """An array of zeros (float64 unless ``dtype`` says otherwise).

    >>> sp.zeros((2, 3), device=x.device, tiling="row")
    array([[0., 0., 0.],
           [0., 0., 0.]])
    """
    _check_order(order, "zeros")
    check_device(device, "zeros")
    return newarray(shape, _zeros, _float_default(dtype), tiling, "zeros")


def ones(
    shape: ShapeLike,
    dtype: Any = None,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """An array of ones (float64 unless ``dtype`` says otherwise)."""
    _check_order(order, "ones")
    check_device(device, "ones")
    return newarray(shape, functools.partial(_fill, 1), _float_default(dtype), tiling, "ones")


def empty(
    shape: ShapeLike,
    dtype: Any = None,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """Like :func:`zeros` (tiles are always initialized: no garbage from other tasks)."""
    _check_order(order, "empty")
    check_device(device, "empty")
    return zeros(shape, dtype, tiling=tiling)


def _like(
    name: str,
    a: Any,
    *args: Any,
    dtype: Any,
    order: Any,
    shape: Any,
    device: Any,
    tiling: Any,
    where: str = "",
) -> Array:
    """``name(shape, *args)`` with ``a``'s shape and dtype unless given (``where``: the
    function the user called, for errors)."""
    where = where or name + "_like"
    _check_order(order, where, "CFAK")
    check_device(device, where)
    a_shape = np.shape(a) if not isinstance(a, Array) else a.shape
    a_dtype = a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype
    fn = globals()[name]
    return fn(shape if shape is not None else a_shape, *args, dtype=dtype or a_dtype, tiling=tiling)


def zeros_like(
    a: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """Zeros with ``a``'s shape and dtype (unless given).

    >>> sp.zeros_like(x, device=x.device)
    array([[0., 0., 0.],
           [0., 0., 0.]])
    """
    return _like("zeros", a, dtype=dtype, order=order, shape=shape, device=device, tiling=tiling)


def ones_like(
    a: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """Ones with ``a``'s shape and dtype (unless given)."""
    return _like("ones", a, dtype=dtype, order=order, shape=shape, device=device, tiling=tiling)


def empty_like(
    a: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """Like :func:`zeros_like` (tiles are always initialized)."""
    return _like(
        "zeros",
        a,
        dtype=dtype,
        order=order,
        shape=shape,
        device=device,
        tiling=tiling,
        where="empty_like",
    )


def full_like(
    a: Any,
    fill_value: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """``fill_value`` with ``a``'s shape and dtype (unless given)."""
    return _like(
        "full",
        a,
        fill_value,
        dtype=dtype,
        order=order,
        shape=shape,
        device=device,
        tiling=tiling,
    )


def _arange(start: Any, step: Any, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[0]
    return (start + np.arange(lo, hi, dtype=np.result_type(dtype, np.int64)) * step).astype(dtype)


def _typed(value: Any, v: int) -> Any:
    """``v`` as a value of ``value``'s type (NumPy scalar or Python number)."""
    return value.dtype.type(v) if isinstance(value, np.generic) else type(value)(v)


def arange(
    start: Any,
    stop: Any = None,
    step: Any = 1,
    dtype: Any = None,
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """Evenly spaced values in ``[start, stop)``, like :func:`numpy.arange`.

    >>> sp.arange(2, 8, 2, device="cpu").to_numpy().tolist()
    [2, 4, 6]
    """
    check_device(device, "arange")
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
    if np.issubdtype(dtype, np.integer):
        out = np.floor(out)  # NumPy rounds down to an integer dtype
    return out.astype(dtype)


def linspace(
    start: float,
    stop: float,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
    tiling: Any = None,
) -> Any:
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (scalars).

    >>> sp.linspace(0, 1, 5, device="cpu").to_numpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    check_device(device, "linspace")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if np.ndim(start) or np.ndim(stop):
        return _linspace_of_arrays(start, stop, num, endpoint, retstep, dtype, axis, tiling)
    normalize_axis_index(axis, 1)  # (a 1-d result has axis 0 only)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else float("nan")
    dtype = dtype or np.result_type(start, stop, float)
    init = functools.partial(_linspace, start, step if div > 0 else 0.0, num, stop, endpoint)
    out = newarray((num,), init, dtype, tiling, "linspace")
    return (out, step) if retstep else out


class _LinspaceRows:
    """``newarray``'s ``init`` for :func:`linspace` of array ``start``/``stop``: NumPy's
    formula (``i * step + start``, ``stop`` at the end) on the rows ``box`` covers. The
    formula is element-wise, so each tile's values are NumPy's own."""

    def __init__(self, start: np.ndarray, stop: np.ndarray, num: int, endpoint: bool) -> None:
        self.start, self.stop, self.num, self.endpoint = start, stop, num, endpoint
        self.dt = np.result_type(start, stop, float(num))
        self.div = (num - 1) if endpoint else num
        self.delta = np.subtract(stop, start, dtype=type(self.dt))
        self.step = self.delta / self.div if self.div > 0 else None
        # (NumPy's choice between the two forms is one for the whole array)
        self.step_zero = self.step is not None and bool(np.asarray(self.step == 0).any())

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        (lo, hi), rest = box[0], tuple(slice(a, b) for a, b in box[1:])
        delta = self.delta[rest]
        y = np.arange(lo, hi, dtype=self.dt).reshape((-1,) + (1,) * delta.ndim)
        if self.step is None:
            y = y * delta  # (div 0: NumPy's step is NaN and only y[0] = start survives)
        elif self.step_zero:
            y = y / self.div * delta
        else:
            y = y * self.step[rest]
        y = y + self.start[rest]
        if self.endpoint and hi == self.num and self.num > 1:
            y[-1, ...] = self.stop[rest]
        if np.issubdtype(dtype, np.integer):
            y = np.floor(y)
        return y.astype(dtype, copy=False)


def _linspace_of_arrays(
    start: Any,
    stop: Any,
    num: int,
    endpoint: bool,
    retstep: bool,
    dtype: Any,
    axis: int,
    tiling: Any,
) -> Any:
    """:func:`linspace` of array ``start``/``stop`` (parameters: small, read in the
    driver): one row of ``num`` per element, the samples along ``axis``."""
    from spartan.frontend.manipulation import moveaxis

    start, stop = (a.to_numpy() if isinstance(a, Array) else np.asarray(a) for a in (start, stop))
    start, stop = np.broadcast_arrays(start, stop)
    init = _LinspaceRows(start, stop, num, endpoint)
    dtype = init.dt if dtype is None else np.dtype(dtype)
    axis = normalize_axis_index(axis, start.ndim + 1)
    out = newarray((num,) + start.shape, init, dtype, tiling, "linspace")
    out = moveaxis(out, 0, axis) if axis else out
    if not retstep:
        return out
    return out, (init.step if init.step is not None else np.full(start.shape, np.nan))


def _eye(k: int, box: Box, dtype: np.dtype) -> np.ndarray:
    (r0, r1), (c0, c1) = box
    rows = np.arange(r0, r1)[:, None]
    cols = np.arange(c0, c1)[None, :]
    return (cols - rows == k).astype(dtype)


def eye(
    N: int,
    M: int | None = None,
    k: int = 0,
    dtype: Any = float,
    order: str = "C",
    *,
    device: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """Ones on the ``k``-th diagonal of an ``N`` x ``M`` array, zeros elsewhere.

    >>> sp.eye(3, k=1, device="cpu")
    array([[0., 1., 0.],
           [0., 0., 1.],
           [0., 0., 0.]])
    """
    _check_order(order, "eye")
    check_device(device, "eye")
    shape = (operator.index(N), operator.index(N if M is None else M))
    return newarray(
        shape, functools.partial(_eye, operator.index(k)), _float_default(dtype), tiling, "eye"
    )


def identity(
    n: int, dtype: Any = None, *, like: Any = None, device: Any = None, tiling: Any = None
) -> Array:
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype, device=device, tiling=tiling)


def array(
    object: Any,  # noqa: A002 (NumPy's name: np.array(object=...) is a valid call)
    dtype: Any = None,
    *,
    copy: bool | None = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
    ndmax: int = 0,
    like: Any = None,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """A spartan array from data (a NumPy array, nested lists, or a spartan array).

    ``copy=True`` (the default) always copies; ``copy=None`` copies only when needed (a
    new dtype or ``tiling``, or data that is not a spartan array); ``copy=False`` never
    copies and raises ValueError where a copy is needed. Data that is not a spartan
    array is always copied: a spartan array never shares memory with a NumPy array.

    >>> y = sp.array(x)            # an independent copy
    >>> sp.array(x, copy=None) is x
    True
    """
    _check_order(order, "array", "CFAK")
    check_device(device, "array")
    if ndmax and not isinstance(object, Array):
        # NumPy's cap on the axes read from nested sequences (deeper ones become
        # objects, which spartan does not hold: NumPy's result says which)
        object = np.array(object, dtype=dtype, ndmax=ndmax)
    return _converted(object, dtype, _copy_flag(copy), ndmin, tiling, "array")


def _converted(
    obj: Any, dtype: Any, copy: bool | None, ndmin: int, tiling: Any, where: str
) -> Array:
    """:func:`array`'s work (``where``: the function the user called, for errors)."""
    if isinstance(obj, Array):
        same = dtype is None or np.dtype(dtype) == obj.dtype
        if copy is False and not same:
            raise _no_copy(where, f"a cast from {obj.dtype} to {np.dtype(dtype)}")
        if copy is False and tiling is not None:
            raise _no_copy(where, "tiling= re-cuts the array into new tiles")
        out = obj if same else obj.astype(dtype)
        if ndmin > out.ndim:
            out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
        if tiling is not None:
            return out.retile(tiling)  # (a new array: a copy)
        return out.copy() if copy and same else out
    stored = _stored(obj)
    if stored is not None:  # read by the workers, not through the driver
        return _converted(stored, dtype, copy, ndmin, tiling, where)
    if copy is False:
        raise _no_copy(
            where,
            f"a spartan array never shares memory with the {type(obj).__name__} it is made from",
        )
    return with_tiling(FromNumpy(np.array(obj, dtype=dtype, ndmin=ndmin)), tiling)


def _stored(obj: Any) -> Array | None:
    """A read-only HDF5 dataset or Zarr array as a lazy array its workers read (as
    ``dask.array.from_array`` of one), where every worker can reach it; else None (it
    is copied now, as NumPy does: a handle open for writing may change before a lazy
    read, and a file that is not on disk cannot be opened by the workers)."""
    h5py, zarr = sys.modules.get("h5py"), sys.modules.get("zarr")
    if h5py is not None and isinstance(obj, h5py.Dataset):
        f = obj.file
        if f.mode == "r" and f.driver == "sec2" and obj.shape is not None:
            from spartan.frontend.hdf5_io import from_hdf5

            return from_hdf5(f.filename, obj.name)
    if zarr is not None and isinstance(obj, zarr.Array) and obj.read_only:
        from spartan.frontend.zarr_io import from_zarr, in_memory

        if not in_memory(obj.store) or session.current().shares_driver_memory:
            return from_zarr(obj)
    return None


def asarray(
    a: Any,
    dtype: Any = None,
    order: str | None = None,
    *,
    device: Any = None,
    copy: bool | None = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """``a`` as a spartan array: a spartan array itself when no copy is needed
    (``copy=None``, the default), see :func:`array` for ``copy=``.

    >>> sp.asarray(x) is x, sp.asarray(x, copy=True) is x
    (True, False)
    >>> sp.asarray([1, 2], copy=False)
    Traceback (most recent call last):
    ValueError: asarray: unable to avoid copy while creating an array as requested ...
    """
    _check_order(order, "asarray", "CFAK")
    check_device(device, "asarray")
    copy = _copy_flag(copy)
    if isinstance(a, Array) and copy is None and tiling is None:
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
    return _converted(a, dtype, copy, 0, tiling, "asarray")


def _logspace(start: float, step: float, base: float, box: Box, dtype: np.dtype) -> np.ndarray:
    lo, hi = box[0]
    return np.power(base, start + np.arange(lo, hi) * step).astype(dtype)


def logspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    base: Any = 10.0,
    dtype: Any = None,
    axis: int = 0,
    *,
    tiling: Any = None,
) -> Array:
    """``base ** linspace(start, stop, num)`` (see :func:`numpy.logspace`); with array
    ``start``/``stop``/``base`` the samples run along ``axis``.

    >>> sp.logspace(0, 2, 3).to_numpy()
    array([  1.,  10., 100.])
    >>> sp.logspace([0, 1], 2, 3, axis=1).shape
    (2, 3)
    """
    from spartan.frontend.ufuncs import elementwise

    if not isinstance(base, (float, int)) and np.ndim(base):
        # NumPy's reading: the three broadcast together, base along the samples' axis
        base = base.to_numpy() if isinstance(base, Array) else base
        ndmax = np.broadcast(start, stop, base).ndim
        start, stop, base = (
            np.array(a.to_numpy() if isinstance(a, Array) else a, copy=None, ndmin=ndmax)
            for a in (start, stop, base)
        )
        base = np.expand_dims(base, axis=axis)
    y = linspace(start, stop, num, endpoint, axis=axis, tiling=tiling)
    out = elementwise(np.power, base, y, name="logspace")
    return out.astype(dtype, copy=False) if dtype is not None else out


def geomspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    dtype: Any = None,
    axis: int = 0,
    *,
    tiling: Any = None,
) -> Array:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (see
    :func:`numpy.geomspace`: negative and complex ends rotated to the positive reals and
    back, the two ends exactly ``start`` and ``stop``); with array ends the samples run
    along ``axis``.

    >>> sp.geomspace(1, 1000, 4).to_numpy()
    array([   1.,   10.,  100., 1000.])
    """
    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.ufuncs import elementwise

    start, stop = (np.asarray(a.to_numpy() if isinstance(a, Array) else a) for a in (start, stop))
    if np.any(start == 0) or np.any(stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = start.astype(dt, copy=True), stop.astype(dt, copy=True)
    out_sign = np.sign(start)
    start /= out_sign
    stop = stop / out_sign
    result = logspace(np.log10(start), np.log10(stop), num, endpoint, 10.0, dt, tiling=tiling)
    if num > 0:
        # the ends exactly start and stop (10 ** log10(x) need not be x)
        index = arange(num).reshape((num,) + (1,) * start.ndim)
        result = elementwise(np.where, index == 0, start, result, name="geomspace")
        if num > 1 and endpoint:
            result = elementwise(np.where, index == num - 1, stop, result, name="geomspace")
    result = elementwise(np.multiply, result, out_sign, name="geomspace")
    axis = normalize_axis_index(axis, result.ndim)
    if axis:
        result = moveaxis(result, 0, axis)
    return result.astype(dtype, copy=False)


def _tri(k: int, box: Box, dtype: np.dtype) -> np.ndarray:
    (r0, r1), (c0, c1) = box
    return (np.arange(c0, c1)[None, :] <= np.arange(r0, r1)[:, None] + k).astype(dtype)


def tri(
    N: int,
    M: int | None = None,
    k: int = 0,
    dtype: Any = float,
    *,
    like: Any = None,
    device: Any = None,
    tiling: Any = None,
) -> Array:
    """Ones at and below the ``k``-th diagonal, zeros elsewhere.

    >>> sp.tri(3, k=-1).to_numpy()[2].tolist()
    [1.0, 1.0, 0.0]
    """
    check_device(device, "tri")
    shape = (int(N), int(N if M is None else M))
    return newarray(shape, functools.partial(_tri, int(k)), _float_default(dtype), tiling, "tri")


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

    >>> sp.diag(sp.arange(3)).to_numpy()[1].tolist()
    [0, 1, 0]
    """
    x = asarray(v)
    k = int(k)
    if x.ndim == 2:
        from spartan.frontend.products import diagonal

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
    function: Any,
    shape: ShapeLike,
    *,
    dtype: Any = float,
    like: Any = None,
    tiling: Any = None,
    **kwargs: Any,
) -> Array:
    """An array whose element at ``idx`` is ``function(*idx)``, evaluated per tile.

    >>> sp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int)
    array([[0, 1],
           [1, 2]])
    """
    nd = len(normalize_shape(shape))
    probe = np.asarray(function(*[np.zeros((1,) * nd, dtype)] * nd, **kwargs))
    return newarray(
        shape, _FromFunction(function, kwargs, np.dtype(dtype)), probe.dtype, tiling, "fromfunction"
    )


def asanyarray(
    a: Any,
    dtype: Any = None,
    order: str | None = None,
    *,
    device: Any = None,
    copy: bool | None = None,
    like: Any = None,
    tiling: Any = None,
) -> Array:
    """:func:`asarray` (spartan has no array subclasses)."""
    return asarray(a, dtype, order, device=device, copy=copy, tiling=tiling)


def ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Array:
    """Tiles are always C-contiguous blocks: this is :func:`asarray`."""
    return asarray(a, dtype=dtype)


asfortranarray = ascontiguousarray


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Array:
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
