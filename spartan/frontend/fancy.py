"""Integer-array indexing as an exchange between index tiles and data slabs.

``take(x, idx, axis)`` runs three rounds of tasks, none through the driver:

1. each index tile routes its indices to the slabs of ``x`` (along ``axis``) that
   hold them;
2. each slab answers the requests of every index tile with the values;
3. each index tile puts the answers back in its own order.

Assignment ``x[idx] = v`` (:class:`Scatter`) routes ``(index, value)`` pairs to the
slabs, which apply them in index order (the last write wins, as in NumPy).
Boolean masks, ``nonzero`` and friends are filters (their length depends on the
data, so building them counts the selected elements per tile first).

>>> idx = sp.array([1, 0, 1])
>>> x[idx]
array([[3., 4., 5.],
       [0., 1., 2.],
       [3., 4., 5.]])
>>> sp.take(x, sp.array([2, 0]), axis=1)
array([[2., 0.],
       [5., 3.]])
>>> x[idx] = 0
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from spartan.backend.device import array_module, asarray_in
from spartan.backend.device import ufunc_at as device_ufunc_at
from spartan.frontend.array import Array
from spartan.frontend.creation import arange, asarray
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering
from spartan.frontend.manipulation import broadcast_to, resize
from spartan.frontend.reductions import normalize_axes
from spartan.frontend.tiles import Tiles
from spartan.frontend.ufuncs import elementwise
from spartan.frontend.view import View
from spartan.tiling import Tiling, piece_of


def _slab_of(idx: Any, n: int, parts: int) -> Any:
    """The slab (of ``parts`` even pieces of ``n``) holding each index (an array of
    ``idx``'s module: NumPy, or CuPy on a GPU worker)."""
    xp = array_module(idx)
    p = (idx * parts) // max(n, 1)
    bounds = (xp.arange(parts + 1) * n) // parts
    p = xp.clip(p, 0, parts - 1)
    p += idx >= bounds[p + 1]
    p -= idx < bounds[p]
    return p


def _checked(idx: Any, n: int, axis: int) -> Any:
    """``idx`` with negative indices wrapped, as ``intp``; NumPy's IndexError for any
    out of bounds (on either device: the array stays where it is)."""
    xp = array_module(idx)
    idx = xp.asarray(idx)
    if idx.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(
            f"index {int(idx[bad].ravel()[0])} is out of bounds for axis {axis} with size {n}"
        )
    return xp.where(idx < 0, idx + n, idx).astype(np.intp)


class _Route:
    """Round 1: split an index tile by slab (as indices local to the slab)."""

    def __init__(self, n: int, parts: int, axis: int):
        self.n, self.parts, self.axis = n, parts, axis

    def __call__(self, idx: Any, *values: Any) -> Any:
        idx = _checked(idx, self.n, self.axis)
        slab = _slab_of(idx, self.n, self.parts)
        vmod = array_module(values[0]) if values else None
        out = []
        for p in range(self.parts):
            sel = slab == p
            local = idx[sel] - (p * self.n) // self.parts
            out.append((local, values[0][asarray_in(vmod, sel)]) if values else local)
        return out[0] if self.parts == 1 else tuple(out)


class _Answer:
    """Round 2: a slab's values for the requests of every index tile."""

    def __init__(self, axis: int, ntiles: int):
        self.axis, self.ntiles = axis, ntiles

    def __call__(self, slab: Any, *requests: Any) -> Any:
        xp = array_module(slab)
        out = tuple(xp.take(slab, asarray_in(xp, r), axis=self.axis) for r in requests)
        return out[0] if self.ntiles == 1 else out


class _Assemble:
    """Round 3: put the answers of every slab in the index tile's own order."""

    def __init__(self, n: int, parts: int, axis: int, shape: tuple[int, ...], dtype):
        self.n, self.parts, self.axis, self.shape, self.dtype = n, parts, axis, shape, dtype

    def __call__(self, idx: Any, *answers: Any) -> Any:
        idx = _checked(idx, self.n, self.axis)
        xp = array_module(*answers) if answers else array_module(idx)
        slab = asarray_in(xp, _slab_of(idx, self.n, self.parts))
        out = xp.empty(self.shape, self.dtype)
        moved = xp.moveaxis(out, self.axis, 0)
        for p, ans in enumerate(answers):
            moved[slab == p] = xp.moveaxis(ans, self.axis, 0)
        return out


@register
class Take(Expr):
    """``take(x, idx, axis)`` for a 1-d integer ``idx`` (see the module docstring).

    Communication: each index once to its slab and back as a value slice: at most
    ``len(idx) * (8 + slice_bytes)`` bytes, where ``slice_bytes`` is the size of one
    slice of ``x`` across ``axis``; plus the reads that give the slabs their layout.
    """

    def __init__(self, x: Expr, idx: Expr, axis: int) -> None:
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
        super().__init__(shape, x.dtype, [x, idx])
        self.axis = axis

    @property
    def label(self) -> str:
        return "take"

    def lower(self, ctx: Lowering) -> None:
        x, idx = self.children
        be, nw, ax = ctx.backend, ctx.backend.nworkers, self.axis
        slabs, slab_owner = _slabs(ctx, x, ax)
        parts = slabs.cuts[ax]
        t_idx = ctx.tiling(idx)
        out_tiling = Tiling.along(self.shape, ax, 1 if t_idx.replicated else t_idx.cuts[0])
        groups = list(Tiling((out_tiling.cuts[ax],)).tiles(idx.shape))
        requests = [[(self.uid, "req", t, p) for p in range(parts)] for t in range(len(groups))]
        owners = [out_tiling.worker_of(_at(ax, len(self.shape), g[0]), nw) for g in groups]
        for t, ((_, box), w) in enumerate(zip(groups, owners)):
            task = _Route(x.shape[ax], parts, ax)
            be.submit(w, task, [ctx.region(idx, box, w)], requests[t])
        answers = [[(self.uid, "ans", p, t) for t in range(len(groups))] for p in range(parts)]
        for p, (sidx, sbox) in enumerate(slabs.tiles(x.shape)):
            w = slab_owner(sidx)
            ins = [ctx.region(x, sbox, w)] + [requests[t][p] for t in range(len(groups))]
            be.submit(w, _Answer(ax, len(groups)), ins, answers[p])
        tiles = Tiles(be, self.uid, self.shape, self.dtype, out_tiling)
        for t, (tidx, box, w) in enumerate(tiles.tiles()):
            shape = tuple(hi - lo for lo, hi in box)
            task = _Assemble(x.shape[ax], parts, ax, shape, self.dtype)
            ins = [ctx.region(idx, groups[t][1], w)] + [answers[p][t] for p in range(parts)]
            be.submit(w, task, ins, [tiles.key(tidx)])
        be.delete([k for row in requests for k in row] + [k for row in answers for k in row])
        self.data = tiles


def _at(axis: int, ndim: int, i: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i[0] if d == axis else 0 for d in range(ndim))


def _slabs(ctx: Lowering, x: Expr, axis: int):
    """Slabs of ``x`` along ``axis`` and the worker each is read on (the one holding
    its first tile, so an array cut only along ``axis`` moves nothing)."""
    nw = ctx.backend.nworkers
    t = ctx.tiling(x)
    parts = t.cuts[axis] if not t.replicated and not isinstance(x, View) else nw
    slabs = Tiling.along(x.shape, axis, max(1, parts))
    if t.replicated or isinstance(x, View):
        return slabs, lambda sidx: slabs.worker_of(sidx, nw)
    n = x.shape[axis]

    def owner(sidx: tuple[int, ...]) -> int:
        lo = slabs.tile_bounds(x.shape, sidx)[axis][0]
        first = tuple(piece_of(lo, n, t.cuts[axis]) if d == axis else 0 for d in range(x.ndim))
        return t.worker_of(first, nw)

    return slabs, owner


class _Apply:
    """Scatter round 2: a slab with the (index, value) pairs of every index tile applied."""

    def __init__(self, ufunc: np.ufunc | None = None):
        self.ufunc = ufunc

    def __call__(self, slab: Any, *pairs: tuple[Any, Any]) -> Any:
        xp = array_module(slab)
        out = xp.array(slab, copy=True)
        for local, vals in pairs:
            local, vals = asarray_in(xp, local), asarray_in(xp, vals)
            if self.ufunc is not None:
                out = device_ufunc_at(self.ufunc, out, local, vals)
                continue
            if xp is not np:  # CuPy writes repeated indices in no set order
                local, vals = _last_writes(xp, local, vals)
            out[local] = vals
        return out


def _last_writes(xp: Any, local: Any, vals: Any) -> tuple[Any, Any]:
    """The pairs whose index does not come again later (the writes NumPy keeps)."""
    if local.size < 2:
        return local, vals
    _, first = xp.unique(local[::-1], return_index=True)
    keep = local.size - 1 - first
    return local[keep], vals[keep]


@register
class Scatter(Expr):
    """``base`` with ``base[idx] = values`` along axis 0 (``values`` shaped
    ``idx.shape + base.shape[1:]``), as a functional update; with ``ufunc``,
    ``ufunc.at(base, idx, values)`` instead (repeated indices accumulate).

    Communication: each (index, value slice) pair once to the slab holding it,
    ``len(idx) * (8 + slice_bytes)`` bytes, plus the reads giving the slabs their layout.
    """

    def __init__(self, base: Expr, idx: Expr, values: Expr, ufunc: np.ufunc | None = None) -> None:
        super().__init__(base.shape, base.dtype, [base, idx, values])
        self.ufunc = ufunc

    @property
    def label(self) -> str:
        return "scatter"

    def lower(self, ctx: Lowering) -> None:
        base, idx, values = self.children
        be, nw = ctx.backend, ctx.backend.nworkers
        slabs, _ = _slabs(ctx, base, 0)
        parts = slabs.cuts[0]
        t_idx = ctx.tiling(idx)
        groups = list(
            Tiling.row(idx.shape, 1 if t_idx.replicated else t_idx.cuts[0]).tiles(idx.shape)
        )
        requests = [[(self.uid, "req", t, p) for p in range(parts)] for t in range(len(groups))]
        for t, (gidx, box) in enumerate(groups):
            w = Tiling((len(groups),)).worker_of(gidx, nw)
            vbox = box + tuple((0, n) for n in values.shape[1:])
            ins = [ctx.region(idx, box, w), ctx.region(values, vbox, w)]
            be.submit(w, _Route(base.shape[0], parts, 0), ins, requests[t])
        tiles = Tiles(be, self.uid, self.shape, self.dtype, slabs)
        for p, (sidx, sbox) in enumerate(slabs.tiles(base.shape)):
            w = slabs.worker_of(sidx, nw)  # the output tiles follow the slab grid
            ins = [ctx.region(base, sbox, w)] + [requests[t][p] for t in range(len(groups))]
            be.submit(w, _Apply(self.ufunc), ins, [tiles.key(sidx)])
        be.delete([k for row in requests for k in row])
        self.data = tiles


# ---- public functions -----------------------------------------------------------------


def _index_array(idx: Any) -> Array:
    arr = asarray(idx)
    if arr.dtype == bool:
        raise IndexError("boolean index used where an integer index was expected")
    if arr.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    return arr


def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Array:
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when None).

    ``mode="wrap"``/``"clip"`` adjust the indices with a fused map first.
    """
    from spartan.frontend.reductions import _out

    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    idx = _index_array(indices)
    n = x.shape[ax]
    if mode == "wrap":
        idx = elementwise(np.mod, idx, n) if n else idx
    elif mode == "clip":
        idx = elementwise(np.clip, idx, 0, max(n - 1, 0))
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if n == 0 and idx.size:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    flat = idx.ravel() if idx.ndim != 1 else idx
    result = Array(Take(x._expr, flat._expr, ax))
    if idx.ndim != 1:
        result = result.reshape(x.shape[:ax] + idx.shape + x.shape[ax + 1 :])
    return _out(result, out)


def _flat_index(shape: tuple[int, ...], *idx: Any) -> Any:
    wrapped = [_checked(i, n, d) for d, (i, n) in enumerate(zip(idx, shape))]
    if not wrapped:
        return np.zeros((), np.intp)
    xp = array_module(*wrapped)
    return xp.ravel_multi_index(tuple(xp.asarray(w) for w in wrapped), shape)


def consumed(part: Any) -> int:
    """How many axes of the indexed array one entry of an index tuple uses up (a k-d
    boolean mask k; a bool scalar, ``None`` and ``...`` none)."""
    if part is None or part is Ellipsis or isinstance(part, (bool, np.bool_)):
        return 0
    if isinstance(part, (Array, np.ndarray)) and part.dtype == bool:
        return part.ndim
    if isinstance(part, list) and np.asarray(part).dtype == bool:
        return np.asarray(part).ndim
    return 1


def _advanced(x: Array, key: tuple) -> tuple[Array, list[int], list[Array]]:
    """Apply the basic part of ``key`` as a view; return the array axes and index arrays."""
    nreal = sum(consumed(k) for k in key)
    if nreal > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {nreal} were indexed"
        )
    expanded: list[Any] = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - nreal))
        else:
            expanded.append(k)
    if not any(k is Ellipsis for k in key):
        expanded.extend([slice(None)] * (x.ndim - nreal))
    basic, arrays, axes, out_axis = [], [], [], 0
    for pos, k in enumerate(expanded):
        if k is None:
            basic.append(None)
            out_axis += 1
        elif isinstance(k, slice):
            basic.append(k)
            out_axis += 1
        else:
            arr = asarray(k) if not isinstance(k, (int, np.integer)) else asarray(np.intp(k))
            if arr.dtype == bool:
                # the axes this mask covers: the ones the entries before it left over
                first = sum(consumed(e) for e in expanded[:pos])
                for d, (m, n) in enumerate(zip(arr.shape, x.shape[first:])):
                    # (as NumPy: an empty mask's length-0 axes match any length)
                    if m != n and not (arr.size == 0 and m == 0):
                        raise IndexError(
                            f"boolean index did not match indexed array along axis "
                            f"{first + d}; size of axis is {n} but size of corresponding "
                            f"boolean axis is {m}"
                        )
                for part in nonzero(arr):
                    basic.append(slice(None))
                    arrays.append(part)
                    axes.append(out_axis)
                    out_axis += 1
                continue
            basic.append(slice(None))
            arrays.append(_index_array(arr))
            axes.append(out_axis)
            out_axis += 1
    return x[tuple(basic)], axes, arrays


def getitem(x: Array, key: Any) -> Array:
    """``x[key]`` for keys with integer or boolean arrays (NumPy's advanced indexing)."""
    key = key if isinstance(key, tuple) else (key,)
    y, axes, arrays = _advanced(x, key)
    try:
        bshape = tuple(np.broadcast_shapes(*(a.shape for a in arrays)))
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(a.shape) for a in arrays)
        ) from None
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    rest = [i for i in range(y.ndim) if i not in axes]
    moved = y.transpose(axes + rest) if axes != list(range(len(axes))) else y
    inner = tuple(y.shape[i] for i in axes)
    if len(arrays) == 1:
        flat, src = arrays[0], moved
    else:
        flat = elementwise(
            functools.partial(_flat_index, inner), *arrays, name="ravel_index", dtype=np.intp
        )
        src = moved.reshape((math.prod(inner),) + moved.shape[len(axes) :])
    result = take(src, flat if flat.shape == bshape else broadcast_to(flat, bshape), 0)
    if adjacent and axes[0] > 0:
        nb = len(bshape)
        order = (
            list(range(nb, nb + axes[0])) + list(range(nb)) + list(range(nb + axes[0], result.ndim))
        )
        result = result.transpose(order)
    return result


def setitem(x: Array, key: Any, value: Any) -> Array:
    """The array equal to ``x`` after ``x[key] = value`` for advanced ``key``."""
    k = key if isinstance(key, tuple) else (key,)
    if len(k) == 1 and isinstance(k[0], (Array, np.ndarray, list)):
        arr = asarray(k[0])
        if arr.dtype == bool:
            from spartan.frontend.indexing import set_masked

            return set_masked(x, arr, value)
        return _scatter_rows(x, _index_array(arr), value)
    y_axes = _advanced(x, k)
    _, axes, arrays = y_axes
    if any(
        not isinstance(p, (Array, np.ndarray, list, int, np.integer)) for p in k
    ) or axes != list(range(len(axes))):
        raise IndexError("spartan assignment supports index arrays on the leading axes")
    inner = x.shape[: len(arrays)]
    flat = elementwise(
        functools.partial(_flat_index, inner), *arrays, name="ravel_index", dtype=np.intp
    )
    rows = x.reshape((math.prod(inner),) + x.shape[len(arrays) :])
    return _scatter_rows(rows, flat, value).reshape(x.shape)


def _scatter_rows(x: Array, idx: Array, value: Any, ufunc: np.ufunc | None = None) -> Array:
    idx = idx.ravel() if idx.ndim != 1 else idx
    v = asarray(value)
    target = idx.shape + x.shape[1:]
    try:
        np.broadcast_shapes(v.shape, target)
    except ValueError:
        raise ValueError(
            f"shape mismatch: value array of shape {v.shape} could not be broadcast to "
            f"indexing result of shape {target}"
        ) from None
    v = broadcast_to(v.astype(x.dtype), target)
    return Array(Scatter(x._expr, idx._expr, v._expr, ufunc))


def ufunc_at(ufunc: np.ufunc, a: Array, indices: Any, b: Any = None) -> Array:
    """The array equal to ``a`` after ``ufunc.at(a, indices, b)``: a scatter whose
    slabs apply ``ufunc.at`` (repeated indices accumulate, as in NumPy)."""
    x = asarray(a)
    if ufunc.nin == 2 and b is None:
        raise ValueError("second operand needed for ufunc")
    if ufunc.nin == 1 and b is not None:
        raise ValueError("second operand provided when ufunc is unary")
    key = indices if isinstance(indices, tuple) else (indices,)
    _, axes, arrays = _advanced(x, key)
    if axes != list(range(len(axes))) or len(arrays) != len(key):
        raise IndexError("spartan ufunc.at takes index arrays for the leading axes")
    value = b if b is not None else np.zeros((), x.dtype)
    if len(arrays) == 1:
        return _scatter_rows(x, arrays[0], value, ufunc)
    inner = x.shape[: len(arrays)]
    flat = elementwise(
        functools.partial(_flat_index, inner), *arrays, name="ravel_index", dtype=np.intp
    )
    rows = x.reshape((math.prod(inner),) + x.shape[len(arrays) :])
    return _scatter_rows(rows, flat, value, ufunc).reshape(x.shape)


def _scatter_flat(x: Array, pos: Array, value: Any) -> Array:
    v = asarray(value)
    if v.ndim and v.shape != pos.shape:
        raise ValueError(
            f"NumPy boolean array indexing assignment cannot assign {v.size} input values to "
            f"the {pos.shape[0]} output values where the mask is true"
        )
    return _scatter_rows(x.ravel(), pos, v).reshape(x.shape)


def flatnonzero(a: Any) -> Array:
    """Flat indices of the non-zero elements (a filter over ``arange``)."""
    from spartan.frontend.indexing import compress_mask

    x = asarray(a).ravel()
    return compress_mask(arange(x.size, dtype=np.intp), x != 0)


def nonzero(a: Any) -> tuple[Array, ...]:
    """Indices of the non-zero elements, one array per axis."""
    x = asarray(a)
    if x.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
            "instead."
        )
    flat = flatnonzero(x)
    if x.ndim == 1:
        return (flat,)
    return tuple(
        elementwise(functools.partial(_unravel, x.shape, d), flat, name="unravel", dtype=np.intp)
        for d in range(x.ndim)
    )


def _unravel(shape: tuple[int, ...], d: int, flat: Any) -> Any:
    return array_module(flat).unravel_index(flat, shape)[d]


def argwhere(a: Any) -> Array:
    """Indices of the non-zero elements as an ``(N, ndim)`` array."""
    from spartan.frontend.manipulation import stack

    x = asarray(a)
    if x.ndim == 0:
        return stack(nonzero(x.reshape(1)), axis=1)[:, :0]
    return stack(nonzero(x), axis=1)


def extract(condition: Any, arr: Any) -> Array:
    """``arr.ravel()[condition.ravel() != 0]``."""
    from spartan.frontend.indexing import compress_mask

    c = asarray(condition).ravel()
    return compress_mask(asarray(arr).ravel(), c != 0)


def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Array:
    """Slices of ``a`` along ``axis`` where ``condition`` (1-d) is true."""
    from spartan.frontend.reductions import _out

    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    c = asarray(condition)
    if c.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    if c.shape[0] > x.shape[ax]:
        c = c[: x.shape[ax]]
    idx = flatnonzero(c)
    return _out(take(x, idx, ax), out)


def _choose(mode: str, a: Any, *choices: Any) -> Any:
    xp = array_module(a, *choices)
    if xp is np:
        return np.choose(a, choices, mode=mode)
    return _choose_stacked(xp, mode, a, choices)


def _choose_stacked(xp: Any, mode: str, a: Any, choices: tuple) -> Any:
    """``choose`` through ``xp.choose`` of one stacked array (CuPy's takes no sequence)."""
    dtype = _result_dtype(choices)
    arrays = xp.broadcast_arrays(xp.asarray(a), *(xp.asarray(c, dtype=dtype) for c in choices))
    return xp.choose(arrays[0], xp.stack(arrays[1:]), mode=mode)


def _result_dtype(values: Any) -> np.dtype:
    """NumPy's result dtype of arrays (of either device) and Python scalars."""
    return np.result_type(*(v.dtype if hasattr(v, "dtype") else v for v in values))


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Array:
    """Element ``i`` from ``choices[a[i]]`` (one fused map over broadcast inputs)."""
    from spartan.frontend.reductions import _out

    if isinstance(choices, Array):
        choices = [choices[i] for i in range(choices.shape[0])]
    return _out(
        elementwise(functools.partial(_choose, mode), asarray(a), *choices, name="choose"), out
    )


def _select(n: int, *args: Any) -> Any:
    xp = array_module(*args)
    if xp is np:
        return np.select(list(args[:n]), list(args[n : 2 * n]), args[2 * n])
    return _select_where(xp, args[:n], args[n : 2 * n], args[2 * n])


def _select_where(xp: Any, conds: tuple, choices: tuple, default: Any) -> Any:
    """``select`` as ``where``s from the last condition to the first (the first true one
    wins); CuPy's ``select`` takes only a scalar default."""
    dtype = _result_dtype((*choices, default))
    out = xp.asarray(default, dtype=dtype)
    for c, v in zip(conds[::-1], choices[::-1]):
        out = xp.where(xp.asarray(c), xp.asarray(v, dtype=dtype), out)
    return out


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Array:
    """The choice of the first true condition per element (see :func:`numpy.select`)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    conds = [asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != bool:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    fn = functools.partial(_select, len(conds))
    return elementwise(fn, *conds, *choicelist, default, name="select")


def _wrap(n: int, axis: int, idx: np.ndarray) -> np.ndarray:
    return _checked(idx, n, axis)


def take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Array:
    """Values at ``indices`` along ``axis`` lane by lane (see :func:`numpy.take_along_axis`).

    The lane coordinates become flat indices with a fused map, then one :func:`take`.
    """
    x = asarray(arr)
    idx = _index_array(indices)
    if axis is None:
        return take(x.ravel(), idx.ravel())
    (ax,) = normalize_axes(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    others = [tuple(1 if d == ax else n for d, n in enumerate(s)) for s in (x.shape, idx.shape)]
    shape = tuple(np.broadcast_shapes(*others))
    full = tuple(idx.shape[ax] if d == ax else n for d, n in enumerate(shape))
    idx = broadcast_to(idx, full)
    strides = [math.prod(x.shape[d + 1 :]) for d in range(x.ndim)]
    flat = elementwise(functools.partial(_wrap, x.shape[ax], ax), idx, name="wrap", dtype=np.intp)
    flat = flat * strides[ax]
    for d in range(x.ndim):
        if d != ax and x.shape[d] == full[d] and full[d] > 1:
            coord = arange(full[d], dtype=np.intp).reshape(
                tuple(full[d] if e == d else 1 for e in range(x.ndim))
            )
            flat = flat + coord * strides[d]
    return take(x.ravel(), flat)


def put(a: Array, ind: Any, v: Any, mode: str = "raise") -> None:
    """``a.flat[ind] = v`` (rebinds ``a`` to the updated array)."""
    x = asarray(a)
    idx = _index_array(ind).ravel()
    vals = asarray(v).ravel()
    if vals.shape != idx.shape:
        vals = resize(vals, idx.shape)
    a._expr = _scatter_rows(x.ravel(), idx, vals).reshape(x.shape)._expr
