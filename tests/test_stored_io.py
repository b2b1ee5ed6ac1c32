"""Zarr and HDF5 arrays read and written by the workers (issue 37).

Every result is compared with NumPy's, and every file spartan writes is read back with
zarr or h5py themselves (and every file they write is read with spartan): round trips
in each tiling with storage chunks that do and do not meet the tiles, views and
operations on stored arrays, the chunks a slice reads, in-memory stores, bad input and
stores changed between opening and reading.
"""

from __future__ import annotations

import io
import itertools
import math
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
from spartan.frontend.stored import StoredArray, owned_regions
from spartan.frontend.taskgrid import Grid
from spartan.tiling import Tiling

zarr = pytest.importorskip("zarr")
h5py = pytest.importorskip("h5py")

SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

#: shape -> storage chunkings that do not meet the tiles of any test tiling (the
#: default chunking, the tiles themselves, is tried as well)
UNALIGNED = {
    (13,): [(5,), (1,), (13,)],
    (12, 10): [(5, 3), (12, 1), (1, 10), (7, 7)],
    (6, 5, 4): [(4, 2, 3), (6, 1, 4)],
}


def _values(shape: tuple[int, ...], dtype: str = "f8") -> np.ndarray:
    """Distinct values, so a block read from the wrong place shows."""
    return (np.arange(math.prod(shape)) * 3 - 7).astype(dtype).reshape(shape)


def _tile_chunks(x: sp.Array) -> tuple[int, ...]:
    """Chunks the size of ``x``'s tiles (each tile holds whole chunks when they divide)."""
    t = x.tiling if not x.tiling.replicated else Tiling.single(x.shape)
    return tuple(max(1, n // c) for n, c in zip(x.shape, t.cuts))


# ---- round trips -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", list(UNALIGNED), ids=lambda s: f"{len(s)}d")
def test_zarr_round_trips_in_every_tiling(backend, tiling, tmp_path, shape):
    a = _values(shape)
    x = sp.array(a, tiling=tiling).evaluate()
    for i, chunks in enumerate([None, _tile_chunks(x), *UNALIGNED[shape]]):
        path = tmp_path / f"w{i}.zarr"
        sp.to_zarr(x, path, chunks=chunks)
        stored = zarr.open_array(path, mode="r")
        assert stored.chunks == (chunks or stored.chunks) and stored.dtype == a.dtype
        np.testing.assert_array_equal(stored[...], a, err_msg=f"chunks {chunks}")

        made = tmp_path / f"r{i}.zarr"
        zarr.create_array(made, shape=shape, chunks=chunks or shape, dtype=a.dtype)[...] = a
        z = sp.from_zarr(made)
        assert z.shape == a.shape and z.dtype == a.dtype
        np.testing.assert_array_equal(z.to_numpy(), a, err_msg=f"chunks {chunks}")
        # read in the tiling of the array it meets
        np.testing.assert_array_equal((sp.from_zarr(made) + x).to_numpy(), 2 * a)


def test_zarr_default_chunks_are_the_tiles(backend, tiling, tmp_path):
    a = _values((12, 12))
    x = sp.array(a, tiling=tiling).evaluate()
    sp.to_zarr(x, tmp_path / "t.zarr")
    if not x.tiling.replicated:
        assert zarr.open_array(tmp_path / "t.zarr").chunks == _tile_chunks(x)
    backend.reset_stats()
    sp.to_zarr(x, tmp_path / "t.zarr", overwrite=True)  # each worker writes its own tiles
    assert backend.stats().as_dict()["bytes_moved"] == 0


@pytest.mark.parametrize("shape", list(UNALIGNED), ids=lambda s: f"{len(s)}d")
def test_hdf5_round_trips_in_every_tiling(backend, tiling, tmp_path, shape):
    a = _values(shape)
    x = sp.array(a, tiling=tiling).evaluate()
    path = tmp_path / "w.h5"
    layouts = [dict(), dict(chunks=None), dict(compression="gzip")]
    layouts += [dict(chunks=c) for c in UNALIGNED[shape][:2]]
    layouts += [dict(chunks=UNALIGNED[shape][0], compression="gzip", shuffle=True)]
    for i, kw in enumerate(layouts):
        sp.to_hdf5(path, f"/g/x{i}", x, **kw)
        with h5py.File(path, "r") as f:
            d = f[f"g/x{i}"]
            if "chunks" in kw:
                assert d.chunks == kw["chunks"]
            assert d.compression == kw.get("compression")
            np.testing.assert_array_equal(d[...], a, err_msg=str(kw))
        with h5py.File(tmp_path / "r.h5", "a") as f:
            f.create_dataset(f"x{i}", data=a, **kw)
        h = sp.from_hdf5(tmp_path / "r.h5", f"x{i}")
        assert h.shape == a.shape and h.dtype == a.dtype
        np.testing.assert_array_equal(h.to_numpy(), a, err_msg=str(kw))
        np.testing.assert_array_equal((x - sp.from_hdf5(path, f"g/x{i}")).to_numpy(), 0 * a)


def test_hdf5_several_datasets_at_once(backend, tmp_path):
    a = _values((9, 4))
    sp.to_hdf5(tmp_path / "m.h5", {"/a": sp.array(a), "/b/c": sp.array(a) * 2, "/n": a})
    with h5py.File(tmp_path / "m.h5", "r") as f:
        for name, want in [("a", a), ("b/c", 2 * a), ("n", a)]:
            np.testing.assert_array_equal(f[name][...], want)


@pytest.mark.parametrize("dtype", ["i4", "u1", "f4", "c16", "?"])
def test_dtypes_round_trip(local, tmp_path, dtype):
    a = _values((7, 3), dtype)
    sp.to_zarr(sp.array(a), tmp_path / "d.zarr", chunks=(2, 2))
    sp.to_hdf5(tmp_path / "d.h5", "/d", sp.array(a), chunks=(2, 2))
    for got in [sp.from_zarr(tmp_path / "d.zarr"), sp.from_hdf5(tmp_path / "d.h5", "d")]:
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got.to_numpy(), a)


@pytest.mark.parametrize("shape", [(), (0,), (0, 5), (3, 0, 2)])
def test_zero_d_and_empty_arrays(backend, tmp_path, shape):
    a = _values(shape)
    x = sp.array(a)
    sp.to_zarr(x, tmp_path / "e.zarr")
    sp.to_hdf5(tmp_path / "e.h5", "/e", x)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "e.zarr", mode="r")[...], a)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        np.testing.assert_array_equal(f["e"][()], a)
    for got in [sp.from_zarr(tmp_path / "e.zarr"), sp.from_hdf5(tmp_path / "e.h5", "/e")]:
        assert got.shape == shape
        np.testing.assert_array_equal(got.to_numpy(), a)
    if shape:
        chunks = tuple(max(1, n - 1) for n in shape)
        sp.to_zarr(x, tmp_path / "c.zarr", chunks=chunks)
        assert zarr.open_array(tmp_path / "c.zarr").shape == shape
        np.testing.assert_array_equal(sp.from_zarr(tmp_path / "c.zarr").to_numpy(), a)


def test_writes_of_views_numpy_arrays_and_stored_arrays(backend, tmp_path):
    a = _values((9, 8))
    x = sp.array(a, tiling="column")
    sp.to_zarr(x[::-2, 1:7].T, tmp_path / "v.zarr", chunks=(4, 2))
    sp.to_hdf5(tmp_path / "v.h5", "/v", x[2:, ::3], chunks=(2, 2))
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "v.zarr")[...], a[::-2, 1:7].T)
    with h5py.File(tmp_path / "v.h5", "r") as f:
        np.testing.assert_array_equal(f["v"][...], a[2:, ::3])
    sp.to_zarr(a, tmp_path / "n.zarr", chunks=(3, 3))  # a NumPy array: from the driver
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "n.zarr")[...], a)
    # stored to stored: a copy, a view of one, and one format into the other
    sp.to_zarr(sp.from_zarr(tmp_path / "n.zarr"), tmp_path / "copy.zarr", chunks=(5, 5))
    sp.to_hdf5(tmp_path / "copy.h5", "/c", sp.from_zarr(tmp_path / "n.zarr")[1::2])
    sp.to_zarr(sp.from_hdf5(tmp_path / "copy.h5", "c").T, tmp_path / "back.zarr")
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "copy.zarr")[...], a)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "back.zarr")[...], a[1::2].T)
    # a zarr.Array itself, on a path every worker opens
    opened = zarr.open_array(tmp_path / "copy.zarr", mode="r")
    np.testing.assert_array_equal(sp.from_zarr(opened)[::3].to_numpy(), a[::3])
    # read, then written over itself
    z = sp.from_zarr(tmp_path / "n.zarr")
    sp.to_zarr(z * 2, tmp_path / "n.zarr", overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "n.zarr")[...], 2 * a)


# ---- views and operations --------------------------------------------------------------

VIEWS = {
    "steps": lambda x: x[1:5:2],
    "negative": lambda x: x[::-1, 3],
    "negative steps": lambda x: x[-2::-3, ::-2, 1:],
    "ints": lambda x: x[4, 2],
    "int and None": lambda x: x[None, 2:, ::-2, None, 1],
    "ellipsis": lambda x: x[..., 2],
    "T": lambda x: x.T,
    "transpose": lambda x: x.transpose(1, 0, 2)[::2],
    "view of view": lambda x: x[1:][::-2, :, 0].T,
    "views of views": lambda x: x[::-1][1:4].transpose(2, 0, 1)[1, ::2],
    "empty": lambda x: x[3:3],
    "element": lambda x: x[5, 4, 3],
}


@pytest.mark.parametrize("fmt", ["zarr", "hdf5"])
def test_views_of_stored_arrays(backend, tmp_path, fmt):
    a = _values((6, 5, 4))
    if fmt == "zarr":
        zarr.create_array(tmp_path / "v.zarr", shape=a.shape, chunks=(4, 2, 3), dtype=a.dtype)[
            ...
        ] = a

        def open_():
            return sp.from_zarr(tmp_path / "v.zarr")
    else:
        with h5py.File(tmp_path / "v.h5", "w") as f:
            f.create_dataset("v", data=a, chunks=(4, 2, 3))

        def open_():
            return sp.from_hdf5(tmp_path / "v.h5", "v")

    for name, view in VIEWS.items():
        want = view(a)
        got = view(open_())
        assert got.shape == np.shape(want), name
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
    z = open_()  # views of one read array read nothing more
    np.testing.assert_array_equal(z.to_numpy(), a)
    np.testing.assert_array_equal(z[::-2, 1].to_numpy(), a[::-2, 1])


def test_operations_on_stored_arrays(backend, tiling, tmp_path):
    a = _values((10, 10)) / 7
    zarr.create_array(tmp_path / "o.zarr", shape=a.shape, chunks=(3, 4), dtype=a.dtype)[...] = a
    with h5py.File(tmp_path / "o.h5", "w") as f:
        f.create_dataset("o", data=a, chunks=(4, 3))
    pinned = sp.array(a, tiling=tiling)
    for x in [sp.from_zarr(tmp_path / "o.zarr"), sp.from_hdf5(tmp_path / "o.h5", "o")]:
        np.testing.assert_allclose(float(x.sum()), a.sum())
        np.testing.assert_allclose(float(x[2:, ::3].mean()), a[2:, ::3].mean())
        np.testing.assert_allclose(x.sum(axis=0).to_numpy(), a.sum(axis=0))
        np.testing.assert_allclose((x + x.T).to_numpy(), a + a.T)
        np.testing.assert_allclose((x @ x.T).to_numpy(), a @ a.T)
        np.testing.assert_allclose((x[1:7] @ pinned[:, ::-1]).to_numpy(), a[1:7] @ a[:, ::-1])
        np.testing.assert_allclose((pinned * x[::-1]).to_numpy(), a * a[::-1])


@st.composite
def _stored_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0 if i else 1, 7)) for i in range(ndim))
    chunks = tuple(draw(st.integers(1, max(1, n))) for n in shape)
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "all"]))
        if kind == "int" and n:
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            step = draw(st.sampled_from([1, 2, 3, -1, -2]))
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            key.append(slice(start, stop, step))
        else:
            key.append(slice(None))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    transpose = draw(st.booleans())
    tiling = draw(st.sampled_from(["row", "column", "block", "dup"]))
    return shape, chunks, tuple(key), transpose, tiling


@SETTINGS
@given(case=_stored_case())
def test_random_stored_views_match_numpy(backend, tmp_path, case):
    shape, chunks, key, transpose, tiling = case
    a = _values(shape)
    path = tmp_path / "h.zarr"
    zarr.create_array(path, shape=shape, chunks=chunks, dtype=a.dtype, overwrite=True)[...] = a
    with h5py.File(tmp_path / "h.h5", "w") as f:
        f.create_dataset("h", data=a, chunks=chunks if a.size else None)
    want = a[key].T if transpose else a[key]
    for stored in [sp.from_zarr(path), sp.from_hdf5(tmp_path / "h.h5", "h")]:
        got = stored[key].T if transpose else stored[key]
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(case))
    # written back from a pinned tiling in the same chunks, read by zarr
    sp.to_zarr(sp.array(a, tiling=tiling), path, chunks=chunks, overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], a)


# ---- what a read touches -----------------------------------------------------------------


class CountingStore(zarr.storage.WrapperStore):
    """A store that logs the key of every ``get`` (copies share the log: zarr makes a
    read-only copy when it opens an array)."""

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


def _counted(a: np.ndarray, chunks: tuple[int, ...]) -> CountingStore:
    base = zarr.storage.MemoryStore()
    zarr.create_array(base, shape=a.shape, chunks=chunks, dtype=a.dtype)[...] = a
    return CountingStore(base)


def _keys(*axes: range) -> list[str]:
    return sorted("c/" + "/".join(map(str, idx)) for idx in itertools.product(*axes))


SLICES = [
    # (key, the chunk indices it touches per axis) for a 12 x 12 array in 3 x 4 chunks
    (np.s_[4:7, 5:], (range(1, 3), range(1, 3))),
    (np.s_[0], (range(0, 1), range(0, 3))),
    (np.s_[:, 11], (range(0, 4), range(2, 3))),
    (np.s_[::6, 1:3], ([0, 2], range(0, 1))),
    (np.s_[10:1:-4, ::-1], ([0, 2, 3], range(0, 3))),
    (np.s_[5:6, 4:8], (range(1, 2), range(1, 2))),
]


@pytest.mark.parametrize("case", range(len(SLICES)))
def test_a_slice_reads_only_the_chunks_it_touches(local, case):
    key, touched = SLICES[case]
    a = _values((12, 12))
    store = _counted(a, (3, 4))
    z = sp.from_zarr(store)
    v = z[key]
    w = (v * 2 + 1).sum()  # a lazy expression of the slice: still nothing read
    assert store.chunks_read() == []
    assert float(w) == pytest.approx((a[key] * 2 + 1).sum())
    assert sorted(set(store.chunks_read())) == _keys(*touched)
    # each tile read each chunk it touches once: what the optimizer predicts
    tiling = v._expr.data.tiling if v._expr.data is not None else None
    if tiling is not None and not tiling.replicated:
        pieces = v._expr.storage(tiling.ntiles)
        reads = pieces.reads(v.shape, tiling, local.nworkers) // pieces.chunk_bytes
        assert len(store.chunks_read()) == reads


def test_from_zarr_reads_no_chunk_until_evaluated(local):
    a = _values((8, 6))
    store = _counted(a, (2, 2))
    z = sp.from_zarr(store)
    y = (z.T @ z)[::2] + z[:3].sum()
    assert store.chunks_read() == []
    np.testing.assert_allclose(y.to_numpy(), (a.T @ a)[::2] + a[:3].sum())
    assert sorted(set(store.chunks_read())) == _keys(range(4), range(3))


def test_slice_on_workers_reads_only_its_chunks(backend, tmp_path):
    """On any backend: chunks outside the slice are made unreadable, and the slice
    still reads (a read of any of them fails, as the whole array shows)."""
    a = _values((12, 12))
    path = tmp_path / "s.zarr"
    zarr.create_array(path, shape=a.shape, chunks=(3, 4), dtype=a.dtype, compressors=None)[...] = a
    key, touched = SLICES[0]
    keep = set(_keys(*touched))
    for i, j in itertools.product(range(4), range(3)):
        if f"c/{i}/{j}" not in keep:
            (path / "c" / str(i) / str(j)).write_bytes(b"not a chunk")
    np.testing.assert_array_equal(sp.from_zarr(path)[key].to_numpy(), a[key])
    with pytest.raises(Exception):  # noqa: B017 -- whatever zarr raises for a bad chunk
        sp.from_zarr(path).to_numpy()


# ---- in-memory stores --------------------------------------------------------------------


def test_in_memory_stores_on_in_process_workers(local):
    a = _values((9, 5))
    url = "memory://spartan-test/m.zarr"
    sp.to_zarr(sp.array(a, tiling="column"), url, chunks=(4, 2), overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(url, mode="r")[...], a)
    np.testing.assert_array_equal(sp.from_zarr(url)[::-2].to_numpy(), a[::-2])
    store = zarr.storage.MemoryStore()
    sp.to_zarr(sp.array(a, tiling="row"), store, chunks=(2, 3))
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], a)
    np.testing.assert_array_equal(sp.from_zarr(store)[1:, 2].to_numpy(), a[1:, 2])
    arr = zarr.open_array(store, mode="r")  # a zarr.Array itself
    np.testing.assert_array_equal(sp.from_zarr(arr).T.to_numpy(), a.T)


def test_in_memory_stores_refused_on_ray(on_ray):
    a = _values((9, 5))
    url = "memory://spartan-test/r.zarr"
    zarr.create_array(url, shape=a.shape, chunks=(4, 2), dtype=a.dtype, overwrite=True)[...] = a
    store = zarr.storage.MemoryStore()
    zarr.create_array(store, shape=a.shape, chunks=(4, 2), dtype=a.dtype)[...] = a
    x = sp.array(a)
    attempts = [
        lambda: sp.from_zarr(url),
        lambda: sp.from_zarr(store),
        lambda: sp.from_zarr(zarr.open_array(store, mode="r")),
        lambda: sp.from_zarr(CountingStore(store)),  # an in-memory store however wrapped
        lambda: sp.to_zarr(x, "memory://spartan-test/w.zarr"),
        lambda: sp.to_zarr(x, zarr.storage.MemoryStore()),
        lambda: sp.to_zarr(x, CountingStore(zarr.storage.MemoryStore())),
    ]
    for i, attempt in enumerate(attempts):
        with pytest.raises(ValueError, match="in-memory store.*Ray workers cannot reach"):
            attempt()
            pytest.fail(f"attempt {i} was not refused")


# ---- bad input ---------------------------------------------------------------------------


def test_missing_files_and_arrays(local, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.zarr"):
        sp.from_zarr(tmp_path / "nope.zarr")
    with pytest.raises(FileNotFoundError, match="nope.h5"):
        sp.from_hdf5(tmp_path / "nope.h5", "x")
    group = zarr.create_group(tmp_path / "g.zarr")
    group.create_array("inner/a", shape=(3,), dtype="f8")
    with pytest.raises(KeyError, match="'b'.*g.zarr"):
        sp.from_zarr(tmp_path / "g.zarr", component="b")
    with pytest.raises(ValueError, match="g.zarr.*group"):
        sp.from_zarr(tmp_path / "g.zarr")
    with pytest.raises(ValueError, match="group"):
        sp.from_zarr(tmp_path / "g.zarr", component="inner")
    assert sp.from_zarr(tmp_path / "g.zarr", component="inner/a").shape == (3,)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_group("grp")
        f.create_dataset("grp/d", data=np.ones(3))
    with pytest.raises(KeyError, match="'nope'.*f.h5"):
        sp.from_hdf5(tmp_path / "f.h5", "nope")
    with pytest.raises(ValueError, match="'grp'.*f.h5.*group"):
        sp.from_hdf5(tmp_path / "f.h5", "grp")
    (tmp_path / "t.txt").write_text("not hdf5")
    with pytest.raises(OSError, match="t.txt"):
        sp.from_hdf5(tmp_path / "t.txt", "x")


def test_dtypes_spartan_cannot_hold(local, tmp_path):
    zarr.create_array(tmp_path / "s.zarr", shape=(3,), dtype=str)
    with pytest.raises(TypeError, match="s.zarr"):
        sp.from_zarr(tmp_path / "s.zarr")
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f.create_dataset("s", data=["a", "bb"], dtype=h5py.string_dtype())
    with pytest.raises(TypeError, match="s.h5.*'s'"):
        sp.from_hdf5(tmp_path / "s.h5", "s")


def test_existing_arrays_replaced_only_with_overwrite(local, tmp_path):
    a = _values((6, 4))
    sp.to_zarr(sp.array(a), tmp_path / "x.zarr")
    sp.to_hdf5(tmp_path / "x.h5", "/x", sp.array(a))
    with pytest.raises(FileExistsError, match="x.zarr.*overwrite=True"):
        sp.to_zarr(sp.array(a), tmp_path / "x.zarr")
    with pytest.raises(FileExistsError, match="x.h5.*overwrite=True"):
        sp.to_hdf5(tmp_path / "x.h5", "/x", sp.array(a))
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "x.zarr", mode="r")[...], a)
    b = _values((3, 5, 2)) * 2
    sp.to_zarr(sp.array(b), tmp_path / "x.zarr", overwrite=True)
    sp.to_hdf5(tmp_path / "x.h5", "/x", sp.array(b), overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "x.zarr", mode="r")[...], b)
    with h5py.File(tmp_path / "x.h5", "r") as f:
        np.testing.assert_array_equal(f["x"][...], b)
    np.testing.assert_array_equal(sp.from_hdf5(tmp_path / "x.h5", "x").to_numpy(), b)


def _zarr_changes(path, a):
    def resized():
        zarr.open_array(path, mode="r+").resize((a.shape[0] + 2, a.shape[1]))

    def replaced():  # the same shape, dtype and chunks: other values
        zarr.create_array(path, shape=a.shape, chunks=(3, 2), dtype=a.dtype, overwrite=True)[
            ...
        ] = -a

    def retyped():
        zarr.create_array(path, shape=a.shape, chunks=(3, 2), dtype="f4", overwrite=True)

    def deleted():
        shutil.rmtree(path)

    return {"resized": resized, "replaced": replaced, "retyped": retyped, "deleted": deleted}


@pytest.mark.parametrize("change", ["resized", "replaced", "retyped", "deleted"])
def test_zarr_store_changed_between_open_and_read(backend, tmp_path, change):
    a = _values((8, 4))
    path = tmp_path / "c.zarr"
    zarr.create_array(path, shape=a.shape, chunks=(3, 2), dtype=a.dtype)[...] = a
    z = sp.from_zarr(path)
    head = z[:3].to_numpy()  # read before the change
    np.testing.assert_array_equal(head, a[:3])
    _zarr_changes(path, a)[change]()
    for lazy in [z, z[3:], z.sum()]:
        with pytest.raises(sp.StoreChangedError, match="c.zarr"):
            np.asarray(lazy)
    if change != "deleted":  # opened again, it is read as it now is
        np.testing.assert_array_equal(
            sp.from_zarr(path).to_numpy(), zarr.open_array(path, mode="r")[...]
        )


def _hdf5_changes(path, a):
    def resized():
        with h5py.File(path, "a") as f:
            f["d"].resize(a.shape[0] + 1, axis=0)

    def recreated():  # deleted, then made again in other chunks
        with h5py.File(path, "a") as f:
            del f["d"]
            f.create_dataset("d", data=-a, chunks=(2, 2))

    def retyped():
        with h5py.File(path, "a") as f:
            del f["d"]
            f.create_dataset("d", data=a.astype("f4"), chunks=(3, 2))

    def deleted():
        with h5py.File(path, "a") as f:
            del f["d"]

    def file_gone():
        path.unlink()

    return {
        "resized": resized,
        "recreated": recreated,
        "retyped": retyped,
        "deleted": deleted,
        "file gone": file_gone,
    }


@pytest.mark.parametrize("change", ["resized", "recreated", "retyped", "deleted", "file gone"])
def test_hdf5_dataset_changed_between_open_and_read(backend, tmp_path, change):
    a = _values((8, 4))
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=a, chunks=(3, 2), maxshape=(None, 4))
    h = sp.from_hdf5(path, "d")
    np.testing.assert_array_equal(h[:3].to_numpy(), a[:3])
    _hdf5_changes(path, a)[change]()
    for lazy in [h, h[3:], h.sum()]:
        with pytest.raises(sp.StoreChangedError, match="c.h5"):
            np.asarray(lazy)


def test_hdf5_dataset_recreated_alike_is_a_change(local, tmp_path):
    a = _values((8, 4))
    path = tmp_path / "same.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("d", data=a, chunks=(3, 2))
    h = sp.from_hdf5(path, "d")
    with h5py.File(path, "a") as f:
        del f["d"]
        f.create_dataset("d", data=-a, chunks=(3, 2))
    with pytest.raises(sp.StoreChangedError, match="same.h5"):
        h.to_numpy()


def test_hdf5_writes_by_spartan_to_other_datasets_are_no_change(backend, tmp_path):
    a = _values((8, 4))
    path = tmp_path / "two.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=a, chunks=(3, 2))
        f.create_dataset("b", data=a + 1, chunks=(3, 2))
    x, old_b = sp.from_hdf5(path, "a"), sp.from_hdf5(path, "b")
    sp.to_hdf5(path, "/c", x * 2)  # a new dataset in the same file
    sp.to_hdf5(path, {"b": x - 1}, overwrite=True)  # b replaced
    np.testing.assert_array_equal(x.to_numpy(), a)
    np.testing.assert_array_equal(sp.from_hdf5(path, "c").to_numpy(), a * 2)
    np.testing.assert_array_equal(sp.from_hdf5(path, "b").to_numpy(), a - 1)
    with pytest.raises(sp.StoreChangedError, match="two.h5"):
        old_b.to_numpy()  # read after its dataset was replaced
    y = sp.from_hdf5(path, "a")
    with h5py.File(path, "a") as f:  # another program writes the file
        f["c"][0, 0] = 7.0
    with pytest.raises(sp.StoreChangedError, match="two.h5"):
        y.sum().to_numpy()
    np.testing.assert_array_equal(x.to_numpy(), a)  # (read before: kept)


# ---- writing: every chunk written by one worker ------------------------------------------


@st.composite
def _write_case(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    unit = tuple(draw(st.integers(1, 10)) for _ in range(ndim))
    kind = draw(st.sampled_from(["row", "column", "block", "dup"]))
    pieces = draw(st.integers(1, 12))
    nworkers = draw(st.integers(1, 5))
    tiling = Tiling.named(kind, shape, pieces) if ndim else Tiling.single(shape)
    return shape, tiling, unit, nworkers


@settings(max_examples=300, deadline=None)
@given(case=_write_case())
def test_every_chunk_is_written_by_exactly_one_worker(case):
    shape, tiling, unit, nworkers = case
    grid = tiling if not tiling.replicated else Tiling.row(shape, nworkers)
    regions = owned_regions(Grid.of(grid, shape, nworkers), unit)
    owner = {}
    for box, worker in regions:
        assert 0 <= worker < nworkers
        for (lo, hi), n, k in zip(box, shape, unit):  # whole chunks only
            assert lo % k == 0 and (hi % k == 0 or hi == n) and lo < hi <= n
        for chunk in itertools.product(
            *(range(lo // k, -(-hi // k)) for (lo, hi), k in zip(box, unit))
        ):
            assert chunk not in owner, (chunk, regions)
            owner[chunk] = worker
    every = set(itertools.product(*(range(-(-n // k)) for n, k in zip(shape, unit))))
    assert set(owner) == every
    for chunk, worker in owner.items():  # the writer holds the chunk's first element
        first = tuple(i * k for i, k in zip(chunk, unit))
        idx = next(
            i
            for i, box in grid.tiles(shape)
            if all(lo <= p < hi for p, (lo, hi) in zip(first, box))
        )
        assert worker == grid.worker_of(idx, nworkers)


@pytest.mark.parametrize("tiling", ["row", "column", "block"])
def test_unaligned_writes_from_many_tiles(backend, tmp_path, tiling, monkeypatch):
    """Many small tiles, chunks cut across all of them: every chunk written whole."""
    monkeypatch.setattr(sp.config, "tiles_per_worker", 5)
    a = _values((23, 17))
    x = sp.array(a, tiling=tiling) * 1
    sp.to_zarr(x, tmp_path / "u.zarr", chunks=(4, 3))
    sp.to_zarr(x, tmp_path / "s.zarr", chunks=(2, 3), shards=(6, 9))
    sp.to_hdf5(tmp_path / "u.h5", "/u", x, chunks=(5, 2))
    for name in ["u.zarr", "s.zarr"]:
        np.testing.assert_array_equal(zarr.open_array(tmp_path / name, mode="r")[...], a)
    with h5py.File(tmp_path / "u.h5", "r") as f:
        np.testing.assert_array_equal(f["u"][...], a)


def test_to_zarr_passes_options_to_zarr(backend, tmp_path):
    a = _values((10, 6))
    x = sp.array(a, tiling="row")
    sp.to_zarr(
        x,
        tmp_path / "o.zarr",
        chunks=(2, 3),
        shards=(4, 6),
        compressors=zarr.codecs.ZstdCodec(level=3),
        attributes={"units": "m"},
    )
    stored = zarr.open_array(tmp_path / "o.zarr", mode="r")
    assert stored.shards == (4, 6) and stored.chunks == (2, 3)
    assert stored.attrs["units"] == "m"
    assert type(stored.compressors[0]).__name__ == "ZstdCodec"
    np.testing.assert_array_equal(stored[...], a)
    np.testing.assert_array_equal(sp.from_zarr(tmp_path / "o.zarr")[3:8].to_numpy(), a[3:8])

    sp.to_zarr(x, tmp_path / "v2.zarr", component="grp/arr", chunks=(3, 3), zarr_format=2)
    assert (tmp_path / "v2.zarr" / "grp" / "arr" / ".zarray").exists()
    stored = zarr.open_array(tmp_path / "v2.zarr", path="grp/arr", mode="r")
    assert stored.metadata.zarr_format == 2
    np.testing.assert_array_equal(stored[...], a)
    got = sp.from_zarr(tmp_path / "v2.zarr", component="grp/arr")
    np.testing.assert_array_equal(got[:, ::-1].to_numpy(), a[:, ::-1])


# ---- a worker lost while writing -----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["zarr", "hdf5"])
def test_a_region_whose_worker_was_lost_is_written_again(local, tmp_path, monkeypatch, fmt):
    """The backend reports the first write task's worker lost: that region is written
    again (a chain's, alone), and the array is complete."""
    from spartan.backend import rerun
    from spartan.frontend import stored

    a = _values((12, 5))
    x = sp.array(a, tiling="row") * 1
    real, lost = local.results, []

    def results(handles):
        if not lost:
            lost.append(handles)
            raise ConnectionError("worker gone")
        return real(handles)

    monkeypatch.setattr(local, "results", results)
    monkeypatch.setattr(stored, "lost_worker", lambda error: isinstance(error, ConnectionError))
    monkeypatch.setattr(rerun, "lost_worker", lambda error: isinstance(error, ConnectionError))
    if fmt == "zarr":
        sp.to_zarr(x, tmp_path / "w.zarr", chunks=(5, 5))
        got = zarr.open_array(tmp_path / "w.zarr", mode="r")[...]
    else:
        sp.to_hdf5(tmp_path / "w.h5", "x", x, chunks=(5, 5))
        with h5py.File(tmp_path / "w.h5", "r") as f:
            got = f["x"][...]
    assert lost  # (the loss was reported)
    np.testing.assert_array_equal(got, a)


def test_workers_lost_in_every_round_fail_the_write_loudly(local, tmp_path, monkeypatch):
    from spartan.backend import rerun
    from spartan.frontend import stored

    def lost(handles):
        raise ConnectionError("worker gone")

    monkeypatch.setattr(local, "results", lost)
    monkeypatch.setattr(stored, "lost_worker", lambda error: True)
    monkeypatch.setattr(rerun, "lost_worker", lambda error: True)
    with pytest.raises(RuntimeError, match="lost 3 times while writing .*w.zarr"):
        sp.to_zarr(sp.ones((8, 4), tiling="row") * 2, tmp_path / "w.zarr")


# ---- found in review ------------------------------------------------------------------------


def test_to_zarr_over_the_array_it_reads_under_another_spelling(on_ray, tmp_path):
    """The source is made before the replacing array is created (Ray runs reads late)."""
    a = _values((200, 5))
    path = tmp_path / "g.zarr"
    zarr.create_array(path, name="a", shape=a.shape, chunks=(10, 5), dtype=a.dtype)[...] = a
    sp.to_zarr(sp.from_zarr(path / "a") + 1, path, component="a", overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(path, path="a", mode="r")[...], a + 1)
    store = zarr.storage.LocalStore(path)
    sp.to_zarr(sp.from_zarr(path, component="a") * 2, store, component="a", overwrite=True)
    np.testing.assert_array_equal(zarr.open_array(path, path="a", mode="r")[...], (a + 1) * 2)


def test_asarray_of_a_writable_handle_copies_now_as_numpy(local, tmp_path):
    a = np.arange(100.0)
    with h5py.File(tmp_path / "w.h5", "w") as f:
        f.create_dataset("a", data=a)
    with h5py.File(tmp_path / "w.h5", "r+") as f:
        x = sp.asarray(f["a"])
        f["a"][:10] = 7.0  # after asarray: not seen, as with np.asarray
        assert float(x.sum()) == a.sum()
    with h5py.File(tmp_path / "w.h5", "r") as f:  # read-only: read lazily by the workers
        y = sp.asarray(f["a"])
        assert isinstance(y._expr, StoredArray)
    np.testing.assert_array_equal(y.to_numpy()[:10], 7.0)
    z = zarr.create_array(tmp_path / "z.zarr", shape=(6,), dtype="f8")
    z[...] = 1.0
    w = sp.asarray(z)  # opened for writing: a copy now
    z[...] = 2.0
    assert float(w.sum()) == 6.0
    assert isinstance(sp.asarray(zarr.open_array(tmp_path / "z.zarr", mode="r"))._expr, StoredArray)


def test_asarray_of_a_dataset_in_a_file_object(local):
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        f.create_dataset("a", data=np.arange(5.0))
        np.testing.assert_array_equal(sp.asarray(f["a"]).to_numpy(), np.arange(5.0))


def test_to_hdf5_makes_every_array_before_writing_any(local, tmp_path):
    a = _values((6, 4))
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=a, chunks=(3, 2))
    src = sp.from_hdf5(path, "/a")
    sp.to_hdf5(path, {"/a": src + 1, "/b": src * 2}, overwrite=True)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["a"][...], a + 1)
        np.testing.assert_array_equal(f["b"][...], a * 2)


def test_bad_write_arguments_fail_before_anything_is_written(local, tmp_path):
    x = sp.ones((4, 3), tiling="row") * 2
    with pytest.raises(ValueError, match="positive"):
        sp.to_zarr(x, tmp_path / "c.zarr", chunks=(0, 3))
    with pytest.raises(ValueError, match="one per axis"):
        sp.to_zarr(x, tmp_path / "c.zarr", chunks=(2,))
    assert not (tmp_path / "c.zarr").exists()
    with pytest.raises(TypeError, match="dtype"):
        sp.to_zarr(x, tmp_path / "d.zarr", dtype="f4")
    zarr.create_group(tmp_path / "g.zarr")
    with pytest.raises(FileExistsError, match="g.zarr"):
        sp.to_zarr(x, tmp_path / "g.zarr")
    (tmp_path / "notes.txt").write_text("not hdf5")
    with pytest.raises(OSError, match="notes.txt"):
        sp.to_hdf5(tmp_path / "notes.txt", "x", x)
    with h5py.File(tmp_path / "h.h5", "w") as f:
        f.create_group("grp").create_dataset("keep", data=np.arange(3))
        f.create_dataset("null", shape=None, dtype="f8")
    with pytest.raises(ValueError, match="group"):
        sp.to_hdf5(tmp_path / "h.h5", "grp", x, overwrite=True)
    with h5py.File(tmp_path / "h.h5", "r") as f:
        assert "keep" in f["grp"]
    with pytest.raises(ValueError, match="no array"):
        sp.from_hdf5(tmp_path / "h.h5", "null")


def test_a_relative_local_store_is_found_after_the_driver_changes_directory(
    on_ray, tmp_path, monkeypatch
):
    a = _values((8, 3))
    monkeypatch.chdir(tmp_path)
    zarr.create_array("rel.zarr", shape=a.shape, chunks=(4, 3), dtype=a.dtype)[...] = a
    x = sp.from_zarr(zarr.open_array(zarr.storage.LocalStore("rel.zarr"), mode="r"))
    monkeypatch.chdir("/")
    np.testing.assert_array_equal(x.to_numpy(), a)
