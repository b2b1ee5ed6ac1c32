"""Evaluated arrays: the tiles of one array, where they live, and how to read regions.

A :class:`Tiles` names its blocks ``(uid, tile index)``; the worker of each tile is the
pure function :meth:`Tiling.worker_of`, and a replicated array has one block on every
worker. :func:`pieces` turns a strided selection of the array into the
:class:`~spartan.backend.Piece` list a task assembles its input from.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections.abc import Iterator, Sequence

import numpy as np

from spartan.backend.base import Backend, Piece
from spartan.tiling import Box, Tiling, piece_of

Selection = tuple[tuple[int, int, int, bool], ...]  # per axis (start, count, step, dropped)


class Tiles:
    """The blocks of one evaluated array; blocks are deleted when this is collected."""

    def __init__(
        self, backend: Backend, uid: int, shape: tuple[int, ...], dtype: np.dtype, tiling: Tiling
    ) -> None:
        self.backend = backend
        self.uid = uid
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.tiling = tiling
        self.nworkers = backend.nworkers
        keys = [self.key(idx) for idx in tiling.tile_indices()]
        # not at interpreter exit: the workers (and Ray) may already be gone then
        weakref.finalize(self, _release, weakref.ref(backend), keys).atexit = False

    def key(self, idx: Sequence[int]) -> tuple:
        return (self.uid, tuple(idx))

    def owner(self, idx: Sequence[int], reader: int = 0) -> int:
        return _owner(self.tiling, idx, self.nworkers, reader)

    def tiles(self) -> Iterator[tuple[tuple[int, ...], Box, int]]:
        """``(index, box, worker)`` of every tile (a replicated array: worker 0's copy)."""
        for idx, box in self.tiling.tiles(self.shape):
            yield idx, box, self.owner(idx)

    def placements(self) -> Iterator[tuple[tuple[int, ...], Box, int]]:
        """Every stored block: each tile once, a replicated array once per worker."""
        if self.tiling.replicated:
            idx = (0,) * len(self.shape)
            box = self.tiling.tile_bounds(self.shape, idx)
            for w in range(self.nworkers):
                yield idx, box, w
        else:
            yield from self.tiles()


def _owner(tiling: Tiling, idx: Sequence[int], nworkers: int, reader: int) -> int:
    """The worker holding tile ``idx``; a replicated array's copy on ``reader``."""
    return reader if tiling.replicated else tiling.worker_of(idx, nworkers)


def _release(backend_ref: weakref.ref, keys: list) -> None:
    backend = backend_ref()
    if backend is not None and backend.nworkers:
        try:
            # queued, not deleted here: a finalizer runs in any thread, at any allocation,
            # maybe inside the backend's own walk over the maps a delete changes
            backend.delete_later(keys)
        except Exception:  # noqa: BLE001 -- interpreter shutdown: workers already gone
            return


def axis_runs(
    start: int, count: int, step: int, n: int, cuts: int
) -> list[tuple[int, int, int, int]]:
    """Tiles along one axis holding elements ``start + step*k``: (piece, lo, k_lo, k_hi)."""
    if count <= 0:
        return []
    last = start + step * (count - 1)
    first_piece, last_piece = (
        piece_of(min(start, last), n, cuts),
        piece_of(max(start, last), n, cuts),
    )
    runs = []
    for p in range(first_piece, last_piece + 1):
        tlo, thi = p * n // cuts, (p + 1) * n // cuts
        if step > 0:
            k_lo = max(0, -((start - tlo) // step))  # ceil((tlo - start) / step)
            k_hi = min(count, (thi - 1 - start) // step + 1)
        else:
            s = -step
            k_lo = max(0, (start - thi) // s + 1)
            k_hi = min(count, (start - tlo) // s + 1)
        if k_lo < k_hi:
            runs.append((p, tlo, k_lo, k_hi))
    return runs


def pieces(
    tiles: Tiles,
    sel: Selection,
    perm: tuple[int, ...] | None,
    out_axes: Sequence[int | None],
    reader: int,
) -> list[Piece]:
    """Pieces for selection ``sel`` of ``tiles``, laid out as a region whose axes are
    ``out_axes`` (a base axis per region axis, None for a new unit axis)."""
    if not tiles.backend.nworkers:
        raise RuntimeError(
            "this array was computed by a spartan session that has been shut down; "
            "use save_checkpoint/load_checkpoint to carry arrays between sessions"
        )
    layout = _layout(tiles.shape, tiles.tiling, tiles.nworkers, sel, tuple(out_axes), reader)
    uid = tiles.uid
    return [Piece(owner, (uid, idx), src, dst, perm) for owner, idx, src, dst in layout]


@functools.lru_cache(maxsize=4096)
def _layout(
    shape: tuple[int, ...],
    tiling: Tiling,
    nworkers: int,
    sel: Selection,
    out_axes: tuple[int | None, ...],
    reader: int,
) -> tuple[tuple[int, tuple[int, ...], tuple, tuple], ...]:
    """:func:`pieces` of any array of this shape and tiling: ``(owner, tile index, src,
    dst)`` each. A loop reads arrays laid out alike again and again (a CG solve read
    ~700 regions, worked out anew each time in a tenth of the driver's time)."""
    cuts = (1,) * len(shape) if tiling.replicated else tiling.cuts
    per_axis = [
        axis_runs(start, count, step, n, c)
        for (start, count, step, _), n, c in zip(sel, shape, cuts)
    ]
    out = []
    for combo in itertools.product(*per_axis):
        idx = tuple(run[0] for run in combo)
        src = []
        for (start, _count, step, dropped), (_, tlo, k_lo, k_hi) in zip(sel, combo):
            first = start + step * k_lo - tlo
            if dropped:
                src.append(first)
                continue
            stop = first + step * (k_hi - k_lo)
            src.append(slice(first, stop if stop >= 0 else None, step))
        dst = tuple(slice(0, 1) if b is None else slice(combo[b][2], combo[b][3]) for b in out_axes)
        out.append((_owner(tiling, idx, nworkers, reader), idx, tuple(src), dst))
    return tuple(out)
