"""Arrays kept in chunked storage (Zarr, HDF5), read and written by the workers.

A :class:`StoredArray` is a lazy source: the driver has read only the metadata (shape,
dtype, chunks), and each tile is read by its own worker when the array is evaluated.
A view of one that has not been read yet is a stored array of its own
(:meth:`StoredArray.viewed`), so ``z[:10]`` reads only the chunks the slice touches. The
storage chunking is a fact the tiling optimizer sees (:meth:`StoredArray.storage`): a
tiling that splits chunks pays for the chunks read twice, and an aligned one is preferred.

Writing (:func:`store`) gives every storage chunk (a Zarr shard, if sharded) to exactly
one task: the task of the tile holding the chunk's first element, which fetches the
chunk's elements held by neighbouring tiles. No two workers ever write the same chunk,
whatever the tiling; an aligned tiling moves nothing.

The formats (:mod:`spartan.frontend.zarr_io`, :mod:`spartan.frontend.hdf5_io`) provide a
:class:`Storage`: a picklable handle that opens the array on any worker, checks it is
the one the driver opened, and reads or writes a region of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from spartan.backend import session
from spartan.backend.base import Backend, Piece, Region
from spartan.backend.checkpoint import lost_worker
from spartan.backend.rerun import run_on_workers
from spartan.frontend.evaluate import evaluate
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering, read_pieces
from spartan.frontend.optimizer.storage import ChunkAxis, StorageChunks
from spartan.frontend.taskgrid import Grid, view_grid
from spartan.frontend.view import View
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Box, Tiling, box_shape


class Storage(Protocol):
    """A stored array as the workers reach it (picklable; opened anew by each task)."""

    #: what error messages name: the file or URL, and the array in it
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    #: the unit of reading (a Zarr chunk, an HDF5 chunk or the whole contiguous array)
    chunks: tuple[int, ...]
    #: the unit of writing: no two tasks may write within one (a Zarr shard, else a chunk)
    write_chunks: tuple[int, ...]
    #: ``from_zarr``/``from_hdf5``: the label of reads in plans and errors
    reader: str
    #: ``to_zarr``/``to_hdf5``: what errors of a write name
    writer: str
    #: whether the array lives in the driver's memory (an in-memory store): only
    #: in-process workers can reach it
    in_memory: bool

    def read(self, index: tuple) -> np.ndarray:
        """``array[index]`` (ints and slices with positive steps), after checking the
        stored array is still the one the driver opened."""

    def write(self, regions: Sequence[tuple[Box, np.ndarray]]) -> int:
        """Write each block at its box; the bytes written."""


class StoreChangedError(OSError):
    """A stored array was replaced, resized or retyped between opening and reading.

    >>> issubclass(StoreChangedError, OSError)
    True
    """


@register
class StoredArray(Expr):
    """The view ``vm`` (None: all) of a stored array; tiles are read by their workers.

    >>> sp.to_zarr(sp.arange(1000.0), "x.zarr", chunks=(100,))
    >>> z = sp.from_zarr("x.zarr")          # nothing read yet
    >>> float(z[:100].sum())                # reads the chunk of rows 0-99
    4950.0
    """

    def __init__(self, source: Storage, vm: ViewMap | None = None) -> None:
        super().__init__(source.shape if vm is None else vm.shape, source.dtype)
        self.source = source
        self.vm = vm

    @property
    def label(self) -> str:
        return self.source.reader

    def viewed(self, vm: ViewMap) -> Expr | None:
        if self.data is not None:  # read already: the view reads these tiles
            return None
        return StoredArray(self.source, vm if self.vm is None else self.vm.then(vm))

    def storage(self, pieces: int) -> StorageChunks:
        chunks = self.source.chunks
        if self.vm is None:
            axes = tuple(ChunkAxis(0, 1, max(1, k)) for k in chunks)
        else:
            axes = tuple(
                None if a.base is None else ChunkAxis(a.start, a.step, max(1, chunks[a.base]))
                for a in self.vm.axes
            )
        return StorageChunks(axes, math.prod(chunks) * self.dtype.itemsize, pieces)

    def lower(self, ctx: Lowering) -> None:
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            ctx.backend.submit(w, ReadTile(self.source, self.vm, box), [], [tiles.key(idx)])
        self.data = tiles


class ReadTile:
    """Task: one tile of a (view of a) stored array, read from storage."""

    def __init__(self, source: Storage, vm: ViewMap | None, box: Box) -> None:
        self.source, self.vm, self.box = source, vm, box

    def __call__(self) -> np.ndarray:
        shape = box_shape(self.box)
        if math.prod(shape) == 0:
            return np.empty(shape, self.source.dtype)
        if self.vm is None:
            block = self.source.read(tuple(slice(lo, hi) for lo, hi in self.box))
            return np.ascontiguousarray(block)
        index, flipped = [], []
        kept = 0  # axes of the block read, in stored order
        for start, count, step, dropped in self.vm.selection(self.box):
            if dropped:
                index.append(start)
                continue
            if step > 0:
                index.append(slice(start, start + step * (count - 1) + 1, step))
            else:  # read forwards, then reverse
                last = start + step * (count - 1)
                index.append(slice(last, start + 1, -step))
                flipped.append(kept)
            kept += 1
        block = self.source.read(tuple(index))
        if flipped:
            block = np.flip(block, axis=flipped)
        perm = self.vm.perm()
        if perm is not None:
            block = block.transpose(perm)
        return np.ascontiguousarray(block.reshape(shape))


def check_reachable(where: str, in_memory: bool) -> None:
    """An in-memory store can be reached only by workers in the driver's process."""
    if in_memory and not session.current().shares_driver_memory:
        raise ValueError(
            f"{where} is an in-memory store: it lives in the driver's process, "
            "where Ray workers cannot reach it; use a path or URL every worker can open "
            "(or the in-process backend)"
        )


def write_grid(expr: Expr) -> Grid:
    """The tiles of the evaluated ``expr`` on their workers; a view's follow its base's
    tiles (:func:`~spartan.frontend.taskgrid.view_grid`), and a replicated array, held
    whole by every worker, is split evenly among them."""
    nworkers = session.current().nworkers
    if isinstance(expr, View):
        base = expr.base.data
        if not base.tiling.replicated:
            return view_grid(expr.vm, base.shape, base.tiling, nworkers)
    elif not expr.data.tiling.replicated:
        return Grid.of(expr.data.tiling, expr.shape, nworkers)
    return Grid.of(Tiling.row(expr.shape, nworkers), expr.shape, nworkers)


def owned_regions(grid: Grid, unit: Sequence[int]) -> list[tuple[Box, int]]:
    """Regions of whole write units (chunks), each unit in exactly one, with the
    worker writing each: the worker of the tile holding the unit's first element.

    >>> owned_regions(Grid.of(Tiling.row((10,), 2), (10,), 2), (4,))
    [(((0, 8),), 0), (((8, 10),), 1)]
    """
    out = []
    for _, box, w in grid.tiles():
        owned = tuple(
            (min(hi_axis, -(-lo // k) * k), min(hi_axis, -(-hi // k) * k))
            for (lo, hi), hi_axis, k in zip(box, (b[-1] for b in grid.bounds), unit)
        )
        if all(lo < hi for lo, hi in owned):
            out.append((owned, w))
    return out


class WriteRegion:
    """Task: write one region of an array (assembled on this worker) into storage.
    ``chained``: one writer at a time; the task takes the previous writer's token
    (unless it is the first) and makes its own."""

    def __init__(self, sink: Storage, box: Box, chained: bool = False) -> None:
        self.sink, self.box, self.chained = sink, box, chained

    def __call__(self, *inputs: Any) -> tuple:
        block = inputs[-1]  # (after the previous writer's token, in a chain)
        written = self.sink.write([(self.box, block)])
        return (True, written) if self.chained else (written,)  # ([token,] result)


class Writes:
    """The write tasks of one array into one sink: a task per region
    :func:`owned_regions` gives (so each starts when its tiles are made); ``serial``:
    a chain, each task after the one before (a format one process at a time may write,
    HDF5)."""

    def __init__(self, sink: Storage, serial: bool) -> None:
        self.sink, self.serial = sink, serial
        self.handles: dict[int, Any] = {}
        self.tasks: dict[int, tuple[int, WriteRegion, list]] = {}
        self.tokens: list = []
        self.nbytes = 0

    def submit(self, be: Backend, expr: Expr) -> None:
        """Send the tasks (``expr`` lowered: its tiles are made or being made)."""
        self.nbytes = expr.nbytes
        regions = sorted(
            owned_regions(write_grid(expr), self.sink.write_chunks), key=lambda r: r[1]
        )
        prev = None
        for k, (box, w) in enumerate(regions):
            inputs = [Region(box_shape(box), expr.dtype, tuple(read_pieces(expr, box, w)))]
            self.tasks[k] = (w, WriteRegion(self.sink, box), inputs)
            if not self.serial:
                self.handles[k] = be.submit(w, self.tasks[k][1], inputs, [], want_result=True)
                continue
            token = (expr.uid, "written", k)
            after = [] if prev is None else [Region(None, None, (Piece(*prev, (), ()),))]
            task = WriteRegion(self.sink, box, chained=True)
            self.handles[k] = be.submit(w, task, after + inputs, [token], want_result=True)
            self.tokens.append(token)
            prev = (w, token)

    def finish(self, be: Backend) -> None:
        """After the wait: check every region was written; one whose worker was lost
        is written again (chunks are written whole: writing twice is safe).
        RuntimeError if the bytes written fall short of the array's."""
        done, lost = {}, {}
        try:
            for k, handle in self.handles.items():
                try:
                    [done[k]] = be.results([handle])
                except Exception as error:
                    if not lost_worker(error):
                        raise
                    lost[k] = self.tasks[k]
        finally:
            be.delete(self.tokens)
        rounds = [{k: t} for k, t in lost.items()] if self.serial else [lost] if lost else []
        for part in rounds:
            done.update(
                run_on_workers(
                    be,
                    part,
                    self.sink.writer,
                    f"writing {self.sink.where}",
                    "it is not complete",
                )
            )
        written = sum(done.values())
        if written != self.nbytes:
            raise RuntimeError(
                f"{self.sink.where}: the workers wrote {written} bytes of the array's {self.nbytes}"
            )


def store(
    expr: Expr, create: Callable[[Expr], Storage], serial: bool = False, after: bool = False
) -> None:
    """Evaluate ``expr`` and write it into the storage ``create(expr)`` makes (called
    once ``expr`` is tiled, so its chunks may follow the tiles) from the workers that
    hold it.

    The writes go out in the same evaluation as ``expr``'s own tasks, each as soon as
    the tiles it reads are made; ``after``: only once ``expr`` is evaluated (it reads
    the storage ``create`` replaces). ``serial``: one writer at a time, after ``expr``
    is evaluated (HDF5: its file may be one that ``expr`` reads).
    """
    be = session.current()
    writes: list[Writes] = []

    def submit() -> None:
        writes.append(Writes(create(expr), serial))
        writes[0].submit(be, expr)

    evaluate(expr, then=None if serial or after else submit)
    with be.evaluating():
        if not writes:  # (serial, or evaluated before)
            submit()
            try:
                be.wait()
            except BaseException:
                be.delete(writes[0].tokens)
                raise
        writes[0].finish(be)


def readable_dtype(dtype: Any, where: str) -> np.dtype:
    """``dtype`` if spartan can hold it (fixed-size, no Python objects), else TypeError."""
    dt = np.dtype(dtype)
    if dt.hasobject or dt.kind == "T" or dt.itemsize == 0:
        raise TypeError(
            f"{where} holds {dt} values, which spartan arrays cannot hold "
            "(variable-length strings or Python objects); read it with the format's "
            "own library"
        )
    return dt


def tile_chunks(grid: Grid) -> tuple[int, ...]:
    """Chunks the size of ``grid``'s largest tiles, so each worker writes the chunks of
    its own tiles (all of them when the array's axes are cut evenly)."""
    return tuple(max([1, *(hi - lo for lo, hi in zip(b, b[1:]))]) for b in grid.bounds)
