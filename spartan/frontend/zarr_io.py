"""Zarr arrays read and written tile by tile by the workers (zarr 3: ``pip install
'spartan[io]'``).

The driver opens only the array's metadata; every tile is read by its own worker, which
opens the store itself (any store zarr reaches: a local path, an fsspec URL such as
``s3://`` with the credentials in ``storage_options``, or a zarr ``Store``). Writing
gives each chunk (shard) to exactly one worker (:func:`spartan.frontend.stored.store`).

>>> sp.to_zarr(sp.arange(10.0), "x.zarr")
>>> float(sp.from_zarr("x.zarr")[2:5].sum())
9.0
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.evaluate import pending_order
from spartan.frontend.expr import Expr
from spartan.frontend.stored import (
    StoreChangedError,
    StoredArray,
    check_reachable,
    readable_dtype,
    store,
    tile_chunks,
    write_grid,
)
from spartan.tiling import Box


def _zarr() -> Any:
    try:
        import zarr
    except ImportError:
        raise ModuleNotFoundError(
            "Zarr support needs zarr>=3: pip install 'spartan[io]'", name="zarr"
        ) from None
    return zarr


def _location(store: Any) -> Any:
    """A path made absolute (workers may run in another directory, and the driver may
    change its own), also a local store's; URLs and other stores as they are."""
    zarr = _zarr()
    if isinstance(store, (str, os.PathLike)):
        text = os.fspath(store)
        return text if "://" in text else os.path.abspath(text)
    if isinstance(store, zarr.storage.LocalStore) and not os.path.isabs(store.root):
        return zarr.storage.LocalStore(os.path.abspath(store.root), read_only=store.read_only)
    return store


class ZarrStorage:
    """A Zarr array as every worker opens it (see :class:`~spartan.frontend.stored.Storage`)."""

    reader, writer = "from_zarr", "to_zarr"

    def __init__(
        self, store: Any, component: str, storage_options: dict | None, array: Any
    ) -> None:
        self.store, self.component, self.storage_options = store, component, storage_options
        self.where = _describe(store, component)
        self.shape = tuple(array.shape)
        self.dtype = readable_dtype(array.dtype, self.where)
        self.chunks = tuple(array.chunks)
        self.write_chunks = tuple(array.shards or array.chunks)
        self.fingerprint = _fingerprint(array)
        self.in_memory = in_memory(array.store)

    def open(self, mode: str) -> Any:
        """The array, checked to be the one the driver opened (StoreChangedError)."""
        zarr = _zarr()
        try:
            array = zarr.open_array(
                self.store, mode=mode, path=self.component, storage_options=self.storage_options
            )
        except (FileNotFoundError, zarr.errors.NodeNotFoundError) as error:
            raise StoreChangedError(f"{self.where} is gone since it was opened ({error})") from None
        now = _fingerprint(array)
        if now != self.fingerprint:
            changed = sorted(
                k
                for k in now.keys() | self.fingerprint.keys()
                if now.get(k) != self.fingerprint.get(k)
            )
            raise StoreChangedError(
                f"{self.where} changed since it was opened ({', '.join(changed)}); "
                "open it again with spartan.from_zarr"
            )
        return array

    def read(self, index: tuple) -> np.ndarray:
        return np.asarray(self.open("r")[index])

    def write(self, regions: Sequence[tuple[Box, np.ndarray]]) -> int:
        array = self.open("r+")
        for box, block in regions:
            array[tuple(slice(lo, hi) for lo, hi in box)] = block
        return sum(block.nbytes for _, block in regions)


def _fingerprint(array: Any) -> dict:
    """What must stay the same between opening and reading: the array's metadata
    (its attributes aside) and, in a local store, when the metadata was last written:
    an array replaced by one of the same shape and dtype (an update of its attributes
    rewrites the metadata too, and counts as a change)."""
    meta = dict(array.metadata.to_dict())
    meta.pop("attributes", None)
    root = getattr(array.store, "root", None)
    if root is not None:  # a LocalStore: a path on a file system
        for doc in ("zarr.json", ".zarray"):
            path = os.path.join(os.fspath(root), array.path, doc)
            if os.path.exists(path):
                meta["written"] = os.stat(path).st_mtime_ns
    return meta


def in_memory(store: Any) -> bool:
    """Whether ``store`` keeps its data in the driver's memory."""
    zarr = _zarr()
    while isinstance(store, zarr.storage.WrapperStore):  # (a LoggingStore of a MemoryStore)
        store = store._store
    if isinstance(store, zarr.storage.MemoryStore):
        return True
    fs = getattr(store, "fs", None)
    fs = getattr(fs, "sync_fs", fs)  # (zarr wraps a synchronous file system)
    protocol = getattr(fs, "protocol", ())
    return "memory" in ((protocol,) if isinstance(protocol, str) else tuple(protocol))


def _open(store: Any, component: str | None, storage_options: dict | None) -> ZarrStorage:
    zarr = _zarr()
    if isinstance(store, zarr.Array):
        if component is not None or storage_options is not None:
            raise TypeError("component and storage_options go with a path or URL, not a zarr.Array")
        return ZarrStorage(_location(store.store), store.path, None, store)
    where = _location(store)
    path = component or ""
    try:
        array = zarr.open_array(where, mode="r", path=path, storage_options=storage_options)
    except (FileNotFoundError, zarr.errors.NodeNotFoundError):
        if path and (not isinstance(where, str) or "://" in where or os.path.exists(where)):
            raise KeyError(f"no array {path!r} in {where}") from None
        raise FileNotFoundError(2, "No such file or directory", str(where)) from None
    except zarr.errors.NodeTypeValidationError:
        raise ValueError(
            f"{where}{f' at {path!r}' if path else ''} is a Zarr group, not an array; "
            "name the array with component="
        ) from None
    return ZarrStorage(where, path, storage_options, array)


def from_zarr(
    url: Any, component: str | None = None, *, storage_options: dict | None = None
) -> Array:
    """A Zarr array as a lazy spartan array; each tile is read by its own worker.

    ``url``: a path, an fsspec URL, a zarr ``Store`` or a ``zarr.Array``; ``component``:
    the array's path in a group. Nothing is read until the array is evaluated, and a
    slice of it reads only the chunks the slice touches. The optimizer tiles it along
    its chunks, cut at chunk boundaries where a multiple of the worker count allows.

    >>> sp.to_zarr(sp.ones((4, 200)), "data.zarr", component="temperature")
    >>> x = sp.from_zarr("data.zarr", component="temperature")
    >>> float(x[:, :100].mean())
    1.0
    """
    source = _open(url, component, storage_options)
    check_reachable(source.where, source.in_memory)
    return Array(StoredArray(source))


def to_zarr(
    x: Any,
    url: Any,
    component: str | None = None,
    *,
    chunks: tuple[int, ...] | None = None,
    overwrite: bool = False,
    storage_options: dict | None = None,
    **kwargs: Any,
) -> None:
    """Write ``x`` as a Zarr array from the workers that hold it.

    ``chunks`` defaults to ``x``'s tiles (so each worker writes its own tiles and nothing
    moves); any other chunking is written with each chunk (or shard) written by exactly
    one worker. ``kwargs`` go to ``zarr.create_array`` (``compressors``, ``shards``,
    ``attributes``, ``zarr_format``...). An existing array is replaced only with
    ``overwrite=True`` (FileExistsError otherwise).

    >>> sp.to_zarr(sp.ones((1000, 100)), "ones.zarr", chunks=(250, 100))
    >>> sp.from_zarr("ones.zarr").shape
    (1000, 100)
    """
    zarr = _zarr()
    arr = x if isinstance(x, Array) else Array._local(np.asarray(x), None)
    where, path = _location(url), component or ""
    dtype = readable_dtype(arr.dtype, _describe(where, path))
    taken = sorted({"shape", "dtype", "data", "name", "store"} & kwargs.keys())
    if taken:
        raise TypeError(
            f"to_zarr() takes the array's own {', '.join(taken)}; "
            "cast or reshape the array instead (e.g. x.astype(...))"
        )
    if chunks is not None:
        chunks = tuple(int(k) for k in chunks)
        if len(chunks) != arr.ndim or any(k < 1 for k in chunks):
            raise ValueError(
                f"chunks {chunks} must be {arr.ndim} positive lengths, one per axis of {arr.shape}"
            )
    if not overwrite and _exists(where, path, storage_options):
        raise FileExistsError(
            f"a Zarr array or group exists at {_describe(where, path)}; "
            "pass overwrite=True to replace it"
        )

    def create(expr: Expr | None) -> ZarrStorage:
        layout: tuple[int, ...] | str | None = chunks
        if layout is None:  # the tiles' (zarr's own for an array held in the driver)
            layout = "auto" if expr is None else tile_chunks(write_grid(expr))
        target = zarr.create_array(
            where,
            name=path or None,
            shape=arr.shape,
            dtype=dtype,
            chunks=layout,
            overwrite=overwrite,
            storage_options=storage_options,
            **kwargs,
        )
        return ZarrStorage(where, path, storage_options, target)

    if arr._np is not None:  # held in the driver: written from here
        create(None).write([(tuple((0, n) for n in arr.shape), arr._np)])
        return
    memory = where.startswith("memory:") if isinstance(where, str) else in_memory(where)
    check_reachable(_describe(where, path), memory)
    expr = arr._expr
    # an array written over one it reads is made first (the old chunks go at creation)
    # replacing an array may delete chunks this expression reads (the same array under
    # another spelling, or a group holding it): then it is made before the write starts
    replaces = overwrite and any(
        isinstance(e, StoredArray) and isinstance(e.source, ZarrStorage)
        for e in pending_order([expr])
    )
    store(expr, create, after=replaces)


def _describe(where: Any, path: str) -> str:
    """How messages name an array: its store and its path in it."""
    name = where if isinstance(where, str) else repr(where)
    return name + (f" (array {path!r})" if path else "")


def _exists(where: Any, path: str, storage_options: dict | None) -> bool:
    """Whether an array or a group is at ``path`` of ``where``."""
    zarr = _zarr()
    try:
        zarr.open(where, mode="r", path=path, storage_options=storage_options)
    except (FileNotFoundError, zarr.errors.NodeNotFoundError):
        return False
    return True
