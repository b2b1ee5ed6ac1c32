"""Chunked storage under a stored array: what reading it in a given tiling costs.

A stored array (Zarr, HDF5) is read in whole storage chunks: a task whose tile covers
part of a chunk reads (and decompresses) all of it, so a chunk split between tiles is
read once per tile that touches it. :class:`StorageChunks` is that fact as a value the
optimizer can cost: the bytes of chunks read beyond one read of each (what a misaligned
tiling wastes), and the cut of an axis that meets the chunk boundaries.

>>> s = StorageChunks((ChunkAxis(0, 1, 25),), chunk_bytes=200, pieces=4)
>>> s.extra_reads((100,), Tiling.row((100,), 4), nworkers=2)   # tiles of 25: aligned
0
>>> s.extra_reads((100,), Tiling.row((100,), 3), nworkers=3)   # 33/34: two chunks split
400
>>> s.aligned((100,), Tiling.row((100,), 6), nworkers=2)
Tiling(cuts=(4,), replicated=False)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spartan.tiling import Tiling

#: cut counts tried around the wanted one when looking for a chunk-aligned cut
_ALIGN_TRIES = 64


@dataclass(frozen=True)
class ChunkAxis:
    """An axis of a stored array or of a view of one: element ``j`` is element
    ``start + step * j`` of a stored axis cut into chunks of ``chunk`` elements."""

    start: int
    step: int
    chunk: int

    def chunk_of(self, j: int) -> int:
        return (self.start + self.step * j) // self.chunk

    def touched(self, lo: int, hi: int) -> int:
        """Chunks holding elements ``lo:hi`` (a step under a chunk skips none)."""
        if hi <= lo:
            return 0
        if abs(self.step) >= self.chunk:
            return hi - lo
        return abs(self.chunk_of(hi - 1) - self.chunk_of(lo)) + 1

    def splits(self, j: int) -> bool:
        """Whether a tile boundary before element ``j`` cuts a chunk in two."""
        return self.chunk_of(j - 1) == self.chunk_of(j)


@dataclass(frozen=True)
class StorageChunks:
    """How an array's elements lie in storage chunks: a :class:`ChunkAxis` per axis
    (None for a unit axis a view added), the bytes of one chunk as stored uncompressed,
    and ``pieces``, the tile count the plan's tilings are cut into
    (:meth:`Tiling.with_pieces`)."""

    axes: tuple[ChunkAxis | None, ...]
    chunk_bytes: int
    pieces: int

    def reads(self, shape: Sequence[int], tiling: Tiling, nworkers: int) -> int:
        """Bytes of chunks the tasks of ``tiling`` read: each chunk once per tile that
        touches it (a replicated array: every worker reads every chunk)."""
        cuts = (1,) * len(shape) if tiling.replicated else tiling.cuts
        total = 1
        for n, c, ax in zip(shape, cuts, self.axes):
            if ax is not None:
                total *= sum(ax.touched(i * n // c, (i + 1) * n // c) for i in range(c))
        return total * self.chunk_bytes * (nworkers if tiling.replicated else 1)

    def extra_reads(self, shape: Sequence[int], tiling: Tiling, nworkers: int) -> int:
        """Bytes read beyond one read of every chunk the array touches."""
        return self.reads(shape, tiling, nworkers) - self.reads(
            shape, Tiling.single(shape), nworkers
        )

    def aligned(self, shape: Sequence[int], tiling: Tiling, nworkers: int) -> Tiling:
        """``tiling`` with its one cut axis re-cut so no chunk is split, where a cut
        into a multiple of ``nworkers`` tiles near its count does that; else as it is.

        A multiple of the worker count keeps every element on the worker the default
        cut puts it on (tiles go to workers in contiguous runs), so arrays of the same
        shape cut by default still meet this one tile for tile, moving nothing.
        """
        if tiling.replicated:
            return tiling
        cut = [i for i, c in enumerate(tiling.cuts) if c > 1]
        if len(cut) != 1:
            return tiling
        a = cut[0]
        ax = self.axes[a]
        if ax is None:
            return tiling
        n, c = shape[a], tiling.cuts[a]
        if not any(ax.splits(i * n // c) for i in range(1, c)):
            return tiling
        best = _aligned_count(n, c, ax, nworkers)
        if best is None:
            return tiling
        return Tiling.along(shape, a, best)

    def final(self, shape: Sequence[int], tiling: Tiling, nworkers: int) -> Tiling:
        """The tiling a plan's choice ``tiling`` is read in: cut into ``pieces`` tiles,
        then aligned with the chunks (what planning does with the plan)."""
        return self.aligned(shape, tiling.with_pieces(shape, self.pieces), nworkers)


def _aligned_count(n: int, c: int, ax: ChunkAxis, nworkers: int) -> int | None:
    """The multiple of ``nworkers`` nearest ``c`` (by ratio; larger on a tie) whose even
    cut of ``n`` splits no chunk of ``ax``; None if none of the nearest does."""
    base = max(1, round(c / nworkers))
    near = {k * nworkers for d in range(_ALIGN_TRIES) for k in (base + d, base - d)}
    near = {m for m in near if 0 < m <= n}
    for m in sorted(near, key=lambda m: (abs(math.log(m / c)), -m)):
        if not any(ax.splits(i * n // m) for i in range(1, m)):
            return m
    return None
