"""The driver's shared-memory landing zone (the Ray tests run fetches through it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from spartan.backend import shared_output
from spartan.backend.shared_output import LandingZone, attach

pytestmark = pytest.mark.skipif(
    not os.path.isdir(shared_output.SHM_DIR), reason="no POSIX shared memory here"
)


def test_zone_grows_by_doubling_within_its_limit_and_is_removed():
    zone = LandingZone()
    path = zone.reserve(10, limit=1 << 30)
    assert zone.size == shared_output.FIRST_BYTES and os.path.exists(path)
    assert zone.reserve(shared_output.FIRST_BYTES, limit=1 << 30) == path  # still fits
    bigger = zone.reserve(shared_output.FIRST_BYTES + 1, limit=1 << 30)
    assert bigger != path and not os.path.exists(path)
    assert zone.size == 2 * shared_output.FIRST_BYTES
    assert zone.reserve(3 * shared_output.FIRST_BYTES, limit=3 * shared_output.FIRST_BYTES)
    assert zone.size == 3 * shared_output.FIRST_BYTES  # doubling stops at the limit
    assert zone.reserve(1 << 20, limit=1 << 10) is None  # over the limit
    zone.close()
    assert zone.path is None and not os.path.exists(bigger)


def test_worker_writes_are_read_back_as_the_drivers_own_copy():
    zone = LandingZone()
    path = zone.reserve(8 * 12, limit=1 << 30)
    attach(path, (3, 4), np.dtype(np.float64))[:] = np.arange(12.0).reshape(3, 4)
    out = zone.read((3, 4), np.dtype(np.float64))
    np.testing.assert_array_equal(out, np.arange(12.0).reshape(3, 4))
    assert out.flags.owndata and out.flags.writeable
    attach(path, (3, 4), np.dtype(np.float64))[:] = 0  # the next fetch's writes
    np.testing.assert_array_equal(out, np.arange(12.0).reshape(3, 4))
    zone.close()


def _landed(zone, values):
    """``values`` as a worker writes them into ``zone`` and the driver reads them back."""
    path = zone.reserve(values.nbytes, limit=1 << 30)
    attach(path, values.shape, values.dtype)[:] = values
    return path, zone.read(values.shape, values.dtype)


def test_a_result_filling_the_zone_is_lent_until_freed(monkeypatch):
    import gc

    monkeypatch.setattr(shared_output, "FIRST_BYTES", 1024)
    zone = LandingZone()
    first = np.arange(100.0)  # 800 of 1024 bytes: lent, not copied
    path, out = _landed(zone, first)
    assert not out.flags.owndata and out.flags.writeable and zone.path is None
    view = out[10:]
    del out
    gc.collect()
    # the view keeps it lent: the next fetch lands elsewhere
    other, second = _landed(zone, first + 1)
    assert other != path and os.path.exists(path)
    np.testing.assert_array_equal(view, first[10:])
    np.testing.assert_array_equal(second, first + 1)
    del view
    gc.collect()  # comes back, as the free zone (the second is still lent)
    assert zone.path == path
    third = _landed(zone, first + 2)[1]  # lands in it, lent again
    np.testing.assert_array_equal(third, first + 2)
    small = _landed(zone, np.arange(10.0))[1]  # 80 bytes: copied, in a zone that stays free
    assert small.flags.owndata and zone.path not in (None, path, other)
    del second
    gc.collect()  # came back while another zone was free: removed
    assert not os.path.exists(other)
    del third
    gc.collect()
    zone.close()
    assert not os.path.exists(path)


def test_a_worker_drops_its_mapping_of_a_removed_zone():
    zone = LandingZone()
    old = zone.reserve(8, limit=1 << 30)
    attach(old, (1,), np.dtype(np.float64))
    new = zone.reserve(shared_output.FIRST_BYTES + 8, limit=1 << 30)
    attach(new, (1,), np.dtype(np.float64))
    assert old not in shared_output._mapped and new in shared_output._mapped
    zone.close()


def test_no_shared_memory_means_no_zone(monkeypatch):
    monkeypatch.setattr(shared_output, "SHM_DIR", "/nonexistent-spartan-shm")
    assert LandingZone().reserve(8, limit=1 << 30) is None


def test_zones_are_private_files_of_the_session_directory():
    from spartan.backend import session_files

    files = session_files.SessionDir.make()
    zone = LandingZone(files)
    path = zone.reserve(8, limit=1 << 30)
    assert os.path.dirname(path) == files.shm
    assert (os.stat(path).st_mode & 0o777) == 0o600
    zone.close()
    files.close()
    assert not os.path.exists(files.shm)


def test_a_size_the_host_has_no_room_for_is_not_tried_again(monkeypatch):
    calls = []

    def full(fd, offset, size):
        calls.append(size)
        raise OSError(28, "No space left on device")

    from spartan.backend import session_files

    monkeypatch.setattr(os, "posix_fallocate", full)
    files = session_files.SessionDir.make()
    zone = LandingZone(files)
    assert zone.reserve(1 << 20, limit=1 << 30) is None
    assert zone.reserve(1 << 20, limit=1 << 30) is None
    assert calls == [shared_output.FIRST_BYTES]
    assert os.listdir(files.shm) == []  # the failed file is gone
    files.close()


def test_a_lent_zone_coming_back_lets_a_size_be_tried_again(monkeypatch):
    import gc

    monkeypatch.setattr(shared_output, "FIRST_BYTES", 1024)
    zone = LandingZone()
    _, out = _landed(zone, np.arange(100.0))  # lent
    real, calls = os.posix_fallocate, []

    def full(fd, offset, size):
        calls.append(size)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    assert zone.reserve(800, limit=1 << 30) is None  # the lent result holds the room
    monkeypatch.setattr(os, "posix_fallocate", real)
    del out
    gc.collect()
    assert zone.reserve(4096, limit=1 << 30) is not None  # tried again, and made
    assert calls == [1024]
    zone.close()
