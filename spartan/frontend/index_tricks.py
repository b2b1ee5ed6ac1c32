"""Index arithmetic and in-place style updates: ``ravel_multi_index``,
``unravel_index``, ``ix_``, the ``tril/triu/diag_indices`` family, and the assignments
``fill_diagonal``, ``place``, ``putmask``, ``copyto``, ``put_along_axis``.

Index arithmetic is an element-wise map; the assignments are functional updates that
rebind the given spartan array (a ``where`` map, or a scatter for ``put_along_axis``).

>>> sp.unravel_index(sp.arange(6), (2, 3))
(array([0, 0, 0, 1, 1, 1]), array([0, 1, 2, 0, 1, 2]))
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import arange, asarray, eye, tri
from spartan.frontend.ufuncs import elementwise


def _ravel(dims: tuple[int, ...], mode: Any, order: str, *idx: np.ndarray) -> np.ndarray:
    return np.ravel_multi_index(idx, dims, mode=mode, order=order)


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Array:
    """Flat indices of a tuple of index arrays (one fused map)."""
    dims = tuple(int(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    fn = functools.partial(_ravel, dims, mode, order)
    return elementwise(
        fn, *[asarray(i) for i in multi_index], name="ravel_multi_index", dtype=np.intp
    )


def _unravel(dims: tuple[int, ...], order: str, d: int, idx: np.ndarray) -> np.ndarray:
    return np.unravel_index(idx, dims, order=order)[d]


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[Array, ...]:
    """Coordinate arrays of flat indices (one map per axis)."""
    dims = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    x = asarray(indices)
    if x.dtype.kind not in "iu":
        raise TypeError("only int indices permitted")
    return tuple(
        elementwise(
            functools.partial(_unravel, dims, order, d), x, name="unravel_index", dtype=np.intp
        )
        for d in range(len(dims))
    )


def ix_(*args: Any) -> tuple[Array, ...]:
    """Open mesh of 1-d index arrays (reshaped views)."""
    out = []
    n = len(args)
    for k, a in enumerate(args):
        x = asarray(a)
        if x.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if x.dtype == bool:
            from spartan.frontend.fancy import flatnonzero

            x = flatnonzero(x)
        out.append(x.reshape((1,) * k + (x.shape[0],) + (1,) * (n - k - 1)))
    return tuple(out)


def _mask_indices(mask: Array) -> tuple[Array, ...]:
    from spartan.frontend.fancy import nonzero

    return nonzero(mask)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, ...]:
    """Row and column indices of the lower triangle."""
    return _mask_indices(tri(n, m, k, dtype=bool))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, ...]:
    """Row and column indices of the upper triangle."""
    return _mask_indices(~tri(n, m, k - 1, dtype=bool))


def _square_shape(arr: Any) -> tuple[int, int]:
    x = asarray(arr)
    if x.ndim != 2:
        raise ValueError("input array must be 2-d")
    return x.shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Array, ...]:
    n, m = _square_shape(arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Array, ...]:
    n, m = _square_shape(arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
    idx = arange(n)
    return (idx,) * ndim


def diag_indices_from(arr: Any) -> tuple[Array, ...]:
    x = asarray(arr)
    if x.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(x.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(x.shape[0], x.ndim)


def _rebind(a: Any, value: Array) -> None:
    if not isinstance(a, Array):
        raise TypeError("the array to update must be a spartan array")
    a._expr = value.astype(a.dtype, copy=False)._expr


def fill_diagonal(a: Array, val: Any, wrap: bool = False) -> None:
    """Set the main diagonal of a 2-d ``a`` to ``val`` (rebinds ``a``)."""
    x = asarray(a)
    if x.ndim != 2:
        raise (
            ValueError("array must be at least 2-d")
            if x.ndim < 2
            else ValueError("spartan.fill_diagonal takes 2-d arrays")
        )
    n, m = x.shape
    mask = eye(n, m, dtype=bool)
    if wrap and n > m + 1:
        mask = _wrapped_diagonal(n, m)
    v = asarray(val)
    if v.ndim:
        raise ValueError("spartan.fill_diagonal takes a scalar value")
    _rebind(a, elementwise(np.where, mask, v.astype(x.dtype), x, name="fill_diagonal"))


def _wrap_mask(m: int, box, dtype) -> np.ndarray:
    (r0, r1), (c0, c1) = box
    rows = np.arange(r0, r1)[:, None] % (m + 1)
    return (rows == np.arange(c0, c1)[None, :]).astype(dtype)


def _wrapped_diagonal(n: int, m: int) -> Array:
    from spartan.frontend.creation import newarray

    return newarray((n, m), functools.partial(_wrap_mask, m), bool, name="wrapped_diagonal")


def place(arr: Array, mask: Any, vals: Any) -> None:
    """Put ``vals`` (repeated cyclically) where ``mask`` holds (rebinds ``arr``)."""
    from spartan.frontend.fancy import _scatter_flat, nonzero
    from spartan.frontend.manipulation import resize

    x = asarray(arr)
    mk = asarray(mask).astype(bool)
    if mk.shape != x.shape:
        raise ValueError("place: mask and data must be the same size")
    (pos,) = nonzero(mk.ravel())
    v = asarray(vals).ravel()
    if v.size == 0:
        if pos.shape[0]:
            raise ValueError("Cannot insert from an empty array!")
        return
    _rebind(arr, _scatter_flat(x, pos, resize(v, pos.shape)))


def putmask(a: Array, mask: Any, values: Any) -> None:
    """``a[mask] = values`` with ``values`` repeated to ``a``'s size (rebinds ``a``)."""
    from spartan.frontend.manipulation import resize

    x = asarray(a)
    v = asarray(values)
    v = v if v.shape == x.shape else resize(v, x.shape) if v.ndim else v
    _rebind(
        a, elementwise(np.where, asarray(mask).astype(bool), v.astype(x.dtype), x, name="putmask")
    )


def copyto(dst: Array, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """Copy ``src`` into ``dst`` (broadcast, cast, where ``where`` holds): rebinds ``dst``."""
    from spartan.frontend.manipulation import broadcast_to

    x = asarray(dst)
    s = asarray(src)
    if not np.can_cast(s.dtype, x.dtype, casting=casting):
        raise TypeError(
            f"Cannot cast array data from {s.dtype!r} to {x.dtype!r} according to the rule "
            f"'{casting}'"
        )
    s = broadcast_to(s.astype(x.dtype), x.shape)
    if where is True:
        _rebind(dst, s.copy())
    else:
        _rebind(dst, elementwise(np.where, where, s, x, name="copyto"))


def put_along_axis(arr: Array, indices: Any, values: Any, axis: Any) -> None:
    """``arr`` with ``values`` written at ``indices`` lane by lane (rebinds ``arr``)."""
    from spartan.frontend.fancy import _index_array, _scatter_flat, _wrap
    from spartan.frontend.manipulation import broadcast_to
    from spartan.frontend.reductions import normalize_axes

    x = asarray(arr)
    idx = _index_array(indices)
    if axis is None:
        _rebind(arr, _scatter_flat(x, idx.ravel(), asarray(values).ravel()))
        return
    (ax,) = normalize_axes(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    strides = [math.prod(x.shape[d + 1 :]) for d in range(x.ndim)]
    flat = (
        elementwise(functools.partial(_wrap, x.shape[ax], ax), idx, name="wrap", dtype=np.intp)
        * strides[ax]
    )
    for d in range(x.ndim):
        if d != ax and x.shape[d] > 1:
            coord = arange(x.shape[d], dtype=np.intp).reshape(
                tuple(x.shape[d] if e == d else 1 for e in range(x.ndim))
            )
            flat = flat + coord * strides[d]
    v = broadcast_to(asarray(values).astype(x.dtype), flat.shape)
    _rebind(arr, _scatter_flat(x, flat.ravel(), v.ravel()))


def mask_indices(n: int, mask_func: Any, k: int = 0) -> tuple[Array, ...]:
    """Indices where ``mask_func(ones((n, n)), k)`` is non-zero (e.g. ``spartan.triu``)."""
    from spartan.frontend.creation import ones

    return _mask_indices(asarray(mask_func(ones((n, n), dtype=int), k)) != 0)
