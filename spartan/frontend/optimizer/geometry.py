"""Vectorized tile geometry: how many elements of which regions sit on which worker.

Everything the cost profiles need reduces to two counts, done with NumPy over all
tiles at once:

* :func:`strided_read_bytes` -- bytes a list of strided reads (one per task, in a root
  array's coordinates) fetch from tiles on other workers. For unit strides it equals
  :func:`spartan.tiling.read_bytes`.
* :func:`cross_overlap` -- elements shared by two lists of boxes on different workers
  (partials sent to output tiles, re-tiling from a view's layout).

A *layout* is ``(boxes, workers)``: ``boxes`` of shape ``(n, ndim, 2)`` with ``[lo, hi)``
per axis, ``workers`` of shape ``(n,)``.

>>> t = Tiling.row((4, 4), 2)
>>> reads = layout((4, 4), Tiling.column((4, 4), 2), 2)
>>> strided_read_bytes((4, 4), 8, t, selections(reads[0]), reads[1], 2)
64
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Tiling

Layout = tuple[np.ndarray, np.ndarray]


@lru_cache(maxsize=4096)
def _layout(shape: tuple[int, ...], tiling: Tiling, nworkers: int) -> Layout:
    nd = len(shape)
    if tiling.replicated:
        boxes = np.zeros((nworkers, nd, 2), dtype=np.int64)
        boxes[:, :, 1] = shape
        return boxes, np.arange(nworkers, dtype=np.int64)
    idx = np.indices(tiling.cuts, dtype=np.int64).reshape(nd, tiling.ntiles).T
    n = np.asarray(shape, dtype=np.int64)
    c = np.asarray(tiling.cuts, dtype=np.int64)
    boxes = np.stack([idx * n // c, (idx + 1) * n // c], axis=-1)
    workers = np.arange(tiling.ntiles, dtype=np.int64) * nworkers // tiling.ntiles
    boxes.flags.writeable = False
    workers.flags.writeable = False
    return boxes, workers


def clear_layouts() -> None:
    _layout.cache_clear()
    _bounds.cache_clear()


def layout(shape: Sequence[int], tiling: Tiling, nworkers: int) -> Layout:
    """Every tile of an array tiled ``tiling`` (a replicated array: one copy per worker)."""
    return _layout(shape if type(shape) is tuple else tuple(shape), tiling, nworkers)


def induced_tiling(vm: ViewMap, root_shape: Sequence[int], root: Tiling) -> Tiling:
    """The tiling a view's readers see: the root's cuts on axes the view takes whole
    (unit step), one piece on the others (the frontend's rule)."""
    if root.replicated:
        return Tiling.duplicated(vm.shape)
    cuts = []
    for a in vm.axes:
        if a.base is not None and abs(a.step) == 1 and a.count == root_shape[a.base]:
            cuts.append(root.cuts[a.base])
        else:
            cuts.append(1)
    return Tiling(tuple(cuts))


def selections(boxes: np.ndarray, vm: ViewMap | None = None) -> np.ndarray:
    """Strided root selections ``(n, root_ndim, 3)`` = (first, step, count) of view boxes."""
    lo, hi = boxes[..., 0], boxes[..., 1]
    if vm is None:
        sel = np.empty(boxes.shape[:-1] + (3,), dtype=np.int64)
        sel[..., 0] = lo
        sel[..., 1] = 1
        np.subtract(hi, lo, out=sel[..., 2])
        return sel
    sel = np.zeros((len(boxes), vm.base_ndim, 3), dtype=np.int64)
    sel[:, :, 1] = 1
    sel[:, :, 2] = 1
    for k, a in enumerate(vm.axes):
        if a.base is not None:
            sel[:, a.base, 0] = a.start + a.step * lo[:, k]
            sel[:, a.base, 1] = a.step
            sel[:, a.base, 2] = hi[:, k] - lo[:, k]
    for ax, idx in vm.fixed:
        sel[:, ax, 0] = idx
    return sel


def _ceil_div(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    return -((-a) // b)


def _strided_counts(
    first: np.ndarray, step: np.ndarray, count: np.ndarray, bounds: np.ndarray
) -> np.ndarray:
    """``(r, c)``: terms ``first + i*step`` (0 <= i < count) in each piece ``[b_j, b_j+1)``."""
    if (step == 1).all():  # plain intervals, the common case
        lo, hi = first[:, None], (first + count)[:, None]
        inside = np.minimum(hi, bounds[None, 1:]) - np.maximum(lo, bounds[None, :-1])
        return np.maximum(inside, 0)
    neg = step < 0
    first = np.where(neg, first + (count - 1) * step, first)
    step = np.maximum(np.abs(step), 1)[:, None]
    below = np.minimum(
        np.maximum(_ceil_div(bounds[None, :] - first[:, None], step), 0), count[:, None]
    )
    return below[:, 1:] - below[:, :-1]


def overlap_with_tiles(root_shape: Sequence[int], tiling: Tiling, sel: np.ndarray) -> np.ndarray:
    """``(r, ntiles)`` elements of each strided selection inside each tile (C order)."""
    r = len(sel)
    total = None
    for ax, (n, c) in enumerate(zip(root_shape, tiling.cuts)):
        if c == 1:  # one piece: every selected element (selections lie inside the array)
            counts = sel[:, ax, 2:3]
        else:
            counts = _strided_counts(sel[:, ax, 0], sel[:, ax, 1], sel[:, ax, 2], _bounds(n, c))
        total = counts if total is None else (total[:, :, None] * counts[:, None, :]).reshape(r, -1)
    return np.ones((r, 1), dtype=np.int64) if total is None else total


@lru_cache(maxsize=4096)
def _bounds(n: int, c: int) -> np.ndarray:
    return np.arange(c + 1, dtype=np.int64) * n // c


def strided_read_bytes(
    root_shape: Sequence[int],
    itemsize: int,
    tiling: Tiling,
    sel: np.ndarray,
    readers: np.ndarray,
    nworkers: int,
) -> int:
    """Bytes the readers fetch from tiles on other workers (0 from a replicated array)."""
    if tiling.replicated or len(sel) == 0:
        return 0
    ov = overlap_with_tiles(root_shape, tiling, sel)
    owners = layout(root_shape, tiling, nworkers)[1]
    remote = readers[:, None] != owners[None, :]
    return int(ov[remote].sum()) * itemsize


def cross_overlap(a: Layout, b: Layout) -> int:
    """Elements shared by boxes of ``a`` and boxes of ``b`` that sit on different workers."""
    (ba, wa), (bb, wb) = a, b
    if len(wa) == 0 or len(wb) == 0:
        return 0
    remote = wa[:, None] != wb[None, :]
    ov = None
    for d in range(ba.shape[1]):
        side = np.minimum(ba[:, None, d, 1], bb[None, :, d, 1])
        side -= np.maximum(ba[:, None, d, 0], bb[None, :, d, 0])
        np.maximum(side, 0, out=side)
        ov = side if ov is None else ov * side
    if ov is None:  # scalars: one element each
        return int(remote.sum())
    return int(ov[remote].sum())
