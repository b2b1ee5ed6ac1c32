"""Reductions on :class:`~spartan.frontend.fold.Fold`: sum, prod, min, max, mean,
var, std, all, any, argmin, argmax and ``ufunc.reduce``.

>>> sp.ones((4, 3)).sum(axis=0).to_numpy()
array([4., 4., 4.])
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module, to_host
from spartan.backend.device import reduce as device_reduce
from spartan.frontend.array import Array
from spartan.frontend.fold import Fold
from spartan.frontend.ufuncs import elementwise
from spartan.frontend.view import view
from spartan.frontend.viewmap import Axis, ViewMap


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` as sorted non-negative axes (None: all), with NumPy's errors."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)  # NumPy's TypeError for 1.5, not axis 1
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def keep_dims(result: Array, axes: Sequence[int], ndim: int) -> Array:
    """Re-insert the reduced axes as unit axes (a view: nothing copied)."""
    src = iter(range(result.ndim))
    vm_axes = []
    for i in range(ndim):
        if i in axes:
            vm_axes.append(Axis(None))
        else:
            j = next(src)
            vm_axes.append(Axis(j, 0, 1, result.shape[j]))
    return Array(view(result._expr, ViewMap(result.ndim, tuple(vm_axes))))


def _to_array(a: Any) -> Array:
    from spartan.frontend.creation import asarray

    return asarray(a)


def _ufunc_local(ufunc: np.ufunc, dtype: Any, block: np.ndarray, axes, box) -> np.ndarray:
    return device_reduce(ufunc, block, axes, dtype)


def _ordered_local(ufunc: np.ufunc, dtype: Any, initial: Any, block: Any, axes, box) -> Any:
    """A whole reduced axis in NumPy's order, ``initial`` first (on the host: CuPy
    reduces few ufuncs, and none of these)."""
    out = ufunc.reduce(to_host(block), axis=axes, dtype=dtype, initial=initial)
    return array_module(block).asarray(out)


@functools.lru_cache(maxsize=256)
def _reorderable(ufunc: np.ufunc, dtype: np.dtype, reduce_dtype: Any) -> bool:
    """NumPy's own test: a ufunc it reduces over several axes at once (``add``,
    ``maximum``, ...) may be split into partials joined in any grouping and order; one
    it does not (``subtract``, ``divide``, ``power`` ...) folds in NumPy's order."""
    try:
        with np.errstate(all="ignore"):
            ufunc.reduce(np.ones((1, 1), dtype), axis=(0, 1), dtype=reduce_dtype)
    except ValueError:
        return False
    return True


def _whole_along(x: Array, axes: Sequence[int]) -> Array:
    """``x`` re-cut so that no tile cuts ``axes``: along the longest other axis, or one
    tile when every axis is reduced."""
    from spartan.backend import session
    from spartan.frontend.manipulation import retile
    from spartan.frontend.planning import default_pieces
    from spartan.tiling import Tiling

    others = [a for a in range(x.ndim) if a not in axes]
    if not others:
        return retile(x, Tiling((1,) * x.ndim))
    axis = builtins.max(others, key=lambda a: x.shape[a])
    pieces = default_pieces(x.nbytes, session.current().nworkers)
    return retile(x, Tiling.along(x.shape, axis, pieces))


def ufunc_reduce(
    ufunc: np.ufunc,
    a: Any,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """``ufunc.reduce(a, axis)`` as a fold; ``initial`` is folded in afterwards (first,
    for a ufunc NumPy does not reorder).

    ``where=`` masks elements out by replacing them with the ufunc's identity (or
    ``initial``) in a map fused into the fold."""
    x = _to_array(a)
    if initial is None and x.dtype != object:  # NumPy's "no initial" for these
        initial = np._NoValue
    axes = normalize_axes(axis, x.ndim)
    if (
        builtins.any(x.shape[a] == 0 for a in axes)
        and ufunc.identity is None
        and initial is np._NoValue
    ):
        raise ValueError(
            f"zero-size array to reduction operation {ufunc.__name__} which has no identity"
        )
    with np.errstate(all="ignore"):
        rdtype = ufunc.reduce(
            np.ones((1,) * builtins.max(x.ndim, 1), x.dtype), axis=0, dtype=dtype
        ).dtype
    ordered = not _reorderable(ufunc, x.dtype, dtype)
    if where is not True:
        # masked elements must not count: the identity where the ufunc has one (initial
        # is folded in once, below); else initial, which max/min-like ufuncs (the ones
        # without an identity that NumPy reorders) absorb however often it appears
        fill = initial if ufunc.identity is None else ufunc.identity
        if fill is None or fill is np._NoValue:
            raise ValueError(
                f"reduction operation '{ufunc.__name__}' does not have an identity, so to use "
                "a where mask one has to specify 'initial'"
            )
        if ordered:
            raise NotImplementedError(
                f"spartan: where= in a reduction by '{ufunc.__name__}', which NumPy does "
                "not reorder, is not supported; replace the masked elements first (for "
                "subtract: spartan.where(mask, x, 0))"
            )
        from spartan.frontend.manipulation import broadcast_to

        mask = broadcast_to(_to_array(where).astype(bool), x.shape)
        x = elementwise(np.where, mask, x, np.asarray(fill, x.dtype)[()], name="where_mask")
    if x.ndim == 0:
        result = x.astype(rdtype)
    else:
        local = functools.partial(_ufunc_local, ufunc, dtype)
        if ordered:  # every tile holds the reduced axis whole: no partials to join
            if len(axes) > 1:
                raise ValueError(
                    f"reduction operation '{ufunc.__name__}' is not reorderable, so at "
                    "most one axis may be specified"
                )
            x = _whole_along(x, axes)
            local = functools.partial(_ordered_local, ufunc, dtype, initial)
        fold = Fold(x._expr, axes, local, ufunc, rdtype, name=ufunc.__name__, ordered=ordered)
        result = Array(fold)
    if initial is not np._NoValue and not (ordered and x.ndim):
        start = np.asarray(initial, dtype=rdtype)[()]  # NumPy casts it to the result's type
        # NumPy starts from initial: it comes first where the order matters
        result = elementwise(ufunc, start, result) if ordered else elementwise(ufunc, result, start)
    if keepdims:
        result = keep_dims(result, axes, x.ndim)
    return _out(result, out)


def _out(result: Array, out: Any) -> Array:
    if out is None:
        return result
    from spartan.frontend.ufuncs import _store

    return _store(result, out)


def sum(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:  # noqa: A001
    """Sum of elements over ``axis`` (see :func:`numpy.sum`)."""
    return ufunc_reduce(np.add, a, axis, dtype, out, keepdims, initial, where)


def prod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    return ufunc_reduce(np.multiply, a, axis, dtype, out, keepdims, initial, where)


def max(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:  # noqa: A001
    return ufunc_reduce(np.maximum, a, axis, None, out, keepdims, initial, where)


def min(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:  # noqa: A001
    return ufunc_reduce(np.minimum, a, axis, None, out, keepdims, initial, where)


amax, amin = max, min


def all(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = True
) -> Any:  # noqa: A001
    return ufunc_reduce(
        np.logical_and, _to_array(a).astype(bool), axis, None, out, keepdims, where=where
    )


def any(
    a: Any, axis: Any = None, out: Any = None, keepdims: bool = False, where: Any = True
) -> Any:  # noqa: A001
    return ufunc_reduce(
        np.logical_or, _to_array(a).astype(bool), axis, None, out, keepdims, where=where
    )


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    n = 1
    for i in axes:
        n *= shape[i]
    return n


def _masked_count(x: Array, axes: Sequence[int], keepdims: bool, where: Any) -> Array:
    """How many elements ``where`` selects per reduced slice."""
    from spartan.frontend.manipulation import broadcast_to

    mask = broadcast_to(_to_array(where).astype(bool), x.shape)
    return sum(mask, axes, dtype=np.intp, keepdims=keepdims)


def mean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    where: Any = True,
) -> Any:
    """Arithmetic mean, accumulated like NumPy (float64 for integer input)."""
    x = _to_array(a)
    axes = normalize_axes(axis, x.ndim)
    if dtype is None:
        # (kind, not issubdtype: NumPy files timedelta64 under its integers)
        dtype = np.float64 if x.dtype.kind in "iub" else x.dtype
    # (no dtype= where it is the input's: NumPy refuses one with a time unit)
    same = np.dtype(dtype) == x.dtype
    total = sum(x, axes, dtype=None if same else dtype, keepdims=keepdims, where=where)
    n = _count(x.shape, axes) if where is True else _masked_count(x, axes, keepdims, where)
    with np.errstate(all="ignore"):
        result = elementwise(np.true_divide, total, n).astype(dtype)
    return _out(result, out)


def var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    where: Any = True,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    """Variance: the mean of squared deviations from the mean (two passes, like NumPy)."""
    if correction is not None:
        ddof = correction
    x = _to_array(a)
    axes = normalize_axes(axis, x.ndim)
    m = (
        globals()["mean"](x, axes, dtype=dtype, keepdims=True, where=where)
        if mean is None
        else mean
    )
    d = x - m
    sq = (d * np.conj(d)).real if np.iscomplexobj(np.empty(0, x.dtype)) else d * d
    rdtype = dtype
    if rdtype is None and (np.issubdtype(x.dtype, np.integer) or x.dtype == bool):
        rdtype = np.float64
    total = sum(sq, axes, dtype=rdtype, keepdims=keepdims, where=where)
    n = (_count(x.shape, axes) if where is True else _masked_count(x, axes, keepdims, where)) - ddof
    with np.errstate(all="ignore"):
        n = builtins.max(n, 0) if where is True else elementwise(np.maximum, n, 0)
        return _out(elementwise(np.true_divide, total, n), out)


def std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    where: Any = True,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    return _out(np.sqrt(var(a, axis, dtype, None, ddof, keepdims, where, mean, correction)), out)


def _arg_local(pick: Any, axes: tuple[int, ...], shape: tuple[int, ...], block, _axes, box):
    """(value, global index) of the best element per reduced slice of this tile."""
    rec = np.dtype([("v", block.dtype), ("i", np.int64)])
    if len(axes) == len(shape) and len(shape) != 1:  # axis=None over an n-d array
        flat = block.reshape(-1)
        k = int(pick(flat)) if flat.size else 0
        local = np.unravel_index(k, block.shape) if flat.size else (0,) * len(shape)
        out = np.empty((), rec)
        out["v"] = to_host(flat[k]) if flat.size else 0
        out["i"] = np.ravel_multi_index(tuple(int(i) + lo for i, (lo, _) in zip(local, box)), shape)
        return out
    ax = axes[0]
    k = pick(block, axis=ax)
    out = np.empty(k.shape, rec)  # partials stay on the host: CuPy has no structured dtypes
    out["v"] = to_host(np.take_along_axis(block, np.expand_dims(k, ax), ax).squeeze(ax))
    out["i"] = to_host(k) + box[ax][0]
    return out


def _arg_direct(pick: Any, axes: tuple[int, ...], shape: tuple[int, ...], block, _axes, box):
    """The global index of the best element when the tile holds the reduced axes whole
    (stays on the tile's device)."""
    if len(axes) == len(shape) and len(shape) != 1:  # axis=None: the tile is the array
        return pick(block.reshape(-1))
    ax = axes[0]
    return pick(block, axis=ax) + box[ax][0]


def _arg_combine(better: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Keep the better value; NaN wins (NumPy returns the first NaN); ties: lower index."""
    av, bv = a["v"], b["v"]
    with np.errstate(invalid="ignore"):
        take_b = better(bv, av) | ((bv == av) & (b["i"] < a["i"]))
    if av.dtype.kind in "fc":
        an, bn = np.isnan(av), np.isnan(bv)
        take_b = np.where(an | bn, bn & (~an | (b["i"] < a["i"])), take_b)
    return np.where(take_b, b, a)


def _arg_final(rec: np.ndarray) -> np.ndarray:
    return rec["i"]


def _arg(pick: Any, better: Any, name: str, a: Any, axis: Any, out: Any, keepdims: bool) -> Any:
    x = _to_array(a)
    if axis is not None:  # one integer axis, as NumPy's (a tuple raises its TypeError)
        axis = operator.index(axis)
    if (
        axis is None
        and x.size == 0
        or axis is not None
        and x.shape[normalize_axes(axis, x.ndim)[0]] == 0
    ):
        raise ValueError(f"attempt to get {name} of an empty sequence")
    if axis is None:
        axes = tuple(range(x.ndim))
        src = x if x.ndim else x.reshape(1)
    else:
        axes = normalize_axes(axis, x.ndim)
        src = x
    rec = np.dtype([("v", x.dtype), ("i", np.int64)])
    fold_axes = axes if src.ndim == x.ndim else (0,)
    local = functools.partial(_arg_local, pick, fold_axes, src.shape)
    result = Array(
        Fold(
            src._expr,
            fold_axes,
            local,
            functools.partial(_arg_combine, better),
            np.intp,
            partial_dtype=rec,
            final=_arg_final,
            name=name,
            direct=functools.partial(_arg_direct, pick, fold_axes, src.shape),
        )
    )
    if keepdims:
        result = keep_dims(result, axes, x.ndim)
    return _out(result, out)


def argmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return _arg(np.argmax, np.greater, "argmax", a, axis, out, keepdims)


def argmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return _arg(np.argmin, np.less, "argmin", a, axis, out, keepdims)


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    x = _to_array(a)
    # an object is counted by its truth, as NumPy does (None is zero, not != 0)
    nonzero = x.astype(bool) if x.dtype == object else x != 0
    return sum(nonzero, axis, dtype=np.intp, keepdims=keepdims)


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    return _out(max(a, axis, keepdims=keepdims) - min(a, axis, keepdims=keepdims), out)


# ---- ufunc.reduceat ------------------------------------------------------------------------


def single_axis(axis: Any, ndim: int, method: str) -> int:
    """The one axis ``ufunc.accumulate``/``reduceat`` take (None: every axis, allowed
    only for 1-d input), with NumPy's errors.

    >>> single_axis(-1, 2, "reduceat"), single_axis((0,), 2, "reduceat")
    (1, 0)
    """
    import operator

    axes = tuple(range(ndim)) if axis is None else axis
    axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
    if len(axes) != 1:
        raise ValueError(f"{method} does not allow multiple axes")
    a = operator.index(axes[0])
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim


def reduceat_indices(indices: Any, n: int, name: str) -> np.ndarray:
    """``indices`` as NumPy's ``reduceat`` takes them: one-dimensional, cast to intp
    (safely, from an array), each in ``[0, n)``. A spartan array of indices is checked
    by its shape and dtype, then fetched: the indices decide which tasks run.

    >>> reduceat_indices([0, 3], 5, "add").tolist()
    [0, 3]
    """
    from spartan.frontend.array import Array

    intp = np.dtype(np.intp)
    if isinstance(indices, Array):
        src_ndim, src_dtype = indices.ndim, indices.dtype
    elif isinstance(indices, np.ndarray):
        src_ndim, src_dtype = indices.ndim, indices.dtype
    else:
        ind = np.array(indices, dtype=np.intp)  # NumPy's errors for non-integers
        src_ndim, src_dtype = ind.ndim, intp
    if src_ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if src_ndim > 1:
        raise ValueError(f"{name}.reduceat: indices must be one-dimensional, not {src_ndim}-d")
    if not np.can_cast(src_dtype, intp, "safe"):
        raise TypeError(
            f"Cannot cast array data from {src_dtype!r} to {intp!r} according to the rule 'safe'"
        )
    if isinstance(indices, (Array, np.ndarray)):
        ind = np.asarray(indices).astype(np.intp, copy=False)
    bad = (ind < 0) | (ind >= n)
    if bad.any():
        raise IndexError(f"index {ind[np.argmax(bad)]} out-of-bounds in {name}.reduceat [0, {n})")
    return ind


def ufunc_reduceat(
    ufunc: np.ufunc,
    array: Any,
    indices: Any,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
) -> Array:
    """``ufunc.reduceat(array, indices, axis, dtype, out)`` lazily, with NumPy's results.

    Result ``i`` reduces ``array[indices[i]:indices[i+1]]`` along ``axis`` (the last to
    the end), or is ``array[indices[i]]`` where ``indices[i] >= indices[i+1]``. A ufunc
    NumPy reorders (``add``, ``maximum``...) reduces each tile's part of each segment
    where the tile lives and combines the partials of a segment in order (only
    partials travel); one it does not (``subtract``, ``divide``...) reduces whole lanes
    along ``axis``, in NumPy's order.

    >>> sp.add.reduceat(sp.arange(8), [0, 4, 5]).to_numpy()
    array([ 6,  4, 18])
    """
    if ufunc.signature is not None:
        raise RuntimeError("Reduction not defined on ufunc with signature")
    x = _to_array(array)
    with np.errstate(all="ignore"):  # NumPy's errors for ufuncs that cannot reduceat
        rdtype = ufunc.reduceat(np.ones(2, x.dtype), [0], dtype=dtype).dtype
    if x.ndim == 0:
        raise TypeError("cannot reduceat on a scalar")
    ax = single_axis(axis, x.ndim, "reduceat")
    n = x.shape[ax]
    ind = reduceat_indices(indices, n, ufunc.__name__)
    shape = x.shape[:ax] + (len(ind),) + x.shape[ax + 1 :]
    if 0 in shape:
        from spartan.frontend.creation import zeros

        return _out(zeros(shape, dtype=rdtype), out)
    try:
        ordered = not _reorderable(ufunc, x.dtype, dtype)
    except TypeError:
        ordered = True
    t = x.tiling
    # lanes already whole in every tile: each tile's reduceat is its output, nothing moves
    whole_lanes = x.ndim > 1 and t is not None and (t.replicated or t.cuts[ax] == 1)
    if ordered or whole_lanes:
        result = _reduceat_lanes(ufunc, x, ind, ax, dtype, rdtype)
    else:
        result = _reduceat_partials(ufunc, x, ind, ax, dtype, rdtype, t)
    return _out(result, out)


class _LaneReduceat:
    """Lane function: NumPy's own ``reduceat`` of whole lanes, on the host (CuPy has no
    ``reduceat``); the result stays a NumPy array, which the lane join takes as it is
    (it reads what a lane function returns with ``np.asarray``) and the worker stores
    on its own device."""

    def __init__(self, ufunc: np.ufunc, indices: np.ndarray, dtype: Any, rdtype: np.dtype):
        self.ufunc, self.indices, self.dtype, self.rdtype = ufunc, indices, dtype, rdtype

    def __call__(self, lanes: Any) -> np.ndarray:
        out = self.ufunc.reduceat(to_host(lanes), self.indices, axis=1, dtype=self.dtype)
        return out.astype(self.rdtype, copy=False)


def _reduceat_lanes(
    ufunc: np.ufunc, x: Array, ind: np.ndarray, ax: int, dtype: Any, rdtype: np.dtype
) -> Array:
    from spartan.frontend.alongaxis import along_axes
    from spartan.frontend.manipulation import moveaxis

    fn = _LaneReduceat(ufunc, ind, dtype, rdtype)
    out = along_axes(fn, x, (ax,), (len(ind),), rdtype, name=f"{ufunc.__name__}.reduceat")
    return moveaxis(out, -1, ax) if x.ndim > 1 else out


def segment_plan(ind: np.ndarray, n: int, groups: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """How ``reduceat(x, ind)`` over an axis of length ``n`` cut into ``groups`` equal
    groups (``[g*n//groups, (g+1)*n//groups)``) splits into per-group partials.

    Segment ``i`` is ``[ind[i], ind[i+1])`` (the last to ``n``; ``[ind[i], ind[i]+1)``
    where ``ind[i] >= ind[i+1]``); each group reduces its part of every segment that
    overlaps it. Returns, per group start, ``(first, count, starts, take, tails)``: the
    group's partials go to ``first:first+count`` of the partials axis, made by one NumPy
    ``reduceat`` of the group's block at ``starts`` (positions ``take`` of it) followed
    by one reduction to the block's end per ``tails`` start; then the permutation that
    orders the partials by segment (groups in order within one) and where each
    segment's partials begin in that order.

    >>> plan, perm, first = segment_plan(np.array([0, 3]), 6, 2)
    >>> sorted(plan), perm.tolist(), first.tolist()
    ([0, 3], [0, 1], [0, 1])
    """
    k = len(ind)
    lo = ind.astype(np.intp)
    hi = np.empty(k, np.intp)
    hi[:-1], hi[-1:] = ind[1:], n
    hi = np.where(hi > lo, hi, lo + 1)
    bounds = np.array([g * n // groups for g in range(groups + 1)], np.intp)
    g_first = np.searchsorted(bounds, lo, side="right") - 1
    g_last = np.searchsorted(bounds, hi - 1, side="right") - 1
    counts = g_last - g_first + 1
    first = np.cumsum(counts) - counts
    seg = np.repeat(np.arange(k), counts)
    grp = np.repeat(g_first, counts) + np.arange(len(seg)) - np.repeat(first, counts)
    glo, ghi = bounds[grp], bounds[grp + 1]
    clo = np.maximum(lo[seg], glo) - glo
    chi = np.minimum(hi[seg], ghi) - glo
    to_end = chi == ghi - glo
    # per group: the parts that end inside the block by start, then those reaching its
    # end; one NumPy reduceat computes all but the second and later of those
    keys = (chi, clo, to_end, grp)
    if not _lex_sorted(keys):  # (sorted indices: already in this order)
        order = np.lexsort(keys)
        seg, grp, clo, chi, to_end = seg[order], grp[order], clo[order], chi[order], to_end[order]
    plan = {}
    edges = np.flatnonzero(np.diff(grp)) + 1
    for a, b in zip(np.concatenate(([0], edges)), np.concatenate((edges, [len(grp)]))):
        g = int(grp[a])
        size = int(bounds[g + 1] - bounds[g])
        m = int(np.count_nonzero(~to_end[a:b]))
        m = builtins.min(m + 1, b - a)
        s_lo, s_hi = clo[a : a + m], chi[a : a + m]
        # an explicit end wherever the next start is not this part's end
        gap = np.append(s_hi[:-1] != s_lo[1:], s_hi[-1] < size)
        take = np.arange(m) + np.concatenate(([0], np.cumsum(gap)[:-1]))
        starts = np.empty(m + int(gap.sum()), np.intp)
        starts[take] = s_lo
        starts[take[gap] + 1] = s_hi[gap]
        plan[int(bounds[g])] = (int(a), int(b - a), starts, take, clo[a + m : b].copy())
    perm = np.arange(len(seg)) if _lex_sorted((grp, seg)) else np.lexsort((grp, seg))
    return plan, perm, first


def _lex_sorted(keys: Sequence[np.ndarray]) -> bool:
    """Whether ``np.lexsort(keys)`` is the identity (the last key most significant)."""
    ok = np.ones(builtins.max(len(keys[0]) - 1, 0), bool)
    for k in keys:
        a, b = k[:-1], k[1:]
        ok = (b > a) | ((b == a) & ok)
    return bool(ok.all())


class _SegmentPartials:
    """``f_join`` of a group (a block cut along ``axis``): its partial reductions of the
    segments overlapping it, written to the group's run of the partials axis."""

    def __init__(self, ufunc: np.ufunc, axis: int, dtype: Any, rdtype: np.dtype, plan: dict):
        self.ufunc, self.axis, self.dtype, self.rdtype, self.plan = ufunc, axis, dtype, rdtype, plan

    def __call__(self, extents: Any, block: Any) -> list:
        entry = self.plan.get(extents[0].box[self.axis][0])
        if entry is None:
            return []
        first, count, starts, take, tails = entry
        ax, host = self.axis, to_host(block)
        parts = []
        if len(take):
            part = self.ufunc.reduceat(host, starts, axis=ax, dtype=self.dtype)
            parts.append(part if len(take) == len(starts) else part.take(take, axis=ax))
        lead = (slice(None),) * ax
        for lo in tails:
            tail = host[lead + (slice(int(lo), None),)]
            parts.append(self.ufunc.reduce(tail, axis=ax, dtype=self.dtype, keepdims=True))
        out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=ax)
        out = array_module(block).asarray(out.astype(self.rdtype, copy=False))
        return [(lead + (slice(first, first + count),), out)]


class _CombineSegments:
    """Lane function: each segment's partials (in group order) reduced to one value, on
    the host (a NumPy array, as :class:`_LaneReduceat` returns)."""

    def __init__(self, ufunc: np.ufunc, rdtype: np.dtype, perm: np.ndarray, first: np.ndarray):
        self.ufunc, self.rdtype, self.perm, self.first = ufunc, rdtype, perm, first

    def __call__(self, lanes: Any) -> np.ndarray:
        host = to_host(lanes)
        if not np.array_equal(self.perm, np.arange(len(self.perm))):
            host = host.take(self.perm, axis=1)
        return self.ufunc.reduceat(host, self.first, axis=1, dtype=self.rdtype)


def _reduceat_partials(
    ufunc: np.ufunc,
    x: Array,
    ind: np.ndarray,
    ax: int,
    dtype: Any,
    rdtype: np.dtype,
    tiling: Any,
) -> Array:
    """Two joins: each group of ``x`` along ``ax`` (its tiles along ``ax`` when it is
    evaluated, so each group reads where it lives) reduces its parts of the segments
    into a partials array; the partials of each segment, a handful per segment, then
    combine in order."""
    from spartan.backend import session
    from spartan.frontend.alongaxis import along_axes
    from spartan.frontend.join_update import JoinUpdate
    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.planning import default_pieces

    n = x.shape[ax]
    if tiling is not None and not tiling.replicated and tiling.cuts[ax] > 1:
        groups = tiling.cuts[ax]
    else:
        groups = default_pieces(x.nbytes, session.current().nworkers)
    groups = builtins.max(1, builtins.min(groups, n))
    plan, perm, first = segment_plan(ind, n, groups)
    name = f"{ufunc.__name__}.reduceat"
    shape = x.shape[:ax] + (len(perm),) + x.shape[ax + 1 :]
    f_join = _SegmentPartials(ufunc, ax, dtype, rdtype, plan)
    partials = Array(
        JoinUpdate(f_join, None, [x._expr], [ax], shape, rdtype, groups=groups, name=name)
    )
    if len(perm) == len(ind) and np.array_equal(perm, np.arange(len(perm))):
        return partials  # one partial per segment, in segment order: they are the result
    combine = _CombineSegments(ufunc, rdtype, perm, first)
    out = along_axes(combine, partials, (ax,), (len(ind),), rdtype, name=name)
    return moveaxis(out, -1, ax) if x.ndim > 1 else out
