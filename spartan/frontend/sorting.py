"""Distributed sample sort, and the sorts, searches and partitions built on it.

:class:`SampleSort` sorts a 1-d array without gathering it:

1. each tile sorts its run locally (stable, carrying each element's global index)
   and sends ``S`` regular samples to worker 0;
2. worker 0 picks ``P - 1`` splitters from the ``P * S`` samples;
3. each tile cuts its sorted run at the splitters into ``P`` buckets;
4. bucket ``j`` of every tile goes to the owner of output piece ``j``, which merges;
5. the merged buckets' sizes come back to the driver (``P`` integers, the one forced
   step) and each output tile reads the bucket runs it covers (the rebalance).

Keys are ``(value, global index)`` pairs, so ties split evenly between buckets and the
order is stable: ``argsort`` equals NumPy's ``kind="stable"``. NaNs sort last.

>>> sp.sort(sp.asarray([3.0, 1.0, np.nan, 2.0]))
array([ 1.,  2.,  3., nan])
>>> sp.argsort(sp.asarray([2, 1, 2, 1]))    # stable: ties keep their order
array([1, 3, 0, 2])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import to_host
from spartan.frontend import small
from spartan.frontend.alongaxis import along_axes
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.expr import Expr, register
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.lowering import Lowering, identity
from spartan.frontend.manipulation import flip, moveaxis
from spartan.frontend.map import Map
from spartan.frontend.reductions import normalize_axes
from spartan.tiling import Tiling

#: samples per tile and output piece (oversampling evens out the buckets)
OVERSAMPLE = 8


def record_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype([("v", dtype), ("i", np.int64)])


class _LocalSort:
    """Sort one tile (as (value, global index) records when ``with_index``); pick
    regular samples."""

    def __init__(self, lo: int, nsamples: int, with_index: bool):
        self.lo, self.nsamples, self.with_index = lo, nsamples, with_index

    def __call__(self, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.with_index:
            block = to_host(block)  # (records stay on the host: CuPy has no structured dtypes)
            order = np.argsort(block, kind="stable")
            run = np.empty(block.shape[0], record_dtype(block.dtype))
            run["v"] = block[order]
            run["i"] = order + self.lo
        else:
            run = np.sort(block)
        if run.size == 0:
            return run, run
        pick = np.linspace(0, run.size - 1, min(self.nsamples, run.size)).astype(np.intp)
        return run, run[pick]


class _Splitters:
    def __init__(self, parts: int, with_index: bool):
        self.parts, self.with_index = parts, with_index

    def __call__(self, *samples: np.ndarray) -> np.ndarray:
        allsamp = np.concatenate(samples)
        if self.with_index:
            allsamp = allsamp[np.lexsort((allsamp["i"], allsamp["v"]))]
        else:
            allsamp = np.sort(allsamp)
        if allsamp.size == 0:
            return allsamp
        pick = (np.arange(1, self.parts) * allsamp.size) // self.parts
        return allsamp[pick]


def _cut(run: np.ndarray, split: np.ndarray, with_index: bool) -> np.ndarray:
    """Positions in ``run`` of the first element ``>=`` each splitter ((value, index)
    order for records, so ties are split between buckets too)."""
    if not with_index:
        return np.searchsorted(run, split, "left")
    v, i = run["v"], run["i"]
    lo = np.searchsorted(v, split["v"], "left")
    hi = np.searchsorted(v, split["v"], "right")
    return np.array(
        [a + np.searchsorted(i[a:b], s) for a, b, s in zip(lo, hi, split["i"])], dtype=np.intp
    )


class _Partition:
    def __init__(self, parts: int, with_index: bool):
        self.parts, self.with_index = parts, with_index

    def __call__(self, run: np.ndarray, split: np.ndarray) -> Any:
        cuts = _cut(run, split, self.with_index) if split.size else []
        bounds = [0, *cuts, run.size]
        bounds += [run.size] * (self.parts + 1 - len(bounds))
        buckets = tuple(run[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
        return buckets[0] if self.parts == 1 else buckets


class _Merge:
    """Merge the sorted runs a bucket received, in tile order.

    Tiles hold increasing ranges of global indices, so among equal values the
    concatenation is already in index order: a stable sort on the values alone (a
    run-detecting merge sort) gives (value, index) order."""

    def __init__(self, with_index: bool):
        self.with_index = with_index

    def __call__(self, *buckets: np.ndarray) -> tuple[np.ndarray, int]:
        cat = np.concatenate(buckets)
        if self.with_index:
            return cat[np.argsort(cat["v"], kind="stable")], int(cat.size)
        return np.sort(cat, kind="stable"), int(cat.size)


@register
class SampleSort(Expr):
    """A 1-d array sorted: its values, or ``(value, index)`` records when
    ``with_index`` (see the module docstring).

    Communication: ``P*S`` sample records to one worker, ``P - 1`` splitters to every
    tile, then each record crosses the network at most twice (to its bucket, then to
    its output tile): at most ``2 * n * (itemsize + 8)`` bytes, plus ``P`` integers to
    the driver.
    """

    def __init__(self, child: Expr, with_index: bool = True) -> None:
        if child.ndim != 1:
            raise ValueError("SampleSort sorts 1-d arrays")
        dtype = record_dtype(child.dtype) if with_index else child.dtype
        super().__init__(child.shape, dtype, [child])
        self.with_index = with_index

    @property
    def label(self) -> str:
        return "sample_sort"

    def lower(self, ctx: Lowering) -> None:
        child = self.children[0]
        be, nw, n = ctx.backend, ctx.backend.nworkers, self.shape[0]
        t_in = ctx.tiling(child)
        parts = t_in.cuts[0] if not t_in.replicated else nw
        grid = Tiling.row(self.shape, parts)
        parts = grid.ntiles
        runs, samples, owners = [], [], []
        for idx, box in grid.tiles(self.shape):
            w = grid.worker_of(idx, nw)
            keys = [(self.uid, "run", idx), (self.uid, "sample", idx)]
            task = _LocalSort(box[0][0], OVERSAMPLE * parts, self.with_index)
            be.submit(w, task, [ctx.region(child, box, w)], keys)
            runs.append(keys[0])
            samples.append(keys[1])
            owners.append(w)
        split = (self.uid, "split")
        be.submit(0, _Splitters(parts, self.with_index), samples, [split])
        buckets = [[(self.uid, "bucket", i, j) for j in range(parts)] for i in range(parts)]
        for i, (run, w) in enumerate(zip(runs, owners)):
            be.submit(w, _Partition(parts, self.with_index), [run, split], buckets[i])
        merged, handles = [], []
        for j in range(parts):
            key = (self.uid, "merged", j)
            ins = [buckets[i][j] for i in range(parts)]
            handles.append(
                be.submit(owners[j], _Merge(self.with_index), ins, [key], want_result=True)
            )
            merged.append(key)
        counts = be.results(handles)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            lo, hi = box[0] if box else (0, n)
            ps = []
            for key, pw, a, b in zip(merged, owners, starts[:-1], starts[1:]):
                s, e = max(lo, a), min(hi, b)
                if s < e:
                    ps.append(Piece(pw, key, (slice(s - a, e - a),), (slice(s - lo, e - lo),)))
            be.submit(w, identity, [Region((hi - lo,), self.dtype, tuple(ps))], [tiles.key(idx)])
        be.delete(runs + samples + [split] + [k for row in buckets for k in row] + merged)
        self.data = tiles


def _field(name: str, rec: np.ndarray) -> np.ndarray:
    return rec[name]


def sorted_records(x: Array) -> Array:
    """The records ``(value, index)`` of a 1-d array in sorted order."""
    return Array(SampleSort(x._expr))


def sorted_values(x: Array) -> Array:
    """A 1-d array sorted (the sample sort without carrying indices)."""
    return Array(SampleSort(x._expr, with_index=False))


def _records_field(rec: Array, name: str, dtype: Any) -> Array:
    fn = functools.partial(_field, name)
    return Array(Map(fn, [rec._expr], rec.shape, dtype, name=f"field({name})"))


def _lanes(fn: Any, x: Array, ax: int, dtype: Any, name: str) -> Array:
    """``fn`` (on ``(m, n)`` blocks, along axis 1) over the lanes of ``x`` along ``ax``,
    with the lane axis put back where it was."""
    out = along_axes(fn, x, (ax,), (x.shape[ax],), dtype, name=name)
    return out if ax == x.ndim - 1 else moveaxis(out, -1, ax)


def _check_kind(kind: Any) -> None:
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _sort_np(a: np.ndarray, axis: Any, kind: Any, stable: Any) -> np.ndarray:
    return np.sort(a, axis=axis, kind=kind, stable=stable)


def _sort_descending_np(a: np.ndarray, axis: Any, kind: Any, stable: Any) -> np.ndarray:
    """NumPy's stable sort in descending order (what :func:`sort` runs in the driver)."""
    if axis is None:
        a, axis = a.ravel(), 0
    return np.flip(np.sort(np.flip(a, axis), axis=axis, kind=kind, stable=stable), axis)


def _argsort_descending_np(a: np.ndarray, axis: Any, kind: Any, stable: Any) -> np.ndarray:
    """NumPy's stable argsort in descending order (what :func:`argsort` runs in the
    driver): the ascending sort of the reversed lanes keeps ties in their order."""
    if axis is None:
        a, axis = a.ravel(), 0
    if a.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    if kind is None and stable is None:
        stable = True  # the standard's default, and what the distributed argsort does
    last = a.shape[axis] - 1
    return last - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind=kind, stable=stable), axis)


def sort(
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
    descending: bool = False,
) -> Array:
    """Sorted copy (see :func:`numpy.sort`): a sample sort for 1-d arrays and
    ``axis=None``, one ``join_update`` over the lanes otherwise.

    ``descending=True`` (the array API standard's keyword, which NumPy lacks) sorts
    from largest to smallest, NaNs first, ties in their order (it reverses the ascending
    sort of the reversed lanes, as array-api-compat does for NumPy).

    >>> sp.sort(sp.asarray([3, 1, 2])).to_numpy()
    array([1, 2, 3])
    >>> sp.sort(sp.asarray([3, 1, 2]), descending=True).to_numpy()
    array([3, 2, 1])
    """
    _check_kind(kind)
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    # a small array is sorted by NumPy in the driver (spartan.sort's own wrapper does it
    # too, but hands descending=, which NumPy lacks, to this function)
    driver = _sort_descending_np if descending else _sort_np
    out = small.call(driver, (a, axis, kind, stable), {})
    if out is not small.NO:
        return out
    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    (ax,) = normalize_axes(axis, x.ndim)
    if descending:
        return flip(sort(flip(x, ax), ax), ax)
    if x.ndim == 1:
        return sorted_values(x)
    return _lanes(functools.partial(np.sort, axis=1), x, ax, x.dtype, "sort")


def _argsort_lanes(m: np.ndarray) -> np.ndarray:
    return np.argsort(m, axis=1, kind="stable")


def argsort(
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
    descending: bool = False,
) -> Array:
    """Indices that sort the array; ties keep their order (NumPy's ``kind="stable"``).

    ``descending=True`` (the array API standard's keyword, which NumPy lacks) gives the
    indices of a sort from largest to smallest, ties still in their order.

    >>> sp.argsort(sp.asarray([3, 1, 3]), descending=True).to_numpy()
    array([0, 2, 1])
    """
    _check_kind(kind)
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    # a small array is sorted by NumPy in the driver (spartan.argsort's wrapper does it
    # too, but hands descending=, which NumPy lacks, to this function)
    if descending:
        out = small.call(_argsort_descending_np, (a, axis, kind, stable), {})
    else:
        out = small.call(_argsort_driver, (a, axis, kind), {"stable": stable})
    if out is not small.NO:
        return out
    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    (ax,) = normalize_axes(axis, x.ndim)
    if descending:
        return (x.shape[ax] - 1) - flip(argsort(flip(x, ax), ax), ax)
    if x.ndim == 1:
        return _records_field(sorted_records(x), "i", np.intp)
    return _lanes(_argsort_lanes, x, ax, np.intp, "argsort")


def _argsort_driver(
    a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None
) -> np.ndarray:
    """NumPy's argsort as spartan's runs it on a small array: stable unless a ``kind`` or
    ``stable=False`` asks otherwise, so that ties come out in the order the distributed
    argsort gives them (and the array API standard's default, ``stable=True``)."""
    if kind is None and stable is None:
        stable = True
    return np.argsort(a, axis=axis, kind=kind, order=order, stable=stable)


argsort.driver_numpy = _argsort_driver  # type: ignore[attr-defined]


def _kth(kth: Any, n: int) -> np.ndarray:
    k = np.atleast_1d(np.asarray(kth))
    if k.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if np.any((k < -n) | (k >= n)):
        raise ValueError(f"kth(={int(k[(k < -n) | (k >= n)][0])}) out of bounds ({n})")
    return k % n if n else k


def partition(
    a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None
) -> Array:
    """Elements rearranged so the ``kth`` ones sit where a sort would put them.

    1-d arrays are sorted (a sorted array is a valid partition); n-d lanes use NumPy's
    partition per lane, so they equal NumPy's result exactly."""
    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    k = _kth(kth, x.shape[ax])
    if x.ndim == 1:
        return sort(x)
    return _lanes(functools.partial(np.partition, kth=k, axis=1), x, ax, x.dtype, "partition")


def argpartition(
    a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None
) -> Array:
    """Indices that partition the array (see :func:`partition`)."""
    x = asarray(a)
    if axis is None:
        x, axis = x.ravel(), 0
    (ax,) = normalize_axes(axis, x.ndim)
    k = _kth(kth, x.shape[ax])
    if x.ndim == 1:
        return argsort(x)
    fn = functools.partial(np.argpartition, kth=k, axis=1)
    return _lanes(fn, x, ax, np.intp, "argpartition")


class _CountBelow:
    """``f_join`` of :func:`searchsorted`: elements of a run of ``a`` before each value."""

    def __init__(self, side: str):
        self.side = side

    def __call__(self, extents, run: np.ndarray, v: np.ndarray):
        return [((), np.searchsorted(run, v, self.side))]


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Insertion points of ``v`` into the sorted 1-d ``a``.

    Each tile of ``a`` counts its elements before each value; the counts are summed
    (a ``join_update`` with ``add``). Communication: ``v`` to every group of ``a``,
    and one count array per group.
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    x = asarray(a)
    if x.ndim != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        from spartan.frontend.fancy import take

        x = take(x, sorter)
    vals = asarray(v)
    flat = vals.reshape(1) if vals.ndim == 0 else vals  # join_update locations need an axis
    expr = JoinUpdate(
        _CountBelow(side),
        np.add,
        [x._expr, flat._expr],
        [0, -1],
        flat.shape,
        np.intp,
        name="searchsorted",
    )
    return Array(expr).reshape(()) if vals.ndim == 0 else Array(expr)


def lexsort(keys: Any, axis: int = -1) -> Array:
    """Indices sorting by several 1-d keys, the last one primary: stable sample-sort
    passes from the least significant key up (a least-significant-digit sort)."""
    from spartan.frontend.fancy import take

    ks = [asarray(k) for k in (keys if isinstance(keys, (list, tuple)) else list(asarray(keys)))]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k.shape != ks[0].shape for k in ks):
        raise ValueError("all keys need to be the same shape")
    if ks[0].ndim != 1:
        raise ValueError("spartan.lexsort takes 1-d keys")
    idx = argsort(ks[0])
    for k in ks[1:]:
        idx = take(idx, argsort(take(k, idx)))
    return idx


def sort_complex(a: Any) -> Array:
    """Sorted as complex numbers (real part first, then imaginary)."""
    x = asarray(a)
    target = np.result_type(x.dtype, np.complex64)
    if x.dtype.kind in "biu" and x.dtype.itemsize > 2:
        target = np.complex128
    return sort(x.astype(target))
