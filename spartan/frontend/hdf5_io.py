"""HDF5 datasets read and written tile by tile by the workers (h5py: ``pip install
'spartan[io]'``).

The driver reads only the dataset's metadata; every tile is read by its own worker,
which opens the file itself (read-only HDF5 files may be opened by many processes).
HDF5 cannot be written by several processes at once (without MPI), so a write goes
one worker at a time: each writes the chunks of its own tiles, with the chunks split
between tiles given wholly to one of them (:func:`spartan.frontend.stored.store`).

>>> sp.to_hdf5("x.h5", "/x", sp.arange(10.0))
>>> float(sp.from_hdf5("x.h5", "/x")[2:5].sum())
9.0
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.evaluate import evaluate
from spartan.frontend.expr import Expr
from spartan.frontend.stored import (
    StoreChangedError,
    StoredArray,
    readable_dtype,
    store,
    tile_chunks,
    write_grid,
)
from spartan.tiling import Box


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise ModuleNotFoundError(
            "HDF5 support needs h5py: pip install 'spartan[io]'", name="h5py"
        ) from None
    return h5py


class Hdf5Storage:
    """An HDF5 dataset as every worker opens it (see :class:`~spartan.frontend.stored.Storage`)."""

    reader, writer = "from_hdf5", "to_hdf5"
    in_memory = False

    def __init__(self, path: str, name: str, dataset: Any) -> None:
        self.path, self.name = path, name
        self.where = f"{path} (dataset {name!r})"
        self.shape = tuple(dataset.shape)
        self.dtype = readable_dtype(dataset.dtype, self.where)
        # a contiguous dataset is read element-exact: no unit is read in part
        self.chunks = tuple(dataset.chunks or (1,) * len(self.shape))
        self.write_chunks = self.chunks
        self.fingerprint = {**_fingerprint(dataset), "file": _file_state(path)}
        _opened.add(self)

    def open(self, mode: str) -> tuple[Any, Any]:
        """The file and the dataset, checked to be the one the driver opened."""
        h5py = _h5py()
        try:
            # (before opening: opening a file to write marks it)
            state = _file_state(self.path)
            f = h5py.File(self.path, mode)
        except FileNotFoundError:
            raise StoreChangedError(f"{self.path} is gone since it was opened") from None
        try:
            dataset = f[self.name]
            # (a write's rounds each change the file: the writers check the dataset)
            now = {
                **_fingerprint(dataset),
                "file": state if mode == "r" else self.fingerprint["file"],
            }
        except KeyError:
            f.close()
            raise StoreChangedError(f"{self.where} is gone since it was opened") from None
        if now != self.fingerprint:
            f.close()
            changed = [k for k in now if now[k] != self.fingerprint[k]]
            raise StoreChangedError(
                f"{self.where} changed since it was opened ({', '.join(changed)}); "
                "open it again with spartan.from_hdf5"
            )
        return f, dataset

    def read(self, index: tuple) -> np.ndarray:
        f, dataset = self.open("r")
        with f:
            return np.asarray(dataset[index])

    def write(self, regions: Sequence[tuple[Box, np.ndarray]]) -> int:
        f, dataset = self.open("r+")
        with f:
            for box, block in regions:
                dataset[tuple(slice(lo, hi) for lo, hi in box)] = block
        return sum(block.nbytes for _, block in regions)


#: the datasets opened in this driver: a write by spartan into their file (another
#: dataset, or the file's metadata) is no change to them (see :func:`_wrote`)
_opened: weakref.WeakSet[Hdf5Storage] = weakref.WeakSet()


def _file_state(path: str) -> tuple[int, int, int]:
    """When the file was last written, its size and inode: HDF5 may reuse a deleted
    dataset's address and space for a new one of the same layout, so only the file
    tells that a dataset was replaced."""
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size, st.st_ino


def _wrote(path: str, name: str) -> None:
    """spartan wrote dataset ``name`` of ``path``: the other datasets opened from it
    take the file's new state (the one written is a new dataset: its readers must
    fail)."""
    state = _file_state(path)
    for source in list(_opened):
        if source.path == path and source.name.strip("/") != name.strip("/"):
            source.fingerprint["file"] = state


def _fingerprint(dataset: Any) -> dict:
    """What must stay the same between opening and reading: the dataset's layout and
    the address of its object in the file (a dataset deleted and made again)."""
    h5py = _h5py()
    return {
        "shape": tuple(dataset.shape),
        "dtype": dataset.dtype.str,
        "chunks": dataset.chunks,
        "compression": dataset.compression,
        "object": h5py.h5o.get_info(dataset.id).addr,
    }


def _dataset(path: str, name: str) -> Hdf5Storage:
    h5py = _h5py()
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    with _open_file(path, "r") as f:
        if name not in f:
            raise KeyError(f"no dataset {name!r} in {path}")
        obj = f[name]
        if not isinstance(obj, h5py.Dataset):
            raise ValueError(f"{name!r} in {path} is an HDF5 group, not a dataset")
        if obj.shape is None:
            raise ValueError(f"{name!r} in {path} holds no array (an empty dataspace)")
        return Hdf5Storage(path, name, obj)


def _open_file(path: str, mode: str) -> Any:
    """``h5py.File(path, mode)``; a file h5py cannot open raises OSError naming it."""
    h5py = _h5py()
    try:
        return h5py.File(path, mode)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise OSError(f"{path} is not an HDF5 file h5py can open ({error})") from None


def from_hdf5(path: str | os.PathLike, dataset: str) -> Array:
    """An HDF5 dataset as a lazy spartan array; each tile is read by its own worker.

    Nothing is read until the array is evaluated, and a slice of it reads only what the
    slice touches. Every worker must see ``path`` (a shared or local file system).

    >>> sp.to_hdf5("data.h5", "/temperature", sp.ones((4, 200)))
    >>> x = sp.from_hdf5("data.h5", "/temperature")
    >>> float(x[:, :100].mean())
    1.0
    """
    return Array(StoredArray(_dataset(os.path.abspath(os.fspath(path)), dataset)))


def to_hdf5(
    filename: str | os.PathLike,
    *args: Any,
    chunks: Any = True,
    overwrite: bool = False,
    **kwargs: Any,
) -> None:
    """Write arrays as HDF5 datasets, as :func:`dask.array.to_hdf5`:
    ``to_hdf5(filename, "/x", x)`` or ``to_hdf5(filename, {"/x": x, "/y": y})``.

    ``chunks=True`` chunks each dataset like the array's tiles (each worker writes its
    own); a tuple sets them; None stores the dataset contiguous. Other ``kwargs`` go to
    ``h5py.Group.create_dataset`` (``compression``, ``shuffle``...). The file is opened
    in append mode; an existing dataset is replaced only with ``overwrite=True``
    (FileExistsError otherwise). Workers write one at a time (HDF5 is written by one
    process at a time), each its own tiles.

    >>> sp.to_hdf5("out.h5", "/x", sp.ones((1000, 10)), compression="gzip")
    >>> sp.from_hdf5("out.h5", "/x").shape
    (1000, 10)
    """
    h5py = _h5py()
    if len(args) == 1 and isinstance(args[0], Mapping):
        datasets = dict(args[0])
    elif len(args) == 2:
        datasets = {args[0]: args[1]}
    else:
        raise TypeError("to_hdf5 takes (filename, '/name', x) or (filename, {'/name': x, ...})")
    path = os.path.abspath(os.fspath(filename))
    arrays = {
        name: x if isinstance(x, Array) else Array._local(np.asarray(x), None)
        for name, x in datasets.items()
    }
    for name, arr in arrays.items():
        where = f"{path} (dataset {name!r})"
        readable_dtype(arr.dtype, where)
        if os.path.exists(path):
            with _open_file(path, "r") as f:
                if name in f and not isinstance(f[name], h5py.Dataset):
                    raise ValueError(f"{path} has a group {name!r}; it is not replaced")
                if name in f and not overwrite:
                    raise FileExistsError(f"{where} exists; pass overwrite=True to replace it")
    # every array is made before any is written: one may read a dataset another replaces
    evaluate(*(arr._expr for arr in arrays.values() if arr._np is None))
    for name, arr in arrays.items():
        dtype = readable_dtype(arr.dtype, f"{path} (dataset {name!r})")

        def create(expr: Expr | None, name: str = name, arr: Array = arr, dtype=dtype) -> Any:  # noqa: ANN001
            layout = chunks
            if chunks is True and expr is not None:
                layout = tile_chunks(write_grid(expr))
            elif chunks is False:
                layout = None
            if not arr.shape or not arr.size:  # (HDF5 chunks neither)
                layout = None
            with _open_file(path, "a") as f:
                if name in f:
                    del f[name]
                created = f.create_dataset(
                    name, shape=arr.shape, dtype=dtype, chunks=layout, **kwargs
                )
                if expr is None:  # held in the driver: written from here
                    created[...] = arr._np
            return _dataset(path, name)  # (its facts as the workers will see them)

        if arr._np is not None:
            create(None)
        else:  # one writer at a time
            store(arr._expr, create, serial=True)
        _wrote(path, name)
