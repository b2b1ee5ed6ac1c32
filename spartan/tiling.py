"""Tilings: how an array is cut into tiles and where each tile lives.

A :class:`Tiling` is a value: the number of pieces each axis is cut into, plus a
``replicated`` flag (a full copy on every worker). Tiles are even: along an axis of
length ``n`` cut into ``k`` pieces, piece ``i`` covers ``[i*n//k, (i+1)*n//k)``.
Placement is a pure function of (tiling, tile index, worker count), so equal regions of
identically tiled arrays always share a worker.

>>> t = Tiling.row((6, 4), 3)
>>> t.tile_bounds((6, 4), (1, 0))
((2, 4), (0, 4))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

Box = tuple[tuple[int, int], ...]  # per axis: [lo, hi)


@dataclass(frozen=True)
class Tiling:
    """Pieces per axis; ``replicated`` keeps a whole copy on every worker."""

    cuts: tuple[int, ...]
    replicated: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "cuts", tuple(int(c) for c in self.cuts))
        if any(c < 1 for c in self.cuts):
            raise ValueError(f"tiling cuts must be >= 1, got {self.cuts}")
        if self.replicated and any(c != 1 for c in self.cuts):
            raise ValueError("a replicated tiling has one tile (cuts of 1)")

    # ---- constructors -------------------------------------------------------------
    @classmethod
    def along(cls, shape: Sequence[int], axis: int, pieces: int) -> Tiling:
        """Cut only ``axis`` into ``pieces`` (capped by the axis length)."""
        cuts = [1] * len(shape)
        if shape:
            cuts[axis] = max(1, min(int(pieces), int(shape[axis])))
        return cls(tuple(cuts))

    @classmethod
    def row(cls, shape: Sequence[int], pieces: int) -> Tiling:
        return cls.along(shape, 0, pieces)

    @classmethod
    def column(cls, shape: Sequence[int], pieces: int) -> Tiling:
        if len(shape) < 2:
            return cls.along(shape, 0, pieces)
        return cls.along(shape, 1, pieces)

    @classmethod
    def block(cls, shape: Sequence[int], pieces: int) -> Tiling:
        """A near-square grid over the first two axes with about ``pieces`` tiles."""
        if len(shape) < 2:
            return cls.along(shape, 0, pieces)
        a = max(1, int(math.isqrt(pieces)))
        while pieces % a:
            a -= 1
        b = pieces // a
        cuts = [1] * len(shape)
        cuts[0] = max(1, min(a, shape[0]))
        cuts[1] = max(1, min(b, shape[1]))
        return cls(tuple(cuts))

    @classmethod
    def duplicated(cls, shape: Sequence[int]) -> Tiling:
        return cls((1,) * len(shape), replicated=True)

    @classmethod
    def single(cls, shape: Sequence[int]) -> Tiling:
        return cls((1,) * len(shape))

    @classmethod
    def named(cls, kind: str, shape: Sequence[int], pieces: int) -> Tiling:
        """``kind`` is one of ``row``, ``column``, ``block``, ``dup``."""
        makers = {
            "row": cls.row,
            "column": cls.column,
            "col": cls.column,
            "block": cls.block,
        }
        if kind in ("dup", "duplicated", "replicated"):
            return cls.duplicated(shape)
        try:
            return makers[kind](shape, pieces)
        except KeyError:
            raise ValueError(
                f"unknown tiling kind {kind!r}; expected row, column, block or dup"
            ) from None

    def with_pieces(self, shape: Sequence[int], pieces: int) -> Tiling:
        """The same axes cut into about ``pieces`` tiles (replicated and single tilings,
        and grids over other axes than the first two, are kept as they are).

        Tiles go to workers in contiguous runs, so a finer cut along the same axes keeps
        every element on the same worker (up to rounding) and moves the same bytes.

        >>> Tiling.row((100, 4), 2).with_pieces((100, 4), 8)
        Tiling(cuts=(8, 1), replicated=False)
        """
        if self.replicated or self.ntiles <= 1:
            return self
        cut = [i for i, c in enumerate(self.cuts) if c > 1]
        if len(cut) == 1:
            return Tiling.along(shape, cut[0], pieces)
        if cut == [0, 1]:
            return Tiling.block(shape, pieces)
        return self

    # ---- geometry -----------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.cuts)

    @property
    def ntiles(self) -> int:
        return math.prod(self.cuts)

    @property
    def kind(self) -> str:
        if self.replicated:
            return "dup"
        cut_axes = [i for i, c in enumerate(self.cuts) if c > 1]
        if not cut_axes:
            return "single"
        if cut_axes == [0]:
            return "row"
        if cut_axes == [1]:
            return "column"
        if len(cut_axes) == 1:
            return f"axis{cut_axes[0]}"
        return "block"

    def fits(self, shape: Sequence[int]) -> bool:
        return len(shape) == self.ndim and all(c <= max(1, n) for c, n in zip(self.cuts, shape))

    def check(self, shape: Sequence[int]) -> None:
        if not self.fits(shape):
            raise ValueError(
                f"tiling with cuts {self.cuts} does not fit an array of shape {tuple(shape)}"
            )

    def tile_indices(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(c) for c in self.cuts))

    def tile_bounds(self, shape: Sequence[int], idx: Sequence[int]) -> Box:
        return tuple((i * n // c, (i + 1) * n // c) for i, n, c in zip(idx, shape, self.cuts))

    def tiles(self, shape: Sequence[int]) -> Iterator[tuple[tuple[int, ...], Box]]:
        for idx in self.tile_indices():
            yield idx, self.tile_bounds(shape, idx)

    def overlapping(self, shape: Sequence[int], box: Box) -> Iterator[tuple[tuple[int, ...], Box]]:
        """Tiles intersecting ``box``, with the intersection in global coordinates."""
        ranges = []
        for (lo, hi), n, c in zip(box, shape, self.cuts):
            if hi <= lo:
                return
            first = piece_of(lo, n, c)
            last = piece_of(hi - 1, n, c)
            ranges.append(range(first, last + 1))
        for idx in itertools.product(*ranges):
            bounds = self.tile_bounds(shape, idx)
            inter = tuple((max(lo, tlo), min(hi, thi)) for (lo, hi), (tlo, thi) in zip(box, bounds))
            if all(lo < hi for lo, hi in inter) or not inter:
                yield idx, inter

    def flat(self, idx: Sequence[int]) -> int:
        flat = 0
        for i, c in zip(idx, self.cuts):
            flat = flat * c + i
        return flat

    def worker_of(self, idx: Sequence[int], nworkers: int) -> int:
        """Contiguous blocks of tiles (C order) per worker: a pure function."""
        return self.flat(idx) * nworkers // self.ntiles

    def __str__(self) -> str:
        if self.replicated:
            return "dup"
        return f"{self.kind}{list(self.cuts)}"


def piece_of(pos: int, n: int, c: int) -> int:
    """Index of the piece holding element ``pos`` of an axis of length n cut c ways."""
    i = (pos * c) // n if n else 0
    # even split bounds are floor(i*n/c); correct the estimate by at most one step
    while i + 1 < c and (i + 1) * n // c <= pos:
        i += 1
    while i > 0 and i * n // c > pos:
        i -= 1
    return i


def box_shape(box: Box) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in box)


def box_size(box: Box) -> int:
    return math.prod(box_shape(box))


def whole(shape: Sequence[int]) -> Box:
    return tuple((0, int(n)) for n in shape)


def candidates(shape: Sequence[int], pieces: int) -> list[Tiling]:
    """The tilings the optimizer chooses among: one per cut axis, block, and dup."""
    out: list[Tiling] = []
    for axis in range(len(shape)):
        t = Tiling.along(shape, axis, pieces)
        if t not in out:
            out.append(t)
    if len(shape) >= 2:
        t = Tiling.block(shape, pieces)
        if t not in out:
            out.append(t)
    if not out:
        out.append(Tiling.single(shape))
    return out


def read_bytes(
    shape: Sequence[int],
    itemsize: int,
    src: Tiling,
    reads: Sequence[tuple[Box, int]],
    nworkers: int,
) -> int:
    """Bytes that cross workers when each ``(box, worker)`` reads ``box`` of an array
    of ``shape`` tiled ``src``. This is exactly what the backend counts."""
    if src.replicated:
        return 0
    total = 0
    for box, w in reads:
        for idx, inter in src.overlapping(shape, box):
            if src.worker_of(idx, nworkers) != w:
                total += box_size(inter)
    return total * itemsize


def destinations(shape: Sequence[int], tiling: Tiling, nworkers: int) -> list[tuple[Box, int]]:
    """Every (box, worker) that holds a piece of an array tiled ``tiling``."""
    if tiling.replicated:
        return [(whole(shape), w) for w in range(nworkers)]
    return [(box, tiling.worker_of(idx, nworkers)) for idx, box in tiling.tiles(shape)]


def transfer_bytes(
    shape: Sequence[int], itemsize: int, src: Tiling, dst: Tiling, nworkers: int
) -> int:
    """Bytes moved to re-tile an array from ``src`` to ``dst``."""
    return read_bytes(shape, itemsize, src, destinations(shape, dst, nworkers), nworkers)
