"""``scan``: cumulative ``f_accum`` along an axis, output shaped like the input.

Each tile accumulates locally and publishes its last slice; a tile then combines the
last slices of the tiles before it along the axis (only those slices travel), in axis
order, so the carries, and the bits, are the same on every run. A view is scanned in
its base's tiles (:mod:`spartan.frontend.taskgrid`), each on its own worker.

>>> sp.cumsum(sp.arange(5)).to_numpy()
array([ 0,  1,  3,  6, 10])
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import accumulate
from spartan.frontend.array import Array
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering, identity
from spartan.frontend.taskgrid import Grid, input_grid
from spartan.frontend.tiles import Tiles
from spartan.tiling import Tiling, box_shape

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


class _LocalScan:
    def __init__(self, ufunc: np.ufunc, axis: int, dtype: np.dtype):
        self.ufunc, self.axis, self.dtype = ufunc, axis, dtype

    def __call__(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = accumulate(self.ufunc, block, self.axis, self.dtype)
        last = out.take([-1], axis=self.axis) if out.shape[self.axis] else out
        return out, last


class _Offset:
    """Combine a locally scanned tile with the last slices of the tiles before it."""

    def __init__(self, ufunc: np.ufunc, dtype: np.dtype):
        self.ufunc, self.dtype = ufunc, dtype

    def __call__(self, local: np.ndarray, *lasts: np.ndarray) -> np.ndarray:
        if not lasts:
            return local
        carry = functools.reduce(self.ufunc, lasts)
        return self.ufunc(carry, local).astype(self.dtype, copy=False)


@register
class Scan(Expr):
    """Cumulative ``ufunc`` along ``axis``, computed in the input's tiling."""

    def __init__(self, child: Expr, ufunc: np.ufunc, axis: int, dtype: Any) -> None:
        super().__init__(child.shape, dtype, [child])
        self.ufunc, self.axis = ufunc, axis

    @property
    def label(self) -> str:
        return f"scan({self.ufunc.__name__})"

    def program_node(self, p: Program, ins: list[int]) -> int:
        return p.scan(ins[0], self.axis, self.dtype.itemsize, self.label)

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling:
        """The input's cuts (its tiles scan where they are)."""
        t_in = tiling_of(self.children[0])
        return Tiling((1,) * len(self.shape)) if t_in.replicated else Tiling(t_in.cuts)

    def lower(self, ctx: Lowering) -> None:
        child = self.children[0]
        t_in = ctx.tiling(child)
        nw = ctx.backend.nworkers
        # the input's tiles; a view's follow its base's (an offset or strided view too),
        # so that every local scan reads its own worker's data (spartan.frontend.taskgrid)
        grid = input_grid(ctx, child)
        local_task = _LocalScan(self.ufunc, self.axis, self.dtype)
        local = {}
        for idx, box, w in grid.tiles():
            keys = [(self.uid, "local", idx), (self.uid, "last", idx)]
            ctx.backend.submit(w, local_task, [ctx.region(child, box, w)], keys)
            local[idx] = (keys, w, box)
        planned = ctx.tiling(self)
        if t_in.replicated and planned.replicated:
            # one tile on worker 0 stands for the replicated result (nothing re-tiled)
            tiles = Tiles(ctx.backend, self.uid, self.shape, self.dtype, Tiling(grid.cuts))
            out_keys = {idx: tiles.key(idx) for idx in local}
        elif not planned.replicated and grid == Grid.of(planned, self.shape, nw):
            tiles = ctx.new_tiles(self)  # scanned in the planned tiles themselves
            out_keys = {idx: tiles.key(idx) for idx in local}
        else:  # scanned in the grid, then re-tiled below
            tiles = None
            out_keys = {idx: (self.uid, "grid", idx) for idx in local}
        offset = _Offset(self.ufunc, self.dtype)
        for idx, (keys, w, box) in local.items():
            inputs = [keys[0]]
            for k in range(idx[self.axis]):
                prev = idx[: self.axis] + (k,) + idx[self.axis + 1 :]
                (_, last_key), pw, pbox = local[prev]
                shape = list(box_shape(box))
                shape[self.axis] = 1
                full = tuple(slice(None) for _ in shape)
                inputs.append(Region(tuple(shape), self.dtype, (Piece(pw, last_key, (), full),)))
            ctx.backend.submit(w, offset, inputs, [out_keys[idx]])
        ctx.backend.delete([k for keys, _, _ in local.values() for k in keys])
        if tiles is not None:
            self.data = tiles
            return
        out = ctx.new_tiles(self)
        for oidx, obox, w in out.placements():
            ps = []
            for idx, inter in grid.overlapping(obox):
                glo = [lo for lo, _ in grid.box(idx)]
                src = tuple(slice(lo - g, hi - g) for (lo, hi), g in zip(inter, glo))
                dst = tuple(slice(lo - o, hi - o) for (lo, hi), (o, _) in zip(inter, obox))
                ps.append(Piece(grid.worker(idx), out_keys[idx], src, dst))
            region = Region(box_shape(obox), self.dtype, tuple(ps))
            ctx.backend.submit(w, identity, [region], [out.key(oidx)])
        ctx.backend.delete(list(out_keys.values()))
        self.data = out


def ufunc_accumulate(
    ufunc: np.ufunc, a: Any, axis: Any = 0, dtype: Any = None, out: Any = None
) -> Array:
    """``ufunc.accumulate(a, axis, dtype, out)`` lazily, with NumPy's results.

    A ufunc NumPy reorders (``add``, ``maximum``...) scans each tile and carries the
    last slices of the tiles before it; one it does not (``subtract``, ``divide``...)
    scans whole lanes along ``axis``, in NumPy's order (the array is re-cut so that no
    tile cuts ``axis``).

    >>> sp.subtract.accumulate(sp.arange(4)).to_numpy()
    array([ 0, -1, -3, -6])
    """
    from spartan.frontend.creation import asarray
    from spartan.frontend.reductions import _out, _reorderable, _whole_along, single_axis

    if ufunc.signature is not None:
        raise RuntimeError("Reduction not defined on ufunc with signature")
    x = asarray(a)
    with np.errstate(all="ignore"):  # NumPy's errors for ufuncs that cannot accumulate
        rdtype = ufunc.accumulate(np.ones(1, x.dtype), dtype=dtype).dtype
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    ax = single_axis(axis, x.ndim, "accumulate")
    try:
        ordered = not _reorderable(ufunc, x.dtype, dtype)
    except TypeError:
        ordered = True
    if ordered and x.size:
        x = _whole_along(x, (ax,))
    return _out(Array(Scan(x._expr, ufunc, ax, rdtype)), out)


def _cumulative(ufunc: np.ufunc, a: Any, axis: Any, dtype: Any, out: Any) -> Array:
    from spartan.frontend.creation import asarray

    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    elif x.ndim == 0:  # a scalar is one element to cumsum/cumprod (not to ufunc.accumulate)
        x = x.reshape(1)
    if dtype is None and (np.issubdtype(x.dtype, np.integer) or x.dtype == bool):
        dtype = np.result_type(x.dtype, np.uint if x.dtype.kind == "u" else np.int_)
    return ufunc_accumulate(ufunc, x, axis, dtype, out)


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """Cumulative sum (see :func:`numpy.cumsum`)."""
    return _cumulative(np.add, a, axis, dtype, out)


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    return _cumulative(np.multiply, a, axis, dtype, out)


def diff(
    a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue
) -> Array:
    """``n``-th discrete difference along ``axis``: shifted views subtracted (one fused map)."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import broadcast_to, concatenate
    from spartan.frontend.reductions import normalize_axes

    x = asarray(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return x
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    (ax,) = normalize_axes(axis, x.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = asarray(extra)
        if e.ndim == 0:
            e = broadcast_to(e, tuple(1 if d == ax else m for d, m in enumerate(x.shape)))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        x = concatenate([p for p in (parts[0], x, parts[1]) if p is not None], axis=ax)
    op = np.not_equal if x.dtype == bool else np.subtract
    for _ in range(n):
        m = x.shape[ax]
        hi = tuple(slice(1, None) if d == ax else slice(None) for d in range(x.ndim))
        lo = tuple(slice(None, max(m - 1, 0)) if d == ax else slice(None) for d in range(x.ndim))
        x = op(x[hi], x[lo])
    return x


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Array:
    """Differences between consecutive elements of the flattened array."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import concatenate

    x = asarray(ary).ravel()
    d = diff(x)
    parts = [asarray(to_begin).ravel().astype(d.dtype)] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(asarray(to_end).ravel().astype(d.dtype))
    return concatenate(parts) if len(parts) > 1 else d


def _array_api_cumulative(
    scan: Any, start: Any, x: Any, axis: Any, dtype: Any, include_initial: bool
) -> Array:
    """The array API's cumulative functions: ``scan`` along ``axis``, optionally led by
    the operation's identity (``start``: zeros or ones)."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import concatenate

    a = asarray(x)
    if axis is None:
        if a.ndim > 1:
            raise ValueError("axis must be specified for arrays of more than one dimension")
        axis = 0
    out = scan(a, axis=axis, dtype=dtype)
    if include_initial:
        ax = axis % a.ndim
        shape = tuple(1 if d == ax else m for d, m in enumerate(a.shape))
        out = concatenate([start(shape, dtype=out.dtype), out], axis=ax)
    return out


def cumulative_sum(
    x: Any,
    /,
    *,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    include_initial: bool = False,
) -> Array:
    """The array API cumulative sum (``include_initial`` prepends the zero).

    >>> sp.cumulative_sum(sp.asarray([1, 2, 3]), include_initial=True).to_numpy()
    array([0, 1, 3, 6])
    """
    from spartan.frontend.creation import zeros
    from spartan.frontend.reductions import _out

    return _out(_array_api_cumulative(cumsum, zeros, x, axis, dtype, include_initial), out)


def cumulative_prod(
    x: Any,
    /,
    *,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    include_initial: bool = False,
) -> Array:
    """The array API cumulative product (``include_initial`` prepends the one).

    >>> sp.cumulative_prod(sp.asarray([1, 2, 3]), include_initial=True).to_numpy()
    array([1, 1, 2, 6])
    """
    from spartan.frontend.creation import ones
    from spartan.frontend.reductions import _out

    return _out(_array_api_cumulative(cumprod, ones, x, axis, dtype, include_initial), out)
