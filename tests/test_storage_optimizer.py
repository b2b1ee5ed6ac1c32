"""The tiling optimizer knows how a stored array is chunked (issue 37).

:class:`StorageChunks` counts the chunks each tiling's tasks read; here every count is
checked against a brute-force count of (tile, chunk) touches, :meth:`aligned` against
the chunk boundaries, and the plans for stored arrays against the chunking they are
stored in.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
from spartan.frontend.optimizer.storage import ChunkAxis, StorageChunks
from spartan.tiling import Tiling

zarr = pytest.importorskip("zarr")


@pytest.fixture(autouse=True)
def _cut_small_arrays(monkeypatch):
    """Small stored arrays are cut like big ones, never replicated whole."""
    monkeypatch.setattr(sp.config, "replicate_below_bytes", 0)


# ---- StorageChunks against brute force ---------------------------------------------------


def _touches(chunk_ids: np.ndarray, shape: tuple[int, ...], tiling: Tiling, nworkers: int) -> int:
    """(tile, chunk) pairs where the tile holds an element of the chunk: ``chunk_ids`` is
    the stored chunk of every element of the (viewed) array."""
    if tiling.replicated:
        return nworkers * len(np.unique(chunk_ids))
    total = 0
    for _, box in tiling.tiles(shape):
        tile = chunk_ids[tuple(slice(lo, hi) for lo, hi in box)]
        total += len(np.unique(tile))
    return total


@st.composite
def _view_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n + 1)) for n in shape)
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "all"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            step = draw(st.sampled_from([1, 2, 3, 5, -1, -2, -4]))
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            key.append(slice(start, stop, step))
        else:
            key.append(slice(None))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    transpose = draw(st.booleans())
    nworkers = draw(st.integers(1, 4))
    cuts = draw(st.sampled_from(["row", "column", "block", "dup", "grid"]))
    pieces = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**16))
    return shape, chunks, tuple(key), transpose, nworkers, cuts, pieces, seed


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_view_case())
def test_reads_count_every_tile_chunk_touch(local, case):
    shape, chunks, key, transpose, nworkers, cuts, pieces, seed = case
    store = zarr.storage.MemoryStore()
    zarr.create_array(store, shape=shape, chunks=chunks, dtype="f4")
    z = sp.from_zarr(store)[key]
    z = z.T if transpose else z
    # where each element of the view is stored, and so the chunk it is read from
    where = np.arange(math.prod(shape)).reshape(shape)[key]
    where = where.T if transpose else where
    grid = [-(-n // k) for n, k in zip(shape, chunks)]
    coords = np.unravel_index(where, shape)
    chunk_ids = np.ravel_multi_index([c // k for c, k in zip(coords, chunks)], grid)
    chunk_ids = np.asarray(chunk_ids).reshape(where.shape)
    assert z.shape == where.shape
    if where.size == 0:  # an empty view reads nothing: a fresh empty array
        return
    vshape = z.shape
    if cuts == "grid":  # any grid of cuts, over any axes
        rng = np.random.default_rng(seed)
        tiling = Tiling(tuple(int(rng.integers(1, max(1, n) + 1)) for n in vshape))
    else:
        tiling = Tiling.named(cuts, vshape, pieces)
    facts = z._expr.storage(pieces)
    chunk_bytes = math.prod(chunks) * 4
    assert facts.chunk_bytes == chunk_bytes
    want = _touches(chunk_ids, vshape, tiling, nworkers) * chunk_bytes
    assert facts.reads(vshape, tiling, nworkers) == want, (tiling, facts)
    once = len(np.unique(chunk_ids)) * chunk_bytes
    assert facts.extra_reads(vshape, tiling, nworkers) == want - once


@st.composite
def _axis_case(draw):
    """A stored axis seen through a slice: ``n`` elements, ``start + step * j``."""
    chunk = draw(st.integers(1, 40))
    n = draw(st.integers(1, 300))
    step = draw(st.sampled_from([1, 1, 1, 2, 3, -1, -2]))
    extent = abs(step) * (n - 1)
    offset = draw(st.integers(0, 50))
    start = offset if step > 0 else offset + extent
    ax = ChunkAxis(start, step, chunk)
    other = draw(st.integers(1, 6))
    axis = draw(st.integers(0, 1))
    shape = (n, other) if axis == 0 else (other, n)
    axes = (ax, None) if axis == 0 else (None, ax)
    cut = draw(st.integers(1, 40))
    nworkers = draw(st.integers(1, 5))
    return StorageChunks(axes, chunk * 8, cut), shape, axis, cut, nworkers


def _splits(ax: ChunkAxis, n: int, m: int) -> bool:
    """Whether cutting ``n`` elements into ``m`` even tiles puts two tiles in a chunk."""
    for i in range(1, m):
        j = i * n // m
        if (ax.start + ax.step * (j - 1)) // ax.chunk == (ax.start + ax.step * j) // ax.chunk:
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(case=_axis_case())
def test_aligned_never_splits_a_chunk_it_recuts(case):
    facts, shape, axis, cut, nworkers = case
    ax, n = facts.axes[axis], shape[axis]
    tiling = Tiling.along(shape, axis, cut)
    got = facts.aligned(shape, tiling, nworkers)
    assert got.fits(shape) and not got.replicated
    if not _splits(ax, n, tiling.cuts[axis]):
        assert got == tiling  # nothing to mend
    if got != tiling:
        m = got.cuts[axis]
        assert got == Tiling.along(shape, axis, m)  # the same axis, cut again
        assert m % nworkers == 0
        assert not _splits(ax, n, m)
        assert facts.extra_reads(shape, got, nworkers) == 0
    elif _splits(ax, n, tiling.cuts[axis]):  # kept: no multiple of the workers near it aligns
        base = max(1, round(tiling.cuts[axis] / nworkers))
        for k in range(max(1, base - 8), base + 9):
            if k * nworkers <= n:
                assert _splits(ax, n, k * nworkers), (k * nworkers, tiling)
    final = facts.final(shape, tiling, nworkers)
    assert final == facts.aligned(shape, tiling.with_pieces(shape, facts.pieces), nworkers)


def test_aligned_examples():
    s = StorageChunks((ChunkAxis(0, 1, 125),), 1000, 6)
    assert s.aligned((1000,), Tiling.row((1000,), 6), 2) == Tiling.row((1000,), 8)
    assert s.aligned((1000,), Tiling.row((1000,), 8), 2) == Tiling.row((1000,), 8)
    # 3 workers: no multiple of 3 cuts 1000 at multiples of 125
    assert s.aligned((1000,), Tiling.row((1000,), 9), 3) == Tiling.row((1000,), 9)
    s2 = StorageChunks((ChunkAxis(0, 1, 10), ChunkAxis(0, 1, 7)), 560, 4)
    block = Tiling.block((100, 70), 6)
    assert s2.aligned((100, 70), block, 2) == block  # grids are left as they are
    dup = Tiling.duplicated((100, 70))
    assert s2.aligned((100, 70), dup, 2) == dup
    assert s2.extra_reads((100, 70), dup, 2) == s2.reads((100, 70), Tiling.single((100, 70)), 2)


class CountingStore(zarr.storage.WrapperStore):
    """A store that logs the key of every ``get`` (zarr's read-only copies share it)."""

    def __init__(self, store, log: list[str] | None = None) -> None:
        super().__init__(store)
        self.log = [] if log is None else log

    def _with_store(self, store):
        return type(self)(store, self.log)

    async def get(self, key, prototype, byte_range=None):
        self.log.append(key)
        return await super().get(key, prototype, byte_range)

    def chunks_read(self) -> list[str]:
        return sorted(k for k in self.log if k.startswith("c/"))


# ---- plans for stored arrays ------------------------------------------------------------


def _stored(tmp_path, a: np.ndarray, chunks: tuple[int, ...], name: str = "s.zarr"):
    path = tmp_path / name
    zarr.create_array(path, shape=a.shape, chunks=chunks, dtype=a.dtype)[...] = a
    return path


@pytest.mark.parametrize(
    "chunks, kind", [((16, 1), "column"), ((16, 3), "column"), ((1, 12), "row"), ((2, 12), "row")]
)
def test_stored_array_is_read_along_its_chunks(backend, tmp_path, chunks, kind):
    a = np.arange(16 * 12, dtype=float).reshape(16, 12)
    path = _stored(tmp_path, a, chunks)
    assert f"{kind}[" in str(sp.explain(sp.from_zarr(path)))
    z = sp.from_zarr(path).evaluate()
    assert z.tiling.kind == kind
    np.testing.assert_array_equal(z.to_numpy(), a)
    # read for a reduction: still along the chunks (re-reading every chunk in each
    # tile costs more than moving partial sums)
    z = sp.from_zarr(path)
    np.testing.assert_allclose(z.sum(axis=0).to_numpy(), a.sum(axis=0))
    assert z._expr.data.tiling.kind == kind


#: workers -> (rows, chunk rows, tiles): 3 tiles a worker splits chunks; the read is
#: cut into the nearest multiple of the workers that does not
RECUT = {2: (1000, 125, 8), 3: (1200, 100, 12)}


def test_default_cut_is_recut_to_meet_the_chunks(backend, tmp_path, monkeypatch):
    monkeypatch.setattr(sp.config, "tiles_per_worker", 3)
    rows, chunk, tiles = RECUT[backend.nworkers]
    assert rows % (3 * backend.nworkers) or (rows // (3 * backend.nworkers)) % chunk
    a = np.arange(rows * 2, dtype=float).reshape(rows, 2)
    path = _stored(tmp_path, a, (chunk, 2))
    z = sp.from_zarr(path).evaluate()
    assert z.tiling == Tiling.row(a.shape, tiles)
    assert all(lo % chunk == 0 for _, ((lo, _), _) in z.tiling.tiles(a.shape))
    np.testing.assert_array_equal(z.to_numpy(), a)
    # and the one-axis case, read for a sum
    path = _stored(tmp_path, a[:, 0].copy(), (chunk,), "v.zarr")
    z = sp.from_zarr(path)
    assert float(z.sum()) == a[:, 0].sum()
    assert z._expr.data.tiling == Tiling.row((rows,), tiles)


def test_predicted_reads_are_the_chunks_read_twice(local):
    """What the plan predicts for a read that must split chunks is what the workers read
    beyond one read of each chunk (counted at the store)."""
    a = np.arange(13 * 4, dtype=float).reshape(13, 4)
    base = zarr.storage.MemoryStore()
    zarr.create_array(base, shape=a.shape, chunks=(5, 4), dtype=a.dtype)[...] = a
    store = CountingStore(base)
    z = sp.from_zarr(store)
    plan = sp.explain(z).plan
    z.evaluate()
    nid = next(n.id for n in plan.program if n.op == "source")
    chunk_bytes = 5 * 4 * 8
    reads = store.chunks_read()
    assert len(set(reads)) == 3 and len(reads) > 3  # every tiling of 13 rows splits one
    assert plan.predicted[nid] == (len(reads) - 3) * chunk_bytes
    np.testing.assert_array_equal(z.to_numpy(), a)


def test_views_of_stored_arrays_are_planned_on_their_chunks(local, tmp_path):
    a = np.arange(16 * 12, dtype=float).reshape(16, 12)
    path = _stored(tmp_path, a, (1, 12))
    v = sp.from_zarr(path).T[::-1]  # stored rows are the view's columns
    v.evaluate()
    assert v.tiling.kind == "column"
    np.testing.assert_array_equal(v.to_numpy(), a.T[::-1])


def test_recut_tiles_hold_whole_chunks_for_many_workers():
    for nworkers, rows, chunk in itertools.product([1, 2, 3, 4], [96, 1000, 1200], [8, 25, 100]):
        s = StorageChunks((ChunkAxis(0, 1, chunk),), chunk * 8, 3 * nworkers)
        t = s.final((rows,), Tiling.row((rows,), 2), nworkers)
        if t.cuts[0] != 3 * nworkers:
            assert t.cuts[0] % nworkers == 0
            assert all(lo % chunk == 0 for _, ((lo, _),) in t.tiles((rows,)))
