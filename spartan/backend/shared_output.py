"""A landing zone in shared memory for results the driver fetches from its own host.

Through Ray's object store a tile is copied into a new store object and then out of it
into the driver's result. On a VM that hands freed pages back to the host, the store's
fresh pages cost a host fault each: fetching ``X @ w`` (64 MB from 2 workers) took
about 65 ms after the product. Here the driver keeps one shared-memory file whose pages
stay resident; the workers on its host write their pieces into it in parallel (into a
mapping they keep), and the driver copies the result out into an array of its own
(about 15 ms in all; 512 MB: 0.10-0.11 s against 0.26-0.62 s). Workers on other
hosts, GPU tiles and results over ``spartan.config.landing_zone_bytes`` take the object
store.

>>> zone = LandingZone()
>>> path = zone.reserve(32, limit=1 << 30)  # None where the host has no shared memory
>>> attach(path, (4,), np.dtype(np.float64))[:] = 1.0   # a worker's write
>>> zone.read((4,), np.dtype(np.float64))
array([1., 1., 1., 1.])
>>> zone.close()
"""

from __future__ import annotations

import contextlib
import glob
import mmap
import os
import uuid
import weakref

import numpy as np

#: where POSIX shared memory lives on Linux (a tmpfs)
SHM_DIR = "/dev/shm"
#: results at least this big come through the landing zone (a smaller copy is cheap)
MIN_BYTES = 1 << 20
#: the zone's smallest size (it grows by doubling, so a few sizes are ever made)
FIRST_BYTES = 16 << 20
#: fault every page of a mapping in at once (a write faulting page by page took
#: 20 ms per 32 MB here, 4 ms once mapped)
_POPULATE = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)  # (0: Windows)
_PREFIX = "spartan-landing-"


class LandingZone:
    """The driver's shared-memory file, grown on demand and reused for every fetch."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.size = 0
        self._bytes: np.ndarray | None = None
        #: the smallest size this host had no room for (not tried again)
        self._no_room = float("inf")
        _remove_orphans()

    def reserve(self, nbytes: int, limit: int) -> str | None:
        """The path of the zone, made to hold ``nbytes`` (growing it to at most
        ``limit``); None when this host has no shared memory or no room for it, or
        ``nbytes`` is over ``limit``."""
        if nbytes > limit or not os.path.isdir(SHM_DIR):
            return None
        if nbytes > self.size:
            size = max(FIRST_BYTES, self.size)
            while size < nbytes:
                size *= 2
            size = min(size, limit)
            if size >= self._no_room:
                return None
            self.close()
            self._make(size)
        return self.path

    def _make(self, size: int) -> None:
        path = os.path.join(SHM_DIR, f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return
        try:
            # reserve the pages now: a full tmpfs fails here, not as SIGBUS in a worker
            os.posix_fallocate(fd, 0, size)
            buf = mmap.mmap(fd, size, flags=_POPULATE)
        except OSError:
            os.unlink(path)
            self._no_room = size
            return
        finally:
            os.close(fd)
        self.path, self.size, self._bytes = path, size, np.frombuffer(buf, np.uint8)
        # removed when the zone goes, or at exit
        self._removal = weakref.finalize(self, os.unlink, path)

    def read(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A copy of the zone's first bytes as an array of ``shape`` and ``dtype``."""
        assert self._bytes is not None
        nbytes = int(np.prod(shape)) * dtype.itemsize
        return self._bytes[:nbytes].view(dtype).reshape(shape).copy()

    def close(self) -> None:
        """Remove the file (workers drop their mappings of it on their next write)."""
        if self.path is not None:
            self._removal()
        self.path, self.size, self._bytes = None, 0, None


_mapped: dict[str, np.ndarray] = {}


def attach(path: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The first bytes of the zone at ``path`` as a writable array (in a worker). The
    mapping is kept for the next fetch; those of zones since removed are dropped."""
    for old in [p for p in _mapped if p != path and not os.path.exists(p)]:
        del _mapped[old]
    whole = _mapped.get(path)
    if whole is None:
        with open(path, "r+b") as f:
            whole = _mapped[path] = np.frombuffer(
                mmap.mmap(f.fileno(), 0, flags=_POPULATE), np.uint8
            )
    nbytes = int(np.prod(shape)) * dtype.itemsize
    return whole[:nbytes].view(dtype).reshape(shape)


def _remove_orphans() -> None:
    """Zones left by drivers that died without removing them."""
    for path in glob.glob(os.path.join(SHM_DIR, _PREFIX + "*")):
        pid = path[len(os.path.join(SHM_DIR, _PREFIX)) :].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):  # gone already, or not ours to remove
                os.unlink(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
