"""Shape manipulation: views where no data moves, reshape/concatenate nodes otherwise.

>>> sp.arange(6).reshape(2, 3).T.shape
(3, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.frontend import small
from spartan.frontend.aliasing import Reshaped, Strided, layout, nocopy_strides, read_only
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, with_tiling
from spartan.frontend.lowering import identity
from spartan.frontend.map import Map
from spartan.frontend.reductions import normalize_axes
from spartan.frontend.reshape import Concatenate, Reshape
from spartan.frontend.viewmap import Axis, ViewMap


def _cast(dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    return x.astype(dtype)


def reshape(
    a: Any,
    /,
    shape: Any = None,
    order: str = "C",
    *,
    newshape: Any = None,
    copy: bool | None = None,
) -> Array:
    """Same data, new shape (C order); ``-1`` infers one dimension. A view where the
    elements need not move; ``copy=True`` always copies, ``copy=False`` raises NumPy's
    ValueError where a view cannot be made (NumPy 2 and the array API).

    >>> sp.reshape(sp.arange(6), (2, 3), copy=False).shape
    (2, 3)
    """
    x = asarray(a)
    out = _reshape(x, newshape if shape is None else shape, order)
    if copy:
        from spartan.frontend import manipulation

        return manipulation.copy(out)
    if copy is False and out._buf is not x._buf:
        raise ValueError("Unable to avoid creating a copy while reshaping.")
    return out


def _reshape(x: Array, shape: Any, order: str) -> Array:
    if order == "F":
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return transpose(_reshape(transpose(x), shape[::-1], "C"))
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
        return x._linked(Strided(ViewMap(x.ndim, tuple(axes), fixed)))
    if x._np is None:
        # NumPy views where the elements can be re-cut without moving them
        _, strides = layout(x._buf.expr.shape, x._path)
        if nocopy_strides(x.shape, strides, shape) is not None:
            return x._linked(Reshaped(shape))
    return Array(Reshape(x._expr, shape))


def ravel(a: Any, order: str = "C") -> Array:
    """The elements in one axis: a view where they are C-contiguous in their base (as
    NumPy's ``ravel``), a copy otherwise (``reshape(-1)`` views in more cases).

    ``order="K"`` reads a view's axes in the order of their strides in its base, as
    NumPy does; an array spartan computed is C-ordered
    (NumPy may give a result an input's Fortran order, which its ``"K"`` then follows).

    >>> import spartan as sp
    >>> sp.arange(6).reshape(2, 3).T.ravel("K").tolist()
    [0, 1, 2, 3, 4, 5]
    """
    x = asarray(a)
    if order == "K":
        if x._np is not None:
            return small.wrap(np.ravel(x._np, order="K"), (x,))
        _, strides = layout(x._buf.expr.shape, x._path)
        # NumPy orders the axes by their strides' size (a negative stride's axis is
        # still read forwards); a stable sort: axes of equal strides keep their order
        return ravel(transpose(x, sorted(range(x.ndim), key=lambda i: -abs(strides[i]))), "C")
    flat = reshape(x, (-1,), order=order)
    if x._np is None and order in ("C", "A") and flat._buf is x._buf:
        _, strides = layout(x._buf.expr.shape, x._path)
        real = [(n, s) for n, s in zip(x.shape, strides) if n != 1]
        if any(s != math.prod(n for n, _ in real[i + 1 :]) for i, (_, s) in enumerate(real)):
            return copy(flat)
    return flat


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
    return x._linked(Strided(ViewMap.transpose(x.shape, axes)))


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


def broadcast_to(array: Any, shape: Any, subok: bool = False) -> Array:
    """``array`` broadcast to ``shape``: a read-only view (see
    :func:`numpy.broadcast_to`; ``subok`` changes nothing: spartan arrays have no
    subclasses).

    >>> sp.broadcast_to(sp.ones(3), (2, 3)).shape
    (2, 3)
    """
    x = asarray(array)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if tuple(np.broadcast_shapes(x.shape, shape)) != shape:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes "
            f"[original->remapped]: {x.shape} and requested shape {shape}"
        )
    # NumPy's result is a read-only view: writing to it raises
    if shape == x.shape:
        return read_only(Array(x._expr))
    return read_only(Array(Map(identity, [x._expr], shape, x.dtype, name="broadcast_to")))


def broadcast_arrays(*args: Any, subok: bool = False) -> tuple[Array, ...]:
    """The arrays broadcast to one shape, as read-only views (a tuple, as NumPy 2;
    ``subok`` changes nothing: spartan arrays have no subclasses).

    >>> sp.broadcast_arrays(sp.ones((2, 1)), sp.ones(3))[0].shape
    (2, 3)
    """
    arrays = [asarray(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(broadcast_to(a, shape) for a in arrays)


def astype(a: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    import functools

    from spartan.backend.device import check_device

    check_device(device, "astype")  # (a session keeps every tile on one device)
    x = asarray(a)
    dtype = np.dtype(dtype)
    if dtype == x.dtype and not copy:
        return x
    return Array(Map(functools.partial(_cast, dtype), [x._expr], x.shape, dtype, name="astype"))


def copy(a: Any, order: str = "K", subok: bool = False) -> Array:
    """A copy of ``a`` (see :func:`numpy.copy`). ``order`` is checked as NumPy checks
    it and otherwise changes nothing (tiles are C-ordered blocks); ``subok`` changes
    nothing (spartan arrays have no subclasses).

    >>> y = sp.copy(x)
    """
    from spartan.frontend.creation import _check_order

    _check_order(order, "copy", "CFAK")
    x = asarray(a)
    return Array(Map(identity, [x._expr], x.shape, x.dtype, name="copy"))


def retile(a: Any, tiling: Any) -> Array:
    """``a`` re-cut into ``tiling`` (a :class:`Tiling` or row/column/block/dup)."""
    x = asarray(a)
    return with_tiling(Map(identity, [x._expr], x.shape, x.dtype, name="retile"), tiling)


def _joined_dtype(
    xs: Sequence[Array], out: Any, dtype: Any, casting: str, where: str
) -> np.dtype | None:
    """The dtype :func:`concatenate` and its family give (``dtype=`` or ``out=``'s, or
    None: the inputs' common type), every input checked castable to it by ``casting``
    with NumPy's errors."""
    if out is not None and dtype is not None:
        raise TypeError(
            f"{where}() only takes `out` or `dtype` as an argument, but both were provided."
        )
    target = out.dtype if out is not None else dtype
    if target is None:
        np.can_cast(np.bool_, np.bool_, casting)  # (NumPy's ValueError for a bad name)
        return None
    target = np.dtype(target)
    for x in xs:
        if not np.can_cast(x.dtype, target, casting):
            raise TypeError(
                f"Cannot cast array data from {x.dtype!r} to {target!r} according to the "
                f"rule {casting!r}"
            )
    return target


def _into(result: Array, out: Any) -> Array:
    """``out=`` of the concatenate family: ``out`` (a spartan array) takes ``result``."""
    if out is None:
        return result
    if not isinstance(out, Array):
        raise TypeError("out= must be a spartan array")
    if out.ndim != result.ndim:
        raise ValueError("Output array has wrong dimensionality")
    if out.shape != result.shape:
        raise ValueError("Output array is the wrong shape")
    from spartan.frontend.ufuncs import _store

    return _store(result, out)


def concatenate(
    arrays: Sequence[Any],
    /,
    axis: int | None = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Array:
    """Join arrays along an existing axis (see :func:`numpy.concatenate`); ``axis=None``
    joins them flattened. ``dtype=`` or ``out=`` (a spartan array, rebound to the
    result) set the result's type, each input cast by ``casting`` as NumPy's rule allows.

    >>> sp.concatenate([sp.ones(2), sp.zeros(3)], dtype=int, casting="unsafe")
    array([1, 1, 0, 0, 0])
    """
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
    target = _joined_dtype(xs, out, dtype, casting, "concatenate")
    if target is None:
        target = np.result_type(*(x.dtype for x in xs))
    # (with dtype= or out=, each input is cast to the target at once, as NumPy's are)
    return _into(Array(Concatenate([x._expr for x in xs], ax, target)), out)


def stack(
    arrays: Sequence[Any],
    axis: int = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Array:
    """Join arrays of one shape along a new axis (see :func:`numpy.stack`); ``out=``,
    ``dtype=`` and ``casting=`` as :func:`concatenate`'s.

    >>> sp.stack([sp.ones(2), sp.zeros(2)], axis=1).shape
    (2, 2)
    """
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError("all input arrays must have the same shape")
    return concatenate(
        [expand_dims(x, axis) for x in xs], axis=axis, out=out, dtype=dtype, casting=casting
    )


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """Join arrays row-wise (1-d ones as rows; see :func:`numpy.vstack`); ``dtype=`` and
    ``casting=`` as :func:`concatenate`'s.

    >>> sp.vstack([sp.ones(3), sp.zeros(3)], dtype=int, casting="unsafe").shape
    (2, 3)
    """
    xs = [asarray(a) for a in tup]
    return concatenate(
        [x if x.ndim >= 2 else x.reshape(1, -1) for x in xs], axis=0, dtype=dtype, casting=casting
    )


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """Join arrays column-wise (1-d ones end to end; see :func:`numpy.hstack`);
    ``dtype=`` and ``casting=`` as :func:`concatenate`'s.

    >>> sp.hstack([sp.ones(2), sp.zeros(3)]).shape
    (5,)
    """
    xs = [asarray(a) for a in tup]
    axis = 0 if xs and xs[0].ndim == 1 else 1
    return concatenate(xs, axis=axis, dtype=dtype, casting=casting)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elements of ``x`` where ``condition`` holds, else of ``y``."""
    from spartan.frontend.ufuncs import elementwise

    if x is None and y is None:
        from spartan.frontend.indexing import nonzero

        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return elementwise(np.where, condition, x, y, name="where")


def permute_dims(a: Any, axes: Sequence[int] | None = None) -> Array:
    """The array API name of :func:`transpose` (``axes`` optional, as NumPy's: reversed).

    >>> sp.permute_dims(sp.ones((2, 3))).shape
    (3, 2)
    """
    return transpose(a, axes)


#: the array API's name; NumPy 2's ``concat`` is ``concatenate`` itself, keywords included
concat = concatenate


def flip(m: Any, axis: Any = None) -> Array:
    """Reverse the order along ``axis`` (all axes when None): a view."""
    x = asarray(m)
    axes = normalize_axes(axis, x.ndim)
    return x[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))]


def fliplr(m: Any) -> Array:
    x = asarray(m)
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(m: Any) -> Array:
    x = asarray(m)
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(x, 0)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Array:
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (views only)."""
    x = asarray(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = (normalize_axes(a, x.ndim)[0] for a in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return flip(flip(x, a0), a1)
    perm = list(range(x.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(x, a1), perm) if k == 1 else flip(transpose(x, perm), a1)


def roll(a: Any, shift: Any, axis: Any = None) -> Array:
    """Shift elements cyclically along ``axis``: two slices concatenated."""
    x = asarray(a)
    if axis is None:
        return roll(x.ravel(), shift, 0).reshape(x.shape)
    shifts = np.broadcast_to(
        np.atleast_1d(shift),
        np.broadcast_shapes(np.shape(np.atleast_1d(shift)), np.shape(np.atleast_1d(axis))),
    )
    axes = np.broadcast_to(np.atleast_1d(axis), shifts.shape)
    total: dict[int, int] = {}
    for s, ax in zip(shifts, axes):
        (i,) = normalize_axes(int(ax), x.ndim)
        total[i] = total.get(i, 0) + int(s)
    for i, s in total.items():
        n = x.shape[i]
        s = s % n if n else 0
        if s:
            head = tuple(slice(n - s, None) if d == i else slice(None) for d in range(x.ndim))
            tail = tuple(slice(0, n - s) if d == i else slice(None) for d in range(x.ndim))
            x = concatenate([x[head], x[tail]], axis=i)
    return x


def tile(A: Any, reps: Any) -> Array:
    """``A`` repeated ``reps`` times along each axis (concatenations of the same tiles)."""
    x = asarray(A)
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = x.reshape((1,) * (nd - x.ndim) + x.shape)
    for i, r in enumerate(reps):
        if r != 1:
            x = (
                concatenate([x] * r, axis=i)
                if r
                else x[tuple(slice(0, 0) if d == i else slice(None) for d in range(nd))]
            )
    return x


def repeat(a: Any, repeats: Any, axis: Any = None) -> Array:
    """Each element repeated ``repeats`` times along ``axis`` (a ``take``)."""
    from spartan.frontend.creation import arange
    from spartan.frontend.fancy import take

    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    n = x.shape[ax]
    if isinstance(repeats, Array):
        reps = repeats
        if reps.ndim == 0 or reps.shape == (1,):
            reps = broadcast_to(reps.reshape(()), (n,))
        from spartan.frontend.scan import cumsum
        from spartan.frontend.sorting import searchsorted

        ends = cumsum(reps)
        total = int(ends[n - 1]) if n else 0
        idx = searchsorted(ends, arange(total, dtype=np.intp), side="right")
        return take(x, idx, ax)
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iu" and reps.size:
        raise TypeError(
            "Cannot cast array data from dtype('float64') to dtype('int64') "
            "according to the rule 'safe'"
        )
    if np.any(reps < 0):
        raise ValueError("repeats may not contain negative values.")
    idx = np.repeat(np.arange(n, dtype=np.intp), reps)
    if reps.ndim == 0 or reps.size == 1:
        r = int(reps.reshape(-1)[0])
        from spartan.frontend.creation import arange as _ar
        from spartan.frontend.ufuncs import elementwise

        return take(x, elementwise(np.floor_divide, _ar(n * r, dtype=np.intp), r), ax)
    return take(x, asarray(idx), ax)


def _pad_width(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    pw = np.broadcast_to(pw, (ndim, 2))
    if np.any(pw < 0):
        raise ValueError("index can't contain negative values")
    return [(int(a), int(b)) for a, b in pw]


def _edge_block(x: Array, axis: int, lo: int, hi: int) -> Array:
    return x[tuple(slice(lo, hi) if d == axis else slice(None) for d in range(x.ndim))]


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Array:
    """Pad each axis (modes constant, edge, reflect, symmetric, wrap): concatenations
    of the input with filled blocks or views of its edges."""
    from spartan.frontend.creation import full

    x = asarray(array)
    widths = _pad_width(pad_width, x.ndim)
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise ValueError(f"mode '{mode}' is not supported")
    cvals = np.broadcast_to(np.asarray(kwargs.get("constant_values", 0)), (x.ndim, 2))
    for i, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = x.shape[i]
        if n == 0 and mode != "constant" and (before or after):
            raise ValueError(
                "can't extend empty axis 0 using modes other than 'constant' or 'empty'"
            )
        parts = []
        for side, w in ((0, before), (1, after)):
            if not w:
                parts.append(None)
                continue
            shape = tuple(w if d == i else m for d, m in enumerate(x.shape))
            if mode == "constant":
                block = full(shape, np.asarray(cvals[i][side]).astype(x.dtype)[()], dtype=x.dtype)
            elif mode == "edge":
                edge = _edge_block(x, i, 0, 1) if side == 0 else _edge_block(x, i, n - 1, n)
                block = broadcast_to(edge, shape)
            else:
                block = _mirror(x, i, w, side, mode)
            parts.append(block)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = concatenate(pieces, axis=i)
    return x


def _mirror(x: Array, axis: int, w: int, side: int, mode: str) -> Array:
    """``w`` reflected (or wrapped) elements for one side of ``axis``, built from
    views of the input and concatenated when ``w`` exceeds one period."""
    n = x.shape[axis]
    out, got = [], 0
    period = (n - 1 if mode == "reflect" else n) or 1
    src = x
    while got < w:
        k = min(w - got, period if mode != "reflect" or n > 1 else 1)
        if mode == "wrap":
            blk = _edge_block(src, axis, n - k, n) if side == 0 else _edge_block(src, axis, 0, k)
        elif mode == "symmetric":
            blk = (
                flip(_edge_block(src, axis, 0, k), axis)
                if side == 0
                else flip(_edge_block(src, axis, n - k, n), axis)
            )
        else:  # reflect: the edge element is not repeated
            if n == 1:
                blk = src
            else:
                blk = (
                    flip(_edge_block(src, axis, 1, k + 1), axis)
                    if side == 0
                    else flip(_edge_block(src, axis, n - 1 - k, n - 1), axis)
                )
        out.append(blk)
        got += k
        if mode != "wrap":
            src = flip(src, axis)
    if side == 0:
        out = out[::-1]
    return concatenate(out, axis=axis) if len(out) > 1 else out[0]


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """Split into views; sections may be unequal (see :func:`numpy.array_split`)."""
    x = asarray(ary)
    (ax,) = normalize_axes(axis, x.ndim)
    n = x.shape[ax]
    if np.ndim(indices_or_sections) == 0:
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, k)
        sizes = [each + 1] * extra + [each] * (k - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
    else:
        bounds = np.concatenate([[0], np.asarray(indices_or_sections, dtype=np.intp), [n]])
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo, hi = min(max(int(lo), 0), n), min(max(int(hi), 0), n)
        out.append(_edge_block(x, ax, lo, max(lo, hi)))
    return out


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """Split into equal views (a section count must divide the axis)."""
    x = asarray(ary)
    if np.ndim(indices_or_sections) == 0:
        (ax,) = normalize_axes(axis, x.ndim)
        if x.shape[ax] % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(x, indices_or_sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    x = asarray(ary)
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    x = asarray(ary)
    if x.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, 0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    x = asarray(ary)
    if x.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, 2)


def atleast_1d(*arys: Any) -> Any:
    out = [asarray(a) if asarray(a).ndim >= 1 else asarray(a).reshape(1) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*arys: Any) -> Any:
    out = []
    for a in arys:
        x = asarray(a)
        out.append(x.reshape(1, 1) if x.ndim == 0 else x[None, :] if x.ndim == 1 else x)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*arys: Any) -> Any:
    out = []
    for a in arys:
        x = asarray(a)
        if x.ndim == 0:
            x = x.reshape(1, 1, 1)
        elif x.ndim == 1:
            x = x[None, :, None]
        elif x.ndim == 2:
            x = x[:, :, None]
        out.append(x)
    return out[0] if len(out) == 1 else tuple(out)


def dstack(tup: Sequence[Any]) -> Array:
    return concatenate(list(atleast_3d(*tup)) if len(tup) > 1 else [atleast_3d(*tup)], axis=2)


def column_stack(tup: Sequence[Any]) -> Array:
    xs = [asarray(a) for a in tup]
    return concatenate([x[:, None] if x.ndim < 2 else x for x in xs], axis=1)


def unstack(x: Any, *, axis: int = 0) -> tuple[Array, ...]:
    """Views of ``x`` split along ``axis`` (each without that axis)."""
    a = asarray(x)
    (ax,) = normalize_axes(axis, a.ndim)
    return tuple(
        a[tuple(i if d == ax else slice(None) for d in range(a.ndim))] for i in range(a.shape[ax])
    )


def append(arr: Any, values: Any, axis: Any = None) -> Array:
    x, v = asarray(arr), asarray(values)
    if axis is None:
        return concatenate([x.ravel(), v.ravel()])
    return concatenate([x, v], axis=axis)


def delete(arr: Any, obj: Any, axis: Any = None) -> Array:
    """``arr`` without the entries ``obj`` along ``axis`` (a ``take`` of the rest)."""
    from spartan.frontend.fancy import take

    x = asarray(arr)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    n = x.shape[ax]
    drop = np.arange(n)[obj] if isinstance(obj, slice) else np.asarray(obj)
    if drop.dtype == bool:
        if drop.shape != (n,):
            raise ValueError(
                f"boolean array argument obj to delete must be one dimensional and match the "
                f"axis length of {n}"
            )
        keep = ~drop
    else:
        if np.any((drop < -n) | (drop >= n)):
            bad = int(drop[(drop < -n) | (drop >= n)].flat[0])
            raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
        keep = np.ones(n, bool)
        keep[drop] = False
    return take(x, asarray(np.flatnonzero(keep).astype(np.intp)), ax)


def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Array:
    """``values`` inserted before index ``obj`` (an integer) along ``axis``."""
    x = asarray(arr)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    n = x.shape[ax]
    if np.ndim(obj) != 0:
        raise TypeError("spartan.insert takes one integer position")
    i = int(obj)
    if not -n <= i <= n:
        raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
    i %= n + 1
    v = asarray(values).astype(x.dtype)
    shape = list(x.shape)
    shape[ax] = 1 if v.ndim < x.ndim else v.shape[ax]
    if v.ndim < x.ndim:
        v = v.reshape(v.shape[:ax] + (1,) + v.shape[ax:]) if v.ndim == x.ndim - 1 else v
    v = broadcast_to(v, tuple(shape))
    return concatenate([_edge_block(x, ax, 0, i), v, _edge_block(x, ax, i, n)], axis=ax)


def resize(a: Any, new_shape: Any) -> Array:
    """``a`` repeated (or cut) cyclically to ``new_shape``."""
    from spartan.frontend.creation import arange, normalize_shape
    from spartan.frontend.fancy import take
    from spartan.frontend.ufuncs import elementwise

    x = asarray(a).ravel()
    shape = normalize_shape(new_shape)
    total = math.prod(shape)
    if x.size == 0 or total == 0:
        from spartan.frontend.creation import zeros

        return zeros(shape, dtype=x.dtype)
    idx = elementwise(np.remainder, arange(total, dtype=np.intp), x.size)
    return take(x, idx).reshape(shape)


def block(arrays: Any) -> Array:
    """Assemble an array from nested lists of blocks (see :func:`numpy.block`)."""

    def depth(a: Any) -> int:
        return 1 + depth(a[0]) if isinstance(a, list) and a else 0

    d = depth(arrays)

    def rec(a: Any, level: int) -> Array:
        if not isinstance(a, list):
            return asarray(a)
        parts = [rec(b, level + 1) for b in a]
        nd = max(max(p.ndim for p in parts), d)
        parts = [p.reshape((1,) * (nd - p.ndim) + p.shape) for p in parts]
        return concatenate(parts, axis=-(d - level))

    return rec(arrays, 0)


def shape(a: Any) -> tuple[int, ...]:
    return asarray(a).shape


def ndim(a: Any) -> int:
    return asarray(a).ndim


def size(a: Any, axis: int | None = None) -> int:
    x = asarray(a)
    return x.size if axis is None else x.shape[axis]


def rollaxis(a: Any, axis: int, start: int = 0) -> Array:
    """Roll ``axis`` backwards until it lies before ``start`` (a view)."""
    x = asarray(a)
    n = x.ndim
    (ax,) = normalize_axes(axis, n)
    if not -n <= start <= n:
        raise np.exceptions.AxisError(
            f"start arg requires {-n} <= start < {n + 1} but {start} was passed in"
        )
    start = start % (n + 1) if start < 0 else start
    if ax < start:
        start -= 1
    if ax == start:
        return x
    order = [i for i in range(n) if i != ax]
    order.insert(start, ax)
    return transpose(x, order)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Array:
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros along
    ``axis`` (an int or a tuple; None: every axis), as NumPy's: the smallest box holding
    every nonzero value, cut along the axes asked for. A view of ``filt``.

    The ends are forced: one ``any`` per axis (a vector as long as the axis) comes back
    to the driver.

    >>> sp.trim_zeros(sp.asarray([0, 1, 2, 0])).to_numpy()
    array([1, 2])
    >>> sp.trim_zeros(sp.asarray([[0, 0], [0, 3]]), axis=0).to_numpy()
    array([[0, 3]])
    """
    from spartan.frontend.evaluate import compute
    from spartan.frontend.reductions import any as _any

    x = asarray(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim)
    if not axes:
        return x  # (NumPy: nothing to trim, the input itself)
    nonzero = x != 0
    # per axis: which of its positions hold a nonzero value anywhere
    used = [_any(nonzero, axis=tuple(d for d in range(x.ndim) if d != ax)) for ax in axes]
    found = [np.flatnonzero(u) for u in compute(*(u._expr for u in used))]
    key = [slice(None)] * x.ndim
    for ax, hits in zip(axes, found):
        if hits.size == 0:
            # all zeros: NumPy cuts every asked-for axis to nothing
            return x[tuple(slice(0, 0) if d in axes else slice(None) for d in range(x.ndim))]
        key[ax] = slice(
            int(hits[0]) if "f" in trim else None, int(hits[-1]) + 1 if "b" in trim else None
        )
    return x[tuple(key)]


def row_stack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """NumPy's deprecated alias of :func:`vstack`."""
    return vstack(tup, dtype=dtype, casting=casting)
