"""``.npy``/``.npz`` and raw binary files, read and written tile by tile by the workers.

``load`` reads the header on the driver, then every tile is read by the worker that
holds it from a memory map of the file (``newarray``); ``save`` writes the header, then
every group of rows is written into a memory map of the file by the worker holding it
(a ``join_update`` whose only output is the bytes each group wrote). No array data
passes through the driver; workers must see the same file system as the driver.

>>> sp.save("x.npy", x); y = sp.load("x.npy")
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from spartan.backend.npy_header import read_header
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
    shape, fortran, dtype = read_header(f)
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
        data = np.ascontiguousarray(block)
        return [((slice(g, g + 1),), np.array([[data.nbytes, zlib.crc32(data)]]))]


def _write(x: Array, path: str, kind: str, offset: int) -> np.ndarray:
    """Write ``x``'s bytes (C order) into ``path`` at ``offset`` from the workers;
    returns ``(bytes, crc32)`` per group of rows, in file order (a tiny forced result)."""
    from spartan.backend import session

    src = x.reshape(1) if x.ndim == 0 else x
    groups = max(1, min(src.shape[0], session.current().nworkers))
    task = _WriteRows(path, kind, x.shape, x.dtype, offset, groups)
    written = Array(
        JoinUpdate(
            task,
            None,
            [src._expr],
            [0],
            (groups, 2),
            np.int64,
            groups=groups,
            name=f"write_{kind}",
        )
    )
    return written.to_numpy()


def _gf2_times(mat: list[int], vec: int) -> int:
    out, i = 0, 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _gf2_square(mat: list[int]) -> list[int]:
    return [_gf2_times(mat, mat[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of ``A + B`` from ``crc(A)``, ``crc(B)`` and ``len(B)`` (zlib's
    ``crc32_combine``: apply ``len2`` zero bytes to ``crc1`` as GF(2) matrix powers)."""
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = _gf2_square(odd)
    odd = _gf2_square(even)
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def _npy_header(x: Array) -> bytes:
    meta = {
        "descr": np.lib.format.dtype_to_descr(x.dtype),
        "fortran_order": False,
        "shape": x.shape,
    }
    buf = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, meta)
    except ValueError:  # a header too long for format 1.0
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, meta)
    return buf.getvalue()


_LOCAL = struct.Struct("<IHHHHHIIIHH")  # zip local file header
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # zip central directory entry
_END = struct.Struct("<IHHHHIIH")  # end of central directory
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01


def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """Write arrays into an uncompressed ``.npz`` (``arr_0``, ... and keyword names).

    The driver writes the zip's headers; every group of rows of every array is written
    into its place in the file by the worker holding it, which also returns the CRC-32
    of its bytes; the driver combines those into each member's CRC. No array data goes
    through the driver. Members are limited to 4 GiB (no ZIP64)."""
    path = _path(file, ".npz")
    named = {f"arr_{i}": a for i, a in enumerate(args)}
    for k, v in kwds.items():
        if k in named:
            raise ValueError(f"Cannot use un-named variables and keyword {k}")
        named[k] = v
    members = []
    with open(path, "wb") as f:
        for name, value in named.items():
            x = asarray(value)
            member = (name + ".npy").encode()
            header = _npy_header(x)
            size = len(header) + x.nbytes
            if size >= 0xFFFFFFFF:
                raise ValueError(f"spartan.savez: member {name!r} exceeds 4 GiB (no ZIP64)")
            local = f.tell()
            f.write(_LOCAL.pack(0x04034B50, 20, 0, 0, 0, _DOS_DATE, 0, size, size, len(member), 0))
            f.write(member)
            data = f.tell() + len(header)
            f.write(header)
            f.seek(data + x.nbytes)
            members.append((x, member, header, size, local, data))
        central = f.tell()
        for _, member, _, size, local, _ in members:
            f.write(
                _CENTRAL.pack(
                    0x02014B50,
                    20,
                    20,
                    0,
                    0,
                    0,
                    _DOS_DATE,
                    0,
                    size,
                    size,
                    len(member),
                    0,
                    0,
                    0,
                    0,
                    0,
                    local,
                )
            )
            f.write(member)
        end = f.tell()
        f.write(_END.pack(0x06054B50, 0, 0, len(members), len(members), end - central, central, 0))
    crcs = []
    for x, _, header, _, _, data in members:
        crc = zlib.crc32(header)
        if x.size:
            for nbytes, part in _write(x, path, "raw", data):
                crc = crc32_combine(crc, int(part), int(nbytes))
        crcs.append(crc)
    with open(path, "r+b") as f:
        entry = central
        for (_, member, _, _, local, _), crc in zip(members, crcs):
            f.seek(local + 14)
            f.write(struct.pack("<I", crc))
            f.seek(entry + 16)
            f.write(struct.pack("<I", crc))
            entry += _CENTRAL.size + len(member)


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
    like: Any = None,
    shape: Any = None,
) -> Array:
    """A raw binary file as a 1-d array (or ``shape``), each tile read by its worker.
    ``like=`` is accepted as NumPy's other creation functions take it here: the result
    is a spartan array whatever ``like`` is."""
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
