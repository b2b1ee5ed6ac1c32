"""``.npy`` and raw binary files written and read tile by tile by the workers."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp


@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.complex64, bool])
def test_npy_round_trip(local, tiling, tmp_path, dtype):
    a = (np.arange(35).reshape(5, 7) % 3).astype(dtype)
    x = sp.array(a, tiling=tiling)
    sp.save(tmp_path / "x", x)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), a)  # NumPy reads what we wrote
    np.save(tmp_path / "y.npy", a[::-1])
    y = sp.load(tmp_path / "y.npy")
    assert y.dtype == a.dtype and y.shape == a.shape
    np.testing.assert_array_equal(y.to_numpy(), a[::-1])


def test_npy_scalars_and_empty(local, tmp_path):
    sp.save(tmp_path / "s.npy", sp.array(3.5))
    assert np.load(tmp_path / "s.npy") == 3.5
    sp.save(tmp_path / "e.npy", sp.zeros((0, 3)))
    assert sp.load(tmp_path / "e.npy").shape == (0, 3)


def test_raw_files(local, tiling, tmp_path):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    sp.tofile(sp.array(a, tiling=tiling), tmp_path / "raw.bin")
    np.testing.assert_array_equal(np.fromfile(tmp_path / "raw.bin", np.int32), a.ravel())
    got = sp.fromfile(tmp_path / "raw.bin", np.int32)
    np.testing.assert_array_equal(got.to_numpy(), a.ravel())
    part = sp.fromfile(tmp_path / "raw.bin", np.int32, count=5, offset=8)
    np.testing.assert_array_equal(part.to_numpy(), a.ravel()[2:7])


def test_load_does_not_go_through_the_driver(backend, tmp_path):
    a = np.arange(4000, dtype=np.float64).reshape(400, 10)
    np.save(tmp_path / "big.npy", a)
    backend.reset_stats()
    x = sp.load(tmp_path / "big.npy").evaluate()
    assert backend.stats().as_dict()["bytes_from_driver"] == 0
    np.testing.assert_array_equal(x.to_numpy(), a)


def test_errors(local, tmp_path):
    (tmp_path / "t.txt").write_text("hello")
    with pytest.raises(ValueError):
        sp.load(tmp_path / "t.txt")
    with pytest.raises(ValueError):
        sp.tofile(sp.ones(3), tmp_path / "x.txt", sep=",")
    with pytest.raises(FileNotFoundError):
        sp.load(tmp_path / "missing.npy")


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_members_read_by_workers(local, tiling, tmp_path, compressed):
    a = np.arange(35.0).reshape(5, 7)
    b = np.arange(10, dtype=np.int16)
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "z.npz", a=a, b=b)
    z = sp.load(tmp_path / "z.npz")
    assert sorted(z.files) == ["a", "b"] and len(z) == 2
    np.testing.assert_array_equal(z["a"].retile(tiling).to_numpy(), a)
    np.testing.assert_array_equal(z["b"].to_numpy(), b)
    assert z["b"].dtype == np.int16


def test_crc32_combine():
    import os
    import zlib

    from spartan.frontend.npyio import crc32_combine

    for n1, n2 in [(0, 5), (7, 0), (13, 1000), (1, 1)]:
        a, b = os.urandom(n1), os.urandom(n2)
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_savez_written_by_workers(local, tiling, tmp_path):
    import zipfile

    a = np.arange(35.0).reshape(5, 7)
    b = np.arange(10, dtype=np.int16)
    sp.savez(tmp_path / "o", sp.array(a, tiling=tiling), b=b, c=sp.array(3.5), e=np.zeros((0, 3)))
    assert zipfile.ZipFile(tmp_path / "o.npz").testzip() is None  # every CRC checks out
    z = np.load(tmp_path / "o.npz")
    assert sorted(z.files) == ["arr_0", "b", "c", "e"]
    np.testing.assert_array_equal(z["arr_0"], a)
    np.testing.assert_array_equal(z["b"], b)
    assert z["c"] == 3.5 and z["e"].shape == (0, 3)
    np.testing.assert_array_equal(sp.load(tmp_path / "o.npz")["arr_0"].to_numpy(), a)
    with pytest.raises(ValueError):
        sp.savez(tmp_path / "bad", np.ones(2), arr_0=np.ones(2))
