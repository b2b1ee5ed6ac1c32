"""Tiles on disk: workers write and read ``.npy`` files; a msgpack manifest names them.

The directory must be reachable from every worker (one machine, or a shared file
system). :func:`spartan.save_checkpoint` and :func:`spartan.load_checkpoint` build on
these tasks, and periodic checkpoints register each saved tile with the lineage so a
lost tile is reloaded instead of recomputed.

What must stay true: a tile file is complete once it has its final name (written to a
temporary name, flushed, fsynced, renamed, its directory fsynced), and its checksum is
that of the bytes on disk, computed by the worker that wrote them; a reader checks the
checksum, size, shape and dtype before it uses a tile, and never unpickles anything.

>>> os.mkdir("ckpt")
>>> save = SaveTiles("ckpt", [("x.0.npy", (4,), "<f8")])
>>> save(np.zeros(4))                  # each file with the checksum of its bytes
([('x.0.npy', '3634cfaa...')],)
"""

from __future__ import annotations

import errno
import hashlib
import io
import math
import os
import stat
import sys
import threading
from collections.abc import Sequence
from typing import Any

import msgpack
import numpy as np

from spartan.backend.base import WorkerLostError
from spartan.backend.device import to_host
from spartan.backend.npy_header import read_header

#: the hash of a tile file's bytes a manifest records (hex digests of this many bytes)
CHECKSUM = "blake2b-256"
DIGEST_BYTES = 32

#: test hook: a directory the driver passes to the save tasks it makes. A save task that
#: finds a file ``<phase>`` there (``before``: nothing written yet; ``writing``: its first
#: tile written but not renamed into place; ``written``: every tile in place, the driver
#: not told yet) takes it (only one task does), writes its process id into the FIFO
#: ``<dir>/fifo`` and waits there, so that a test can kill it at that point
PAUSE_DIR: str | None = None

#: the longest ``.npy`` header read (NumPy writes 128 bytes for a few dimensions)
MAX_HEADER_BYTES = 1 << 16


def checksum(data: Any) -> str:
    """The hex checksum of ``data`` (bytes or a buffer), as manifests record it.

    >>> checksum(b"")[:8]
    '0e5751c0'
    """
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()


class SaveTiles:
    """Task: write each input block as ``directory/fname`` (an ``.npy`` file), durably;
    returns ``([(fname, checksum), ...],)``, one pair per tile, as a task result.

    ``tiles``: ``(fname, shape, dtype)`` per input block, in order: each block is checked
    to have that shape and written with that dtype."""

    def __init__(self, directory: str, tiles: Sequence[tuple[str, tuple[int, ...], str]]) -> None:
        self.directory = directory
        self.tiles = list(tiles)
        self.pause = PAUSE_DIR

    def __call__(self, *blocks: Any) -> tuple[list[tuple[str, str]]]:
        self._pause("before")
        written = []
        for n, ((fname, shape, dtype), block) in enumerate(zip(self.tiles, blocks, strict=True)):
            block = np.asarray(to_host(block), dtype=np.dtype(dtype))
            if block.shape != tuple(shape):
                raise ValueError(
                    f"checkpoint tile {fname!r} has shape {block.shape}, not {tuple(shape)}"
                )
            path = os.path.join(self.directory, fname)
            tmp = f"{path}.{os.getpid()}.tmp"
            try:
                digest = _write_npy(tmp, block)
                if n == 0:
                    self._pause("writing")
                os.replace(tmp, path)
            except BaseException:
                _unlink(tmp)
                raise
            written.append((fname, digest))
        # the renames are durable only once the directory entry is on disk too
        fsync_directory(self.directory)
        self._pause("written")
        return (written,)

    def _pause(self, phase: str) -> None:
        """The test hook (:data:`PAUSE_DIR`): wait here to be killed at ``phase``."""
        if self.pause is None:
            return
        armed = os.path.join(self.pause, phase)
        try:
            os.rename(armed, f"{armed}.taken")  # atomic: one task takes it
        except FileNotFoundError:
            return
        with open(os.path.join(self.pause, "fifo"), "w") as fifo:
            fifo.write(str(os.getpid()))
        threading.Event().wait(60)  # the test kills this process meanwhile


def _write_npy(path: str, block: np.ndarray) -> str:
    """Write ``block`` as an ``.npy`` file at ``path``, flushed and fsynced; the checksum
    of the file's bytes, hashed as they are written (no second read)."""
    if not block.flags.c_contiguous:
        block = block.copy(order="C")
    head = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(block)
    try:
        np.lib.format.write_array_header_1_0(head, header)
    except ValueError:  # a header over 64 KB (very many dimensions)
        head = io.BytesIO()
        np.lib.format.write_array_header_2_0(head, header)
    data = block.reshape(-1).view(np.uint8).data if block.nbytes else b""
    h = hashlib.blake2b(digest_size=DIGEST_BYTES)
    h.update(head.getbuffer())
    h.update(data)
    # O_NOFOLLOW: a link planted at the temporary name is not written through
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(head.getbuffer())
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return h.hexdigest()


def fsync_directory(directory: str) -> None:
    """Make the names created in ``directory`` durable (where the file system can)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as error:  # some file systems cannot fsync a directory
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class LoadTile:
    """Task: read one saved tile back (used by lineage recovery and by
    ``load_checkpoint``), after checking that the file's checksum is the one its
    manifest recorded and that it holds ``shape`` and ``dtype``. A missing file raises
    FileNotFoundError, a corrupt or replaced one ValueError, both naming the array
    ``name`` and the file."""

    def __init__(
        self, path: str, digest: str, shape: tuple[int, ...], dtype: str, name: str
    ) -> None:
        self.path, self.digest, self.name = path, digest, name
        self.shape, self.dtype = tuple(shape), dtype

    def __call__(self, *_: Any) -> np.ndarray:
        dtype = np.dtype(self.dtype)
        data_bytes = math.prod(self.shape) * dtype.itemsize
        buf = self._read(data_bytes + MAX_HEADER_BYTES)
        if checksum(buf) != self.digest:
            raise self._bad(
                "its checksum does not match the manifest (the file is corrupt or was replaced)"
            )
        head = io.BytesIO(bytes(memoryview(buf)[:MAX_HEADER_BYTES]))
        try:
            shape, fortran, got = read_header(head)
        except ValueError as error:
            raise self._bad(f"its .npy header cannot be read ({error})") from None
        if got != dtype or tuple(shape) != self.shape:
            raise self._bad(f"it holds {got} {tuple(shape)}, not {dtype} {self.shape}")
        offset = head.tell()
        if len(buf) != offset + data_bytes:
            raise self._bad(f"it is {len(buf)} bytes, not {offset + data_bytes}")
        # a view of the bytes read (writable: a bytearray), parsed without pickles
        flat = np.frombuffer(buf, dtype=dtype, count=math.prod(self.shape), offset=offset)
        return flat.reshape(self.shape[::-1]).T if fortran else flat.reshape(self.shape)

    def _read(self, limit: int) -> bytearray:
        """The file's bytes, if it is a regular file of at most ``limit`` bytes."""
        try:
            # O_NONBLOCK: a FIFO planted at the name does not block the open
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"checkpoint tile {self.path!r} of array {self.name!r} is missing"
            ) from None
        with os.fdopen(fd, "rb", buffering=0) as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise self._bad("it is not a regular file")
            if st.st_size > limit:
                raise self._bad(f"it is {st.st_size} bytes, more than its tile can take")
            buf = bytearray(st.st_size)
            view, got = memoryview(buf), 0
            while got < len(buf):
                n = f.readinto(view[got:])
                if not n:
                    raise self._bad("it was cut short while it was read")
                got += n
        return buf

    def _bad(self, why: str) -> ValueError:
        return ValueError(f"checkpoint tile {self.path!r} of array {self.name!r}: {why}")


MANIFEST = "manifest.msgpack"


def write_manifest(directory: str, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` into ``directory`` atomically and durably (a temporary file,
    fsynced, renamed over the old one, the directory fsynced): a reader sees the old
    manifest or the whole new one."""
    path = os.path.join(directory, MANIFEST)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(msgpack.packb(manifest, use_bin_type=True))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    fsync_directory(directory)


def read_manifest(directory: str) -> dict[str, Any]:
    """The manifest of the checkpoint in ``directory``, unpacked with limits; its
    structure is checked by the caller (:func:`spartan.frontend.checkpoint.load_checkpoint`)
    before any tile is read."""
    path = os.path.join(directory, MANIFEST)
    try:
        size = os.path.getsize(path)
        if size > MAX_MANIFEST_BYTES:
            raise ValueError(
                f"checkpoint manifest {path!r} is {size} bytes, over the limit of "
                f"{MAX_MANIFEST_BYTES}"
            )
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no spartan checkpoint in {directory!r} ({MANIFEST} missing)"
        ) from None
    try:
        manifest = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.exceptions.UnpackException) as error:  # (StackError too)
        raise ValueError(f"checkpoint manifest {path!r} cannot be read: {error!r}") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"checkpoint manifest {path!r} is not a map")
    return manifest


#: the largest manifest read (a checkpoint of a million tiles is ~100 MB of arrays' files
#: and a few tens of MB of manifest)
MAX_MANIFEST_BYTES = 64 << 20


def lost_worker(error: BaseException) -> bool:
    """Whether ``error``, raised by a backend for a task, means the worker that ran it
    was lost (so the task may be run again on its replacement), not that the task
    failed: Ray's errors for a dead actor or a lost object, and spartan's
    ``WorkerLostError`` where the backend defines one."""
    ray_worker = sys.modules.get("spartan.backend.ray_worker")  # (only Ray loses workers)
    if ray_worker is None:
        return False
    return isinstance(error, (*ray_worker.LOSS_ERRORS, WorkerLostError))
