"""The array API standard's device, copy, creation and inspection surface (2024.12):
``device=``/``copy=`` on creation functions, ``x.device``/``to_device``, DLPack,
``__array_namespace_info__`` and ``__array_namespace__(api_version=)``."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import spartan as sp
from spartan.backend import session
from spartan.backend.device import check_device, cupy_module, session_device

#: the device of the suite's sessions (SPARTAN_TEST_DEVICE=gpu runs it with GPU tiles)
HERE = os.environ.get("SPARTAN_TEST_DEVICE", "cpu")
#: the device those sessions lack
OTHER = "cpu" if HERE == "gpu" else "gpu"


class _FakeGpuBackend:
    """Stands in for a GPU session (only its ``device`` is read)."""

    device = "gpu"


@pytest.fixture
def small_arrays():
    """Arrays under 1 MiB held in the driver (the suite distributes all by default)."""
    old = sp.config.local_below_bytes
    sp.config.local_below_bytes = 1 << 20
    yield
    sp.config.local_below_bytes = old


@pytest.fixture
def no_session(monkeypatch):
    """No backend current and no start under way (restored afterwards)."""
    monkeypatch.setattr(session, "_current", None)
    monkeypatch.setattr(session, "_pending", None)
    monkeypatch.delenv("SPARTAN_DEVICE", raising=False)
    return session


# ---- namespace and inspection --------------------------------------------------------------


def test_version_and_namespace(local):
    assert sp.__array_api_version__ == "2024.12"
    x = sp.ones((2, 2))
    for version in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        assert x.__array_namespace__(api_version=version) is sp
    for bad in ("2020.12", "2025.12", "latest"):
        with pytest.raises(ValueError, match=bad):
            x.__array_namespace__(api_version=bad)
    array_api_compat = pytest.importorskip("array_api_compat")
    assert array_api_compat.array_namespace(x) is sp
    assert array_api_compat.device(x) == HERE


def test_info_is_true_to_the_session(local):
    info = sp.__array_namespace_info__()
    assert info.default_device() == HERE
    assert info.devices() == [HERE]
    x = sp.arange(6.0)
    assert x.device == info.default_device()
    assert {x.device: 1}[info.default_device()] == 1  # hashable, equal
    caps = info.capabilities()
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 32}
    assert set(info.dtypes()) == {
        "bool",
        *(f"int{n}" for n in (8, 16, 32, 64)),
        *(f"uint{n}" for n in (8, 16, 32, 64)),
        "float32",
        "float64",
        "complex64",
        "complex128",
    }
    assert info.dtypes(kind="signed integer") == {
        n: np.dtype(n) for n in ("int8", "int16", "int32", "int64")
    }
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {
        "bool",
        "complex64",
        "complex128",
    }
    assert info.default_dtypes(device=HERE)["indexing"] == np.intp
    with pytest.raises(ValueError, match=repr(OTHER)):
        info.dtypes(device=OTHER)
    with pytest.raises(ValueError, match="'floats'"):
        info.dtypes(kind="floats")
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating"):
        for name, dt in info.dtypes(kind=kind).items():
            assert sp.isdtype(dt, kind), (name, kind)
    assert sp.isdtype(sp.float32, ("integral", "real floating"))
    assert not sp.isdtype(np.dtype("complex64"), "real floating")


def test_max_dimensions_hold(local):
    """The capability says 32 axes: an array of 32 works, boolean mask included."""
    nd = sp.__array_namespace_info__().capabilities()["max dimensions"]
    shape = (2,) + (1,) * (nd - 2) + (3,)
    a = np.arange(6.0).reshape(shape)
    x = sp.asarray(a)
    np.testing.assert_array_equal((x * 2).sum(axis=0).to_numpy(), (a * 2).sum(axis=0))
    np.testing.assert_array_equal(x[x > 2].to_numpy(), a[a > 2])


def test_device_without_a_session_starts_none(no_session):
    assert session_device() == "cpu"
    assert sp.__array_namespace_info__().devices() == ["cpu"]
    assert session.peek() is None and session._pending is None


def test_configured_device_without_a_session(no_session, monkeypatch):
    monkeypatch.setenv("SPARTAN_DEVICE", "gpu")
    assert session_device() == "gpu"
    with pytest.raises(ValueError, match="'cpu'"):
        sp.zeros(3, device="cpu")  # (refused before anything starts)
    monkeypatch.setenv("SPARTAN_DEVICE", "auto")
    assert session_device() == ("gpu" if cupy_module() is not None else "cpu")
    assert session.peek() is None and session._pending is None


def test_gpu_session_devices_and_dtypes():
    with session.borrowed(_FakeGpuBackend()):
        info = sp.__array_namespace_info__()
        assert info.devices() == ["gpu"] and info.default_device() == "gpu"
        assert check_device("gpu", "zeros") == "gpu"
        assert set(info.dtypes(device="gpu")) == set(info.dtypes())  # CuPy holds them all
        with pytest.raises(ValueError, match="'cpu' is not available"):
            check_device("cpu", "zeros")
        with pytest.raises(ValueError, match="'cpu'"):
            sp.zeros(3, device="cpu")


# ---- creation functions --------------------------------------------------------------------


def test_creation_functions_take_device(backend):
    x = sp.arange(12.0).reshape(3, 4)
    cases = [
        (sp.zeros((2, 3), device=HERE), np.zeros((2, 3))),
        (sp.ones((2, 3), "int32", device=x.device), np.ones((2, 3), "int32")),
        (sp.empty((2, 3), device=HERE).shape, (2, 3)),
        (sp.full((2, 3), 7, device=HERE), np.full((2, 3), 7)),
        (sp.full((2, 3), [1, 2, 3], device=HERE), np.full((2, 3), [1, 2, 3])),
        (sp.arange(1, 10, 2, device=HERE), np.arange(1, 10, 2)),
        (sp.arange(5, dtype="float32", device=HERE), np.arange(5, dtype="float32")),
        (sp.eye(3, 4, k=1, device=HERE), np.eye(3, 4, k=1)),
        (sp.identity(3, device=HERE), np.identity(3)),
        (sp.tri(3, device=HERE), np.tri(3)),
        (sp.linspace(0, 1, 5, device=HERE), np.linspace(0, 1, 5)),
        (sp.linspace(0, 10, 4, dtype=int, device=HERE), np.linspace(0, 10, 4, dtype=int)),
        (sp.linspace(0, 1, 4, endpoint=False, device=HERE), np.linspace(0, 1, 4, endpoint=False)),
        (sp.zeros_like(x, device=HERE), np.zeros((3, 4))),
        (sp.ones_like(x, dtype=int, device=HERE), np.ones((3, 4), int)),
        (sp.empty_like(x, device=HERE).shape, (3, 4)),
        (sp.full_like(x, 2.5, device=HERE), np.full((3, 4), 2.5)),
        (sp.asarray([[1, 2], [3, 4]], device=HERE), np.array([[1, 2], [3, 4]])),
        (sp.array([1.5, 2.5], device=HERE), np.array([1.5, 2.5])),
        (sp.asanyarray([1, 2], device=HERE), np.array([1, 2])),
        (sp.from_dlpack(np.arange(4.0), device=HERE), np.arange(4.0)),
        (sp.astype(x, "int32", device=HERE), np.arange(12).reshape(3, 4).astype("int32")),
        (x.astype("float32", device=x.device), np.arange(12.0, dtype="float32").reshape(3, 4)),
        (sp.tril(x, k=1), np.tril(np.arange(12.0).reshape(3, 4), k=1)),
        (sp.triu(x, k=-1), np.triu(np.arange(12.0).reshape(3, 4), k=-1)),
    ]
    for i, (got, want) in enumerate(cases):
        if isinstance(want, tuple):
            assert got == want, i
            continue
        assert got.device == HERE, i
        assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.to_numpy(), want, err_msg=str(i))
    for indexing in ("xy", "ij"):
        got = sp.meshgrid(sp.arange(3), sp.arange(2), indexing=indexing)
        want = np.meshgrid(np.arange(3), np.arange(2), indexing=indexing)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.to_numpy(), w)


def test_creation_keeps_numpy_positions_and_tiling(local):
    z = sp.zeros((4, 4), "float32", "C", tiling="column")
    assert z.dtype == np.float32 and z.evaluate().tiling.cuts[1] > 1
    assert sp.zeros(3).dtype == np.float64 and sp.eye(2, dtype=None).dtype == np.float64
    with pytest.raises(ValueError, match="only 'C' or 'F'"):
        sp.zeros(3, order="K")
    with pytest.raises(ValueError, match="order must be one of"):
        sp.zeros_like(z, order="X")


@pytest.mark.parametrize("bad", ["tpu", "cuda:0", 0, None.__class__])
def test_unknown_device_is_named(local, bad):
    x = sp.ones(3)
    for make in (
        lambda: sp.zeros(3, device=bad),
        lambda: sp.asarray([1.0], device=bad),
        lambda: sp.asarray(x, device=bad),
        lambda: sp.arange(3, device=bad),
        lambda: sp.full_like(x, 1, device=bad),
        lambda: sp.astype(x, int, device=bad),
        lambda: x.astype(int, device=bad),
        lambda: x.to_device(bad),
        lambda: sp.from_dlpack(np.ones(2), device=bad),
    ):
        with pytest.raises(ValueError, match="unknown device " + re.escape(repr(bad))):
            make()


def test_device_this_session_lacks_is_named(backend, small_arrays):
    # (a small array too: NumPy, which the driver runs it with, knows only "cpu")
    for x in (sp.ones(3), sp.ones(3, tiling="row")):
        for make in (
            lambda x: sp.zeros(3, device=OTHER),
            lambda x: sp.asarray(x, device=OTHER),
            lambda x: sp.zeros_like(x, device=OTHER),
            lambda x: sp.astype(x, "float32", device=OTHER),
            lambda x: x.to_device(OTHER),
        ):
            with pytest.raises(ValueError, match=f"'{OTHER}' is not available"):
                make(x)


# ---- copy= -----------------------------------------------------------------------------------


def _copy_semantics():
    a = np.arange(6.0).reshape(2, 3)
    x = sp.asarray(a)
    assert sp.asarray(x) is x and sp.asarray(x, copy=None) is x
    assert sp.asarray(x, copy=False) is x and sp.asarray(x, dtype=x.dtype, copy=False) is x
    assert sp.array(x, copy=None) is x and sp.array(x, copy=False) is x
    copies = [
        sp.asarray(x, copy=True),
        sp.array(x),
        sp.asanyarray(x, copy=True),
        sp.from_dlpack(x, copy=True),
        sp.astype(x, x.dtype),
        x.astype(x.dtype),
    ]
    assert all(c is not x for c in copies)
    assert sp.astype(x, x.dtype, copy=False) is x and x.astype(x.dtype, copy=False) is x
    x[0, 0] = 100.0  # a write into the original...
    for c in copies:  # ... is not seen by any copy
        np.testing.assert_array_equal(c.to_numpy(), a)
    assert x[0, 0].item() == 100.0
    copies[0][1, 1] = -1.0  # and a write into a copy is not seen by the original
    assert x[1, 1].item() == 4.0
    # the user's NumPy array is never shared
    y = sp.asarray(a)
    a[0, 1] = 50.0
    assert y[0, 1].item() == 1.0
    for make in (
        lambda: sp.asarray([1, 2], copy=False),
        lambda: sp.asarray(a, copy=False),
        lambda: sp.asarray(3.0, copy=False),
        lambda: sp.asarray(x, dtype="float32", copy=False),
        lambda: sp.array([1, 2], copy=False),
    ):
        with pytest.raises(ValueError, match="(?i)unable to avoid copy"):
            make()
    with pytest.raises(BufferError):
        sp.from_dlpack(a, copy=False)


def test_copy_distributed(backend):
    _copy_semantics()
    x = sp.ones(3)
    with pytest.raises(ValueError, match="(?i)unable to avoid copy"):
        sp.asarray(x, copy=False, tiling="row")
    with pytest.raises(ValueError, match="(?i)unable to avoid copy"):
        np.asarray(x, copy=False)  # (fetched to the driver: a copy)
    np.testing.assert_array_equal(np.asarray(x, copy=True), np.ones(3))


def test_copy_small(local, small_arrays):
    _copy_semantics()
    x = sp.ones(3)
    assert x._np is not None
    view = np.asarray(x, copy=False)  # its memory, read-only (writes go through x)
    assert not view.flags.writeable
    x[0] = 5.0
    assert view[0] == 5.0


def test_astype_casting(local):
    x = sp.arange(4.0)
    with pytest.raises(TypeError, match="'safe'"):
        x.astype(int, casting="safe")
    assert x.astype("float32", casting="same_kind").dtype == np.float32


# ---- to_device and DLPack ------------------------------------------------------------------


def test_to_device(backend):
    x = sp.arange(4)
    assert x.to_device(x.device) is x and x.to_device(HERE) is x
    with pytest.raises(ValueError, match="stream"):
        x.to_device(HERE, stream=1)


def test_dlpack_exports_a_host_buffer(backend):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = sp.asarray(a)
    assert x.__dlpack_device__() == (1, 0)
    for got in (np.from_dlpack(x), np.from_dlpack(x, copy=True), np.from_dlpack(x[1:, ::2])):
        assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(np.from_dlpack(x), a)
    np.testing.assert_array_equal(np.from_dlpack(x[1:, ::2]), a[1:, ::2])
    np.testing.assert_array_equal(np.from_dlpack(x.T), a.T)
    with pytest.raises(BufferError, match="copy=False"):
        np.from_dlpack(x, copy=False)
    capsule = x.__dlpack__()  # (the legacy capsule, without max_version)
    assert type(capsule).__name__ == "PyCapsule"
    # spartan -> spartan: the same array, no round trip
    assert sp.from_dlpack(x) is x


def test_dlpack_small(local, small_arrays):
    x = sp.arange(5.0)
    assert x._np is not None
    got = np.from_dlpack(x)
    np.testing.assert_array_equal(got, np.arange(5.0))
    got[0] = 9.0  # a copy: the spartan array is unchanged
    assert x[0].item() == 0.0
    shared = np.from_dlpack(x, copy=False)
    assert not shared.flags.writeable and np.shares_memory(shared, x._np)
