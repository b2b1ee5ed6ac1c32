"""``.npy``/``.npz`` and raw binary files, read and written tile by tile by the workers.

``load`` reads the header on the driver, then every tile is read by the worker that
holds it from a memory map of the file (``newarray``); ``save`` writes the header, then
every group of rows is written into a memory map of the file by the worker holding it
(a ``join_update`` whose only output is the bytes each group wrote). No array data
passes through the driver; workers must see the same file system as the driver.

>>> sp.save("x.npy", x); y = sp.load("x.npy")          # doctest: +SKIP
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, newarray
from spartan.frontend.decompositions import _group_of
from spartan.frontend.join_update import JoinUpdate
from spartan.tiling import Box


def _path(file: Any, suffix: str = "") -> str:
    path = os.fspath(file)
    if suffix and not path.endswith(suffix):
        path += suffix
    return os.path.abspath(path)


class _ReadNpy:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        mm = np.load(self.path, mmap_mode="r")
        return np.array(mm[tuple(slice(lo, hi) for lo, hi in box)], dtype=dtype)


class _ReadRaw:
    def __init__(self, path: str, dtype: np.dtype, shape: tuple[int, ...], offset: int):
        self.path, self.dtype, self.shape, self.offset = path, dtype, shape, offset

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        mm = np.memmap(self.path, self.dtype, "r", self.offset, self.shape)
        return np.array(mm[tuple(slice(lo, hi) for lo, hi in box)], dtype=dtype)


def _read_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran flag and dtype of the ``.npy`` stream at ``f``'s position."""
    version = np.lib.format.read_magic(f)
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = read(f)
    if fortran and len(shape) > 1:
        raise ValueError("spartan.load reads C-ordered arrays only")
    if dtype.hasobject:
        raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
    return shape, fortran, dtype


class _ReadMember:
    """A tile of an ``.npz`` member: a memory map of a stored member, or (compressed)
    the member decompressed by the worker itself."""

    def __init__(
        self, path: str, member: str, offset: int | None, shape: tuple[int, ...], dtype: np.dtype
    ):
        self.path, self.member, self.offset = path, member, offset
        self.shape, self.dtype = shape, dtype

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        sel = tuple(slice(lo, hi) for lo, hi in box)
        if self.offset is not None:
            mm = np.memmap(self.path, self.dtype, "r", self.offset, self.shape)
            return np.array(mm[sel], dtype=dtype)
        with zipfile.ZipFile(self.path) as z, z.open(self.member) as f:
            return np.array(np.lib.format.read_array(f)[sel], dtype=dtype)


class NpzFile(Mapping):
    """The arrays of an ``.npz`` file by name, as lazy spartan arrays."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._arrays: dict[str, Array] = {}
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                name = info.filename[: -len(".npy")]
                with z.open(info) as f:
                    shape, _, dtype = _read_header(f)
                    header_len = f.tell()
                offset = None
                if info.compress_type == zipfile.ZIP_STORED:
                    with open(path, "rb") as raw:  # the local header's own lengths
                        raw.seek(info.header_offset + 26)
                        n_name, n_extra = struct.unpack("<HH", raw.read(4))
                    offset = info.header_offset + 30 + n_name + n_extra + header_len
                init = _ReadMember(path, info.filename, offset, shape, dtype)
                self._arrays[name] = newarray(shape, init, dtype, name="load")

    @property
    def files(self) -> list[str]:
        return list(self._arrays)

    def __getitem__(self, key: str) -> Array:
        return self._arrays[key]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def close(self) -> None:
        """Nothing to release: every tile opens the file itself."""

    def __enter__(self) -> NpzFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def load(file: Any, mmap_mode: Any = None, allow_pickle: bool = False, **kwargs: Any) -> Any:
    """A ``.npy`` file as a spartan array, or an ``.npz`` file as a mapping of them;
    each tile is read by its own worker (memory-mapped unless the member is compressed)."""
    path = _path(file)
    with open(path, "rb") as f:
        magic = f.read(6)
        if magic[:4] == b"PK\x03\x04":
            return NpzFile(path)
        if magic != b"\x93NUMPY":
            raise ValueError(f"{path} is not a .npy or .npz file")
        f.seek(0)
        shape, _, dtype = _read_header(f)
    return newarray(shape, _ReadNpy(path), dtype, name="load")


class _WriteRows:
    """``f_join``: write a group of rows into the file's memory map; output its bytes."""

    def __init__(
        self,
        path: str,
        kind: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        offset: int,
        groups: int,
    ):
        self.path, self.kind, self.shape, self.dtype = path, kind, shape, dtype
        self.offset, self.groups = offset, groups

    def __call__(self, extents, block: np.ndarray):
        lo, hi = extents[0].box[0] if self.shape else (0, 1)
        if self.kind == "npy":
            mm = np.load(self.path, mmap_mode="r+")
        else:
            mm = np.memmap(self.path, self.dtype, "r+", self.offset, self.shape)
        if self.shape:
            mm[lo:hi] = block
        else:
            mm[()] = block.reshape(())
        mm.flush()
        g = _group_of(lo, self.shape[0] if self.shape else 1, self.groups)
        return [((slice(g, g + 1),), np.array([block.nbytes]))]


def _write(x: Array, path: str, kind: str, offset: int) -> None:
    from spartan.backend import session

    src = x.reshape(1) if x.ndim == 0 else x
    groups = max(1, min(src.shape[0], session.current().nworkers))
    task = _WriteRows(path, kind, x.shape, x.dtype, offset, groups)
    written = Array(
        JoinUpdate(
            task, None, [src._expr], [0], (groups,), np.int64, groups=groups, name=f"write_{kind}"
        )
    )
    written.evaluate()


def save(file: Any, arr: Any, allow_pickle: bool = False, fix_imports: Any = None) -> None:
    """Write ``arr`` to a ``.npy`` file (the ``.npy`` suffix is added like NumPy does)."""
    x = asarray(arr)
    path = _path(file, ".npy")
    np.lib.format.open_memmap(path, mode="w+", dtype=x.dtype, shape=x.shape).flush()
    if x.size:
        _write(x, path, "npy", 0)


def tofile(arr: Any, fid: Any, sep: str = "", format: str = "%s") -> None:
    """Raw binary dump in C order (text output is not supported)."""
    if sep:
        raise ValueError("spartan.tofile writes binary files only (sep='')")
    x = asarray(arr)
    path = _path(fid)
    with open(path, "wb") as f:
        f.truncate(x.nbytes)
    if x.size:
        _write(x, path, "raw", 0)


def fromfile(
    file: Any,
    dtype: Any = float,
    count: int = -1,
    sep: str = "",
    offset: int = 0,
    *,
    shape: Any = None,
) -> Array:
    """A raw binary file as a 1-d array (or ``shape``), each tile read by its worker."""
    if sep:
        raise ValueError("spartan.fromfile reads binary files only (sep='')")
    path = _path(file)
    dt = np.dtype(dtype)
    available = (os.path.getsize(path) - offset) // dt.itemsize
    n = available if count < 0 else min(count, available)
    shp = (n,) if shape is None else tuple(shape)
    if int(np.prod(shp)) > available:
        raise ValueError(f"file {path} holds {available} items, {int(np.prod(shp))} asked for")
    return newarray(shp, _ReadRaw(path, dt, shp, offset), dt, name="fromfile")
