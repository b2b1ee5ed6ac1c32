"""``spartan.fft`` against ``numpy.fft``: every function, under row, column, block and
duplicated tilings with tiny tiles, on the in-process backend and Ray; the lane path
(a transform per tile group) and the split path (four-step / Bluestein, forced on
tiny arrays); bytes moved for a cut axis without any task holding the whole array."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
import spartan.frontend.fft as impl
from spartan.backend.base import Region

FAST = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
NORMS = [None, "backward", "ortho", "forward"]
REAL_IN = ["fft", "ifft", "rfft", "ihfft"]
COMPLEX_IN = ["fft", "ifft", "irfft", "hfft"]


@pytest.fixture(params=["lanes", "split"])
def path(request, monkeypatch):
    """``lanes``: the default rules (tiny arrays: a transform per lane group);
    ``split``: every transform with few lanes is split (four-step, Bluestein)."""
    if request.param == "split":
        monkeypatch.setattr(impl, "ONE_TASK_BELOW_BYTES", 0)
        monkeypatch.setattr(impl, "MIN_SPLIT", 2)
    return request.param


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _complex(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = _rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _same(got: np.ndarray, expected: np.ndarray, tol: float | None = None) -> None:
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    if tol is None:
        tol = 1e-4 if expected.dtype in (np.complex64, np.float32) else 1e-9
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def _check(calls: list[tuple[str, np.ndarray, dict]], tiling: str) -> None:
    """Each ``(function, input, keywords)`` on spartan and NumPy, evaluated together."""
    outs = [getattr(sp.fft, f)(sp.array(a, tiling=tiling), **kw) for f, a, kw in calls]
    for got, (f, a, kw) in zip(sp.compute(*outs), calls):
        _same(got, getattr(np.fft, f)(a, **kw))


# ---- every function, every tiling, both backends --------------------------------------
def test_one_axis_transforms(backend, tiling, path):
    real = _rng().standard_normal((6, 7))
    cplx = _complex((6, 7), 1)
    calls = []
    for f in REAL_IN:
        calls += [(f, real, {}), (f, real, {"axis": 0, "n": 5, "norm": "ortho"})]
    for f in COMPLEX_IN:
        calls += [(f, cplx, {"axis": 0}), (f, cplx, {"n": 9, "norm": "forward"})]
    _check(calls, tiling)


def test_one_dimensional(backend, tiling, path):
    real, cplx = _rng(2).standard_normal(24), _complex((24,), 3)
    prime = _complex((13,), 4)  # no four-step split: Bluestein on the split path
    calls = [(f, real, {"norm": "ortho"}) for f in REAL_IN]
    calls += [(f, cplx, {"n": 20}) for f in COMPLEX_IN]
    calls += [("fft", prime, {}), ("ifft", prime, {"norm": "forward"})]
    _check(calls, tiling)


def test_nd_transforms(backend, tiling, path):
    real = _rng(5).standard_normal((4, 6, 5))
    cplx = _complex((4, 6, 5), 6)
    calls = [
        ("fftn", real, {}),
        ("ifftn", cplx, {"axes": (0, 2), "norm": "ortho"}),
        ("rfftn", real, {"s": (3, 8), "axes": (1, 2)}),
        ("irfftn", cplx, {"axes": (0, 1)}),
        ("fft2", cplx[0], {}),
        ("ifft2", cplx, {"s": (5, 4), "norm": "forward"}),
        ("rfft2", real[:, :, 1], {}),
        ("irfft2", cplx, {"s": (6, 7), "axes": (2, 0)}),
    ]
    _check(calls, tiling)


def test_shifts_and_frequencies(backend, tiling):
    a = _rng(7).standard_normal((5, 6))
    _check(
        [
            ("fftshift", a, {}),
            ("ifftshift", a, {}),
            ("fftshift", a, {"axes": 1}),
            ("ifftshift", a, {"axes": (0,)}),
        ],
        tiling,
    )
    for n, d in ((1, 1.0), (8, 0.1), (9, 2)):
        _same(sp.fft.fftfreq(n, d).to_numpy(), np.fft.fftfreq(n, d))
        _same(sp.fft.rfftfreq(n, d).to_numpy(), np.fft.rfftfreq(n, d))
    assert sp.fft.fftfreq(8, dtype=np.float32).dtype == np.float32
    np.testing.assert_allclose(sp.fft.rfftfreq(7, dtype="float32").to_numpy(), np.fft.rfftfreq(7))


# ---- NumPy's rules ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("f", "dtype"),
    [
        ("fft", np.float32),
        ("fft", np.complex64),
        ("fft", np.int16),
        ("ifft", np.float16),
        ("rfft", np.float32),
        ("irfft", np.complex64),
        ("hfft", np.complex64),
        ("ihfft", np.bool_),
        ("fftn", np.complex64),
        ("rfftn", np.float32),
        ("irfftn", np.complex64),
    ],
)
def test_dtypes_follow_numpy(local, path, f, dtype):
    """NumPy 2 keeps single precision (complex64 in, complex64 out)."""
    c = _complex((4, 6), 8) * 4
    a = c.astype(dtype) if np.dtype(dtype).kind == "c" else c.real.astype(dtype)
    got = getattr(sp.fft, f)(sp.array(a, tiling="column"))
    expected = getattr(np.fft, f)(a)
    assert got.dtype == expected.dtype  # known before computing
    # (NumPy scales a float16 input's transform by a float16 factor: 3 digits)
    _same(got.to_numpy(), expected, 3e-3 if dtype == np.float16 else None)


def test_errors_match_numpy(local):
    x = sp.array(_complex((4, 6)), tiling="row")
    with pytest.raises(ValueError, match="Invalid norm value"):
        sp.fft.fft(x, norm="sideways")
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        sp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        sp.fft.irfft(sp.array(np.ones((3, 1), complex), tiling="row"))
    with pytest.raises(np.exceptions.AxisError):
        sp.fft.fft(x, axis=2)
    with pytest.raises(IndexError):  # (AxisError is one: NumPy raises IndexError here)
        sp.fft.ifft(x, axis=-3)
    with pytest.raises(TypeError):
        sp.fft.rfft(x)  # complex input
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        sp.fft.fftn(x, s=(2, 3), axes=(0,))
    with pytest.raises(ValueError, match="n should be an integer"):
        sp.fft.fftfreq(4.0)
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        got = sp.fft.fftn(x, s=(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _same(got.to_numpy(), np.fft.fftn(x.to_numpy(), s=(3, 4)))


def test_numpy_dispatch_out_and_empty(local):
    a = _complex((5, 4), 9)
    x = sp.array(a, tiling="block")
    y = np.fft.fft(x, axis=0)  # __array_function__ comes to spartan.fft
    assert isinstance(y, sp.Array)
    _same(y.to_numpy(), np.fft.fft(a, axis=0))
    assert isinstance(np.fft.fftshift(x), sp.Array)
    out = sp.zeros((5, 4), complex)
    assert sp.fft.ifft2(x, out=out) is out
    _same(out.to_numpy(), np.fft.ifft2(a))
    _same(sp.fft.fft(sp.zeros((0, 4)), axis=1).to_numpy(), np.fft.fft(np.zeros((0, 4)), axis=1))
    _same(sp.fft.fft(sp.zeros((3, 0)), n=4).to_numpy(), np.fft.fft(np.zeros((3, 0)), n=4))
    assert sp.fft.fftn(x, axes=()) is x


def test_small_arrays_run_numpy_in_the_driver(local):
    sp.config.local_below_bytes = 1 << 20
    a = _rng(10).standard_normal(16)
    y = sp.fft.rfft(sp.asarray(a))
    assert y.tiling is None  # held in the driver: no plan, no worker
    _same(y.to_numpy(), np.fft.rfft(a))


@FAST
@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple),
    f=st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]),
    norm=st.sampled_from(NORMS),
    split=st.booleans(),
)
def test_hypothesis_one_axis(local, data, shape, f, norm, split):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.none() | st.integers(1, 9))
    if n is None and f in ("irfft", "hfft") and shape[axis] == 1:
        n = 2  # NumPy's default (length - 1) * 2 would be 0
    tiling = data.draw(st.sampled_from(["row", "column", "block", "dup"]))
    a = _complex(shape, len(shape)) if f in COMPLEX_IN else _rng(1).standard_normal(shape)
    old = impl.ONE_TASK_BELOW_BYTES, impl.MIN_SPLIT
    impl.ONE_TASK_BELOW_BYTES, impl.MIN_SPLIT = (0, 2) if split else old
    try:
        got = getattr(sp.fft, f)(sp.array(a, tiling=tiling), n=n, axis=axis, norm=norm)
        _same(got.to_numpy(), getattr(np.fft, f)(a, n=n, axis=axis, norm=norm))
    finally:
        impl.ONE_TASK_BELOW_BYTES, impl.MIN_SPLIT = old


@FAST
@given(
    data=st.data(),
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple),
    f=st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]),
    norm=st.sampled_from(NORMS),
)
def test_hypothesis_nd(local, data, shape, f, norm):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=3, unique=True))
    s = data.draw(st.none() | st.lists(st.integers(1, 6), min_size=len(axes), max_size=len(axes)))
    if s is None and f == "irfftn" and shape[axes[-1]] == 1:
        s = [shape[a] for a in axes[:-1]] + [2]
    a = _complex(shape, 2) if f in ("ifftn", "irfftn") else _rng(3).standard_normal(shape)
    got = getattr(sp.fft, f)(sp.array(a, tiling="block"), s=s, axes=axes, norm=norm)
    _same(got.to_numpy(), getattr(np.fft, f)(a, s=s, axes=axes, norm=norm))


# ---- distribution ----------------------------------------------------------------------
@pytest.fixture
def task_inputs(local, monkeypatch):
    """The bytes of the regions each task submitted to the in-process backend reads
    (small results tiled like big ones, also under SPARTAN_TEST_REPLICATE_BELOW)."""
    monkeypatch.setattr(sp.config, "replicate_below_bytes", 0)
    seen: list[int] = []
    submit = local.submit

    def spy(worker, fn, inputs, keys, *args, **kwargs):
        seen.append(
            sum(
                math.prod(r.shape) * r.dtype.itemsize
                for r in inputs
                if isinstance(r, Region) and r.shape is not None
            )
        )
        return submit(worker, fn, inputs, keys, *args, **kwargs)

    monkeypatch.setattr(local, "submit", spy)
    return seen


def test_uncut_axis_runs_tile_by_tile(local, task_inputs):
    a = _complex((12, 10), 11)
    x = sp.evaluate(sp.array(a, tiling="row"))  # row tiles: axis 1 whole in each
    y = sp.fft.fft(x, axis=1)
    sp.reset_stats()
    task_inputs.clear()
    _same(y.to_numpy(), np.fft.fft(a, axis=1))
    assert sp.stats()["bytes_moved"] == 0
    assert 0 < max(task_inputs) < a.nbytes  # each task its tile


def test_cut_axis_moves_bytes_but_never_the_whole_array(local, task_inputs):
    a = _complex((12, 10), 12)
    x = sp.evaluate(sp.array(a, tiling="row"))  # axis 0 cut across the workers
    y = sp.fft.fft(x, axis=0)
    plan = sp.explain(y).plan
    joins = [n.id for n in plan.program if n.op == "join_update"]
    assert sum(plan.predicted.get(i, 0) for i in joins) > 0  # re-tiling in the cost model
    sp.reset_stats()
    task_inputs.clear()
    _same(y.to_numpy(), np.fft.fft(a, axis=0))
    assert sp.stats()["bytes_moved"] > 0
    assert max(task_inputs) < a.nbytes


@pytest.mark.parametrize("length", [64, 60, 61])
def test_long_1d_is_split_not_gathered(local, task_inputs, monkeypatch, length):
    """Four-step (64, 60) and Bluestein (61) with no task reading a whole lane."""
    monkeypatch.setattr(impl, "ONE_TASK_BELOW_BYTES", 0)
    monkeypatch.setattr(impl, "MIN_SPLIT", 4)
    a = _complex((length,), length)
    x = sp.evaluate(sp.array(a, tiling="row"))
    y = sp.fft.fft(x)
    sp.reset_stats()
    task_inputs.clear()
    _same(y.to_numpy(), np.fft.fft(a))
    assert sp.stats()["bytes_moved"] > 0
    # Bluestein's work arrays are 128 long: still no task reads half of one
    assert max(task_inputs) < a.nbytes if length != 61 else max(task_inputs) <= 128 * 16 // 2


def test_default_rules_split_a_big_1d_array(local, task_inputs):
    """Past ONE_TASK_BELOW_BYTES the defaults split too (2**17 points, 2 MiB)."""
    a = _complex((1 << 17,), 13)
    y = sp.fft.ifft(sp.array(a, tiling="row"))
    task_inputs.clear()
    _same(y.to_numpy(), np.fft.ifft(a))
    assert max(task_inputs) < a.nbytes // 2


@pytest.mark.gpu
def test_gpu_tiles_use_cupy_fft(local_backend, tiling):
    from spartan.backend.device import cupy_module
    from spartan.backend.local import LocalBackend

    cupy = cupy_module()
    if cupy is None:
        pytest.skip("needs CuPy and a CUDA GPU")
    be = LocalBackend(num_workers=2, device="gpu")
    sp.backend.session.use(be)
    try:
        a, c = _rng(14).standard_normal((8, 6)), _complex((8, 6), 15)
        outs = [
            sp.fft.rfft(sp.array(a, tiling=tiling), axis=0),
            sp.fft.fft2(sp.array(c, tiling=tiling), norm="ortho"),
            sp.fft.irfftn(sp.array(c, tiling=tiling)),
        ]
        ys = sp.evaluate(*outs)
        blocks = [v for w in be.workers for v in w.store.values()]
        assert blocks and all(isinstance(b, cupy.ndarray) for b in blocks)
        got = [y.to_numpy() for y in ys]
        _same(got[0], np.fft.rfft(a, axis=0))
        _same(got[1], np.fft.fft2(c, norm="ortho"))
        _same(got[2], np.fft.irfftn(c))
    finally:
        be.shutdown()
        sp.backend.session.use(local_backend)
