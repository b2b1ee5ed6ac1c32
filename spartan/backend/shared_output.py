"""A landing zone in shared memory for results the driver fetches from its own host.

Through Ray's object store a tile is copied into a new store object and then out of it
into the driver's result, and the store's fresh pages are faulted in each time (on a VM
that hands freed pages back to the host, a host fault each). Here the driver keeps one
shared-memory file whose pages stay resident; the workers on its host write their
pieces into it in parallel (into a mapping they keep), and the driver returns the zone's
memory as the result, lent to it until that array is freed
(``spartan.config.landing_zone_lends``; else copied out). Workers on other hosts, GPU
tiles and results over ``spartan.config.landing_zone_bytes`` (0: every result) take the
object store. Both are on by default: docs/tuning.md has the measurement. The zone is a file of the
driver's private session directory (:mod:`~spartan.backend.session_files`), made mode
0600; a worker opens it without following links, and only if it is its own user's; it
holds nothing but the result's bytes.

>>> zone = LandingZone()
>>> path = zone.reserve(32, limit=1 << 30)  # None where the host has no shared memory
>>> attach(path, (4,), np.dtype(np.float64))[:] = 1.0   # a worker's write
>>> zone.read((4,), np.dtype(np.float64))
array([1., 1., 1., 1.])
>>> zone.close()
"""

from __future__ import annotations

import contextlib
import mmap
import os
import weakref
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spartan.backend.session_files import SessionDir

#: where POSIX shared memory lives on Linux (a tmpfs)
SHM_DIR = "/dev/shm"
#: results at least this big come through the landing zone (a smaller copy is cheap)
MIN_BYTES = 1 << 20
#: the zone's smallest size (it grows by doubling, so a few sizes are ever made)
FIRST_BYTES = 16 << 20
#: fault every page of a mapping in at once (a write that faults its pages one by one
#: is several times slower than one into a mapping already populated)
_POPULATE = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)  # (0: Windows)


def array_bytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of an array of ``shape`` and ``dtype`` (what a fetch needs of the zone)."""
    return int(np.prod(shape)) * np.dtype(dtype).itemsize


class _Zone:
    """One shared-memory file and the driver's mapping of it; the file goes with it."""

    def __init__(self, path: str, size: int, buf: mmap.mmap) -> None:
        self.path, self.size, self.buf = path, size, buf
        self.removal = weakref.finalize(self, unlink_quietly, path)  # (or at exit)


class LandingZone:
    """The driver's shared-memory file, grown on demand and reused for every fetch.

    A result that fills most of the zone is not copied out: the caller's array is the
    zone's memory, lent until that array is freed (a zone is under twice the result it
    holds). Meanwhile fetches use a new zone; the one lent comes back for the fetches
    after. (Being a shared mapping, a lent result is not copied on write in a process
    forked while it lives.)"""

    def __init__(self, files: SessionDir | None = None) -> None:
        """``files``: the session directory its files go in (default: this process's,
        made on the first reserve)."""
        self._zone: _Zone | None = None
        #: the smallest size this host had no room for (not tried again)
        self._no_room = float("inf")
        self._files = files

    @property
    def path(self) -> str | None:
        return self._zone.path if self._zone is not None else None

    @property
    def size(self) -> int:
        return self._zone.size if self._zone is not None else 0

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
            self._zone = self._make(size)
        return self.path

    def _make(self, size: int) -> _Zone | None:
        from spartan.backend import session_files

        try:
            if self._files is None:
                self._files = session_files.default()
            # (the pages are reserved: a full tmpfs fails here, not as SIGBUS in a worker)
            path, fd = self._files.new_file("landing", size)
        except FileNotFoundError:  # (a session without shared memory)
            return None
        except OSError:
            self._no_room = size
            return None
        try:
            buf = mmap.mmap(fd, size, flags=_POPULATE)
        except OSError:
            os.unlink(path)
            self._no_room = size
            return None
        finally:
            os.close(fd)
        return _Zone(path, size, buf)

    def read(self, shape: tuple[int, ...], dtype: np.dtype, lend: bool = True) -> np.ndarray:
        """The zone's first bytes as a new array of ``shape`` and ``dtype``: with
        ``lend``, the zone's own memory when they fill more than half of it (no copy
        of a big result; ``spartan.config.landing_zone_lends``), else a copy."""
        zone = self._zone
        assert zone is not None
        size = array_bytes(shape, dtype)
        lent = np.frombuffer(zone.buf, np.uint8, size)
        if not lend or 2 * size <= zone.size:
            return lent.view(dtype).reshape(shape).copy()
        # every view of the result keeps ``lent`` (NumPy collapses a view's base to the
        # first array whose base is not an array): when it goes, so has the result
        self._zone = None
        weakref.finalize(lent, _give_back, weakref.ref(self), zone).atexit = False
        return lent.view(dtype).reshape(shape)

    def close(self) -> None:
        """Remove the free zone's file (workers drop their mappings of it on their next
        write); a lent one goes when its result does."""
        if self._zone is not None:
            self._zone.removal()
        self._zone = None


def _give_back(owner: weakref.ref[LandingZone], zone: _Zone) -> None:
    """A lent zone's result was freed: the zone serves the next fetch, unless another
    has been made meanwhile (never swapped under a fetch in progress) or its landing
    zone is gone."""
    landing = owner()
    if landing is not None:
        landing._no_room = float("inf")  # the memory it held may be what a size lacked
    if landing is not None and landing._zone is None:
        landing._zone = zone
    else:
        zone.removal()


def unlink_quietly(path: str) -> None:
    """Remove the file at ``path``, if it is still there."""
    with contextlib.suppress(OSError):  # gone already
        os.unlink(path)


_mapped: dict[str, np.ndarray] = {}


def attach(path: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The first bytes of the zone at ``path`` as a writable array (in a worker). The
    mapping is kept for the next fetch; those of zones since removed are dropped."""
    for old in [p for p in _mapped if p != path and not os.path.exists(p)]:
        del _mapped[old]
    whole = _mapped.get(path)
    if whole is None:
        from spartan.backend.session_files import open_own

        fd = open_own(path, os.O_RDWR)  # (never through a link; only this user's file)
        try:
            whole = _mapped[path] = np.frombuffer(mmap.mmap(fd, 0, flags=_POPULATE), np.uint8)
        finally:
            os.close(fd)
    return whole[: array_bytes(shape, dtype)].view(dtype).reshape(shape)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` (on this host) still exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
