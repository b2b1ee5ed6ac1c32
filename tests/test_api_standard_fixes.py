"""Real differences from NumPy 2.4 / the array API standard (2024.12), fixed: each
checked against NumPy on the same values, under row/column/block/duplicated tilings.

Type functions on spartan arrays (no recursion through ``__array_function__``, no
evaluation), ``vecdot``'s dtype and shape checks, the ``linalg`` extension's keywords,
stacked ``(..., M, N)`` input for every ``spartan.linalg`` function, the ``unique_*``
shapes of 0-d input, empty ``tensordot``, ``broadcast_arrays``' tuple, weighted
``cov``/``average``, ``permute_dims`` without axes, array parameters and NumPy's keywords
of ``Generator``, and ``frompyfunc`` on Ray workers.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings

import numpy as np
import pytest

import spartan as sp

RNG = np.random.default_rng(36)


def close(got, expected, rtol=1e-7, atol=1e-9):
    """``got`` (spartan or not) equals NumPy's ``expected`` in shape, dtype and values."""
    g = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if e.dtype.kind in "biuO":
        np.testing.assert_array_equal(g, e)
    else:
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)


def same_error(call_sp, call_np):
    """Both calls raise, the spartan one an instance of NumPy's exception type."""
    with pytest.raises(Exception) as expected:
        call_np()
    with pytest.raises(type(expected.value)):
        call_sp()


# ---- type functions: result_type, can_cast, min_scalar_type, common_type --------------


DTYPES = [np.uint8, np.int8, np.int32, np.float16, np.float32, np.float64, np.complex64, bool]


@pytest.mark.parametrize("dtype", DTYPES)
def test_type_functions_read_only_the_dtype(local, tiling, dtype):
    a = (np.arange(12) % 3).reshape(3, 4).astype(dtype)
    x = sp.array(a, tiling=tiling)
    local.reset_stats()
    for other in (1, 1.0, 1j, np.int16, np.float32, a, np.array(300, np.int16)):
        assert sp.result_type(x, other) == np.result_type(a, other)
        assert np.result_type(x, other) == np.result_type(a, other)
    assert np.result_type(x) == sp.result_type(x) == a.dtype
    for to in (np.int16, np.float32, np.float64, np.complex128, bool):
        for casting in ("no", "equiv", "safe", "same_kind", "unsafe"):
            assert sp.can_cast(x, to, casting) == np.can_cast(a, to, casting)
            assert np.can_cast(x, to, casting) == np.can_cast(a, to, casting)
    assert sp.min_scalar_type(x) == np.min_scalar_type(x) == np.min_scalar_type(a)
    if dtype is not bool:
        assert sp.common_type(x) is np.common_type(x) is np.common_type(a)
        f32 = np.ones(2, np.float32)
        assert sp.common_type(x, f32) is np.common_type(a, f32)
    assert local.stats().tasks == 0  # nothing was computed


def test_type_functions_errors_and_0d(local):
    x = sp.array(np.arange(4, dtype=np.int64))
    same_error(lambda: sp.can_cast(1000, np.int8), lambda: np.can_cast(1000, np.int8))
    same_error(lambda: sp.can_cast(np.int8, x), lambda: np.can_cast(np.int8, np.arange(4)))
    same_error(lambda: sp.common_type(sp.asarray(["a"])), lambda: np.common_type(np.asarray(["a"])))
    # a 0-d array's minimal type is judged by its value, as NumPy's
    for v in (10, -3, 300, 1.5, 70000.0, 1e300):
        assert sp.min_scalar_type(sp.asarray(np.array(v))) == np.min_scalar_type(np.array(v))
    # NEP 50: a 0-d array is not value-based in promotion
    z = sp.asarray(np.array(3, np.int64))
    assert sp.result_type(z, np.uint8) == np.result_type(np.array(3), np.uint8)


def _numpys_own() -> list[str]:
    """The names spartan's namespace takes straight from NumPy (functions only)."""
    return sorted(
        name
        for name in dir(sp)
        if not name.startswith("_")
        and callable(obj := getattr(sp, name))
        and not isinstance(obj, type)
        and obj is getattr(np, name, None)
    )


def test_no_numpy_dispatcher_is_reexported_as_is():
    """A NumPy function that dispatches through ``__array_function__`` comes back to
    spartan for its implementation: re-exported as is, it would call itself forever."""
    own = _numpys_own()
    assert "isscalar" in own and "result_type" not in own
    assert [n for n in own if hasattr(getattr(np, n), "_implementation")] == []
    for name in ("result_type", "can_cast", "min_scalar_type", "common_type"):
        assert sp.numpy_function(getattr(np, name)) is not getattr(np, name)


# the re-exported functions that change NumPy's global state (not called here)
_SETTERS = {"seterr", "seterrcall", "set_printoptions", "setbufsize"}


def _outcome(fn, args):
    """``fn(*args)``'s value, or the type of what it raised."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        return type(e)


def _agrees(got, expected) -> bool:
    if isinstance(expected, type) and issubclass(expected, Exception):
        return isinstance(got, type) and issubclass(got, expected)
    if isinstance(expected, (bool, int, float, str, np.dtype, type, np.generic)):
        return got == expected
    return not (isinstance(got, type) and issubclass(got, Exception))


@pytest.mark.parametrize("name", [n for n in _numpys_own() if n not in _SETTERS])
def test_every_reexported_function_takes_a_spartan_array_as_numpy(local, name):
    """Each name re-exported from NumPy, called with spartan arrays where arguments go,
    answers (or raises) as NumPy does for the same values; never a recursion. Where
    spartan's documented duck-array behaviour differs from an ndarray's, NumPy's answer
    for what spartan stands for is the reference: a duck array's dtype is read from its
    ``.dtype`` (``np.dtype(x)``: ``promote_types``, ``issubdtype``), and a 0-d spartan
    array hashes as its scalar (``typename``)."""
    fn = getattr(sp, name)
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    for args_np in [(a,), (a, a), (a, np.float64), (a[0, 0],), (np.array(5),)]:
        args_sp = tuple(sp.array(v) if isinstance(v, np.ndarray) else v for v in args_np)
        got = _outcome(fn, args_sp)
        references = [
            _outcome(fn, args_np),
            _outcome(fn, tuple(v.dtype if isinstance(v, np.ndarray) else v for v in args_np)),
            _outcome(
                fn, tuple(v[()] if isinstance(v, np.ndarray) and not v.ndim else v for v in args_np)
            ),
        ]
        assert got is not RecursionError
        assert any(_agrees(got, r) for r in references), (name, args_np, got, references)


def test_a_reexported_dispatcher_is_a_type_error_not_a_recursion(local, monkeypatch):
    """The guard in ``spartan.numpy_function``: a NumPy function whose spartan name is the
    function itself gets NumPy's TypeError (no implementation), not a RecursionError."""
    monkeypatch.setattr(sp, "common_type", np.common_type)
    with pytest.raises(TypeError, match="no implementation found"):
        np.common_type(sp.array(np.ones(3)))


# ---- vecdot ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, bool, np.float32, np.complex64])
@pytest.mark.parametrize("fn", ["vecdot", "linalg.vecdot"])
def test_vecdot_keeps_numpys_dtype(local, tiling, dtype, fn):
    f_sp = sp.vecdot if fn == "vecdot" else sp.linalg.vecdot
    f_np = np.vecdot if fn == "vecdot" else np.linalg.vecdot
    a, b = RNG.integers(0, 40, (2, 5, 4)).astype(dtype)
    if dtype == np.complex64:
        a, b = a + 1j * b, b - 2j * a
    x, y = sp.array(a, tiling=tiling), sp.array(b, tiling=tiling)
    close(f_sp(x, y), f_np(a, b), rtol=1e-5)  # uint8 wraps around as NumPy's
    close(f_sp(x, y, axis=0), f_np(a, b, axis=0), rtol=1e-5)
    close(f_sp(x, b[0]), f_np(a, b[0]), rtol=1e-5)


@pytest.mark.parametrize(
    "sa, sb, axis",
    [
        ((3, 4), (3, 1), -1),  # a core size of 1 does not broadcast
        ((3, 4), (4, 3), -1),
        ((3, 4), (5,), -1),
        ((), (3,), -1),
        ((3,), (), -1),
        ((3, 4), (3, 4), 2),
        ((3, 4), (3, 4), -3),
        ((2, 3, 4), (5, 4), -1),
    ],
)
def test_vecdot_rejects_what_numpy_rejects(local, sa, sb, axis):
    a, b = np.ones(sa), np.ones(sb)
    for f_sp, f_np in ((sp.vecdot, np.vecdot), (sp.linalg.vecdot, np.linalg.vecdot)):
        same_error(
            lambda f_sp=f_sp: f_sp(sp.array(a), sp.array(b), axis=axis),
            lambda f_np=f_np: f_np(a, b, axis=axis),
        )


def test_vecdot_axis_per_operand_and_products(local, tiling):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal(4)
    x = sp.array(a, tiling=tiling)
    close(sp.vecdot(x, b, axis=0), np.vecdot(a, b, axis=0))
    m, v = RNG.integers(0, 9, (2, 3, 4)).astype(np.uint8), np.arange(4, dtype=np.uint8)
    close(sp.matvec(sp.array(m, tiling=tiling), v), np.matvec(m, v))
    close(sp.vecmat(np.arange(3, dtype=np.uint8), sp.array(m, tiling=tiling)), np.vecmat(v[:3], m))


# ---- the linalg extension's functions and keywords ---------------------------------------


def test_linalg_extension_keywords(local, tiling):
    s = RNG.standard_normal((3, 4, 5))
    x = sp.array(s, tiling=tiling)
    close(sp.linalg.matrix_transpose(x), np.linalg.matrix_transpose(s))
    close(sp.linalg.diagonal(x, offset=1), np.linalg.diagonal(s, offset=1))
    close(sp.linalg.trace(x, offset=-1), np.linalg.trace(s, offset=-1))
    close(sp.linalg.trace(x, dtype=np.float32), np.linalg.trace(s, dtype=np.float32), rtol=1e-5)
    close(
        sp.linalg.tensordot(x, x, axes=((1, 2), (1, 2))),
        np.linalg.tensordot(s, s, axes=((1, 2), (1, 2))),
    )
    close(sp.linalg.tensordot(x, s.T, axes=1), np.linalg.tensordot(s, s.T, axes=1))
    v, w = RNG.standard_normal(4), RNG.standard_normal(3)
    close(sp.linalg.outer(sp.array(v, tiling=tiling), w), np.linalg.outer(v, w))
    same_error(lambda: sp.linalg.outer(x, w), lambda: np.linalg.outer(s, w))
    c = RNG.standard_normal((4, 3))
    close(sp.linalg.cross(sp.array(c, tiling=tiling), c[::-1]), np.linalg.cross(c, c[::-1]))
    close(
        sp.linalg.cross(sp.array(c.T, tiling=tiling), c.T, axis=0),
        np.linalg.cross(c.T, c.T, axis=0),
    )
    same_error(lambda: sp.linalg.cross(x, x), lambda: np.linalg.cross(s, s))
    for ord in (2, 1, 0, 3, -1, np.inf, -np.inf):
        close(sp.linalg.vector_norm(x, ord=ord), np.linalg.vector_norm(s, ord=ord))
        close(
            sp.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=ord),
            np.linalg.vector_norm(s, axis=(0, 2), keepdims=True, ord=ord),
        )
    ints = (s * 4).astype(np.int32)
    close(
        sp.linalg.vector_norm(sp.array(ints), axis=1, ord=1),
        np.linalg.vector_norm(ints, axis=1, ord=1),
    )
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(sp.linalg.matrix_norm(x, ord=ord), np.linalg.matrix_norm(s, ord=ord))
        close(
            sp.linalg.matrix_norm(x, ord=ord, keepdims=True),
            np.linalg.matrix_norm(s, ord=ord, keepdims=True),
        )
        close(sp.linalg.norm(x, ord, axis=(2, 0)), np.linalg.norm(s, ord, axis=(2, 0)))


def test_cross_of_2_vectors_as_numpy(local, tiling):
    a2, b2, b3 = (
        RNG.standard_normal((4, 2)),
        RNG.standard_normal((4, 2)),
        RNG.standard_normal((4, 3)),
    )
    x2 = sp.array(a2, tiling=tiling)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for other in (b2, b3):
            close(sp.cross(x2, other), np.cross(a2, other))
            close(sp.cross(other, x2), np.cross(other, a2))
    with pytest.warns(DeprecationWarning):
        sp.cross(x2, b2)


# ---- every spartan.linalg function on stacks --------------------------------------------


STACK = RNG.standard_normal((2, 3, 5, 4))
SQUARE = RNG.standard_normal((3, 4, 4)) + 4 * np.eye(4)


def test_stacked_factorizations(local, tiling):
    x = sp.array(STACK, tiling=tiling)
    close(sp.linalg.svdvals(x), np.linalg.svdvals(STACK))
    close(sp.linalg.pinv(x), np.linalg.pinv(STACK))
    close(sp.linalg.pinv(x, rtol=None), np.linalg.pinv(STACK, rtol=None))
    close(
        sp.linalg.pinv(x, rcond=np.array([0.5, 1e-15])[:, None]),
        np.linalg.pinv(STACK, rcond=np.array([0.5, 1e-15])[:, None]),
    )
    with pytest.raises(ValueError):
        sp.linalg.pinv(x, rcond=0.1, rtol=0.1)
    close(sp.linalg.matrix_rank(x), np.linalg.matrix_rank(STACK))
    close(sp.linalg.matrix_rank(x, rtol=0.5), np.linalg.matrix_rank(STACK, rtol=0.5))
    close(sp.linalg.matrix_rank(x, tol=1.0), np.linalg.matrix_rank(STACK, tol=1.0))
    u, s, vh = sp.linalg.svd(x, full_matrices=False)
    close(sp.matmul(u * s[..., None, :], vh), STACK)
    full = sp.linalg.svd(x)
    assert [v.shape for v in full] == [v.shape for v in np.linalg.svd(STACK)]
    for mode in ("reduced", "complete"):
        q, r = sp.linalg.qr(x, mode=mode)
        qn, rn = np.linalg.qr(STACK, mode=mode)
        assert (q.shape, r.shape) == (qn.shape, rn.shape)
        close(sp.matmul(q, r), STACK)
    close(abs(sp.linalg.qr(x, mode="r")), abs(np.linalg.qr(STACK, mode="r")))
    h, tau = sp.linalg.qr(x, mode="raw")
    hn, taun = np.linalg.qr(STACK, mode="raw")
    close(h, hn)
    close(tau, taun)
    close(sp.linalg.cond(x), np.linalg.cond(STACK))
    close(sp.linalg.cond(sp.array(SQUARE, tiling=tiling), "fro"), np.linalg.cond(SQUARE, "fro"))


def test_stacked_square_functions(local, tiling):
    x = sp.array(SQUARE, tiling=tiling)
    w = sp.linalg.eigvals(x).to_numpy()
    np.testing.assert_allclose(
        np.sort_complex(w), np.sort_complex(np.linalg.eigvals(SQUARE)), atol=1e-9
    )
    w, v = sp.linalg.eig(x)
    np.testing.assert_allclose(
        SQUARE @ v.to_numpy(), v.to_numpy() * w.to_numpy()[..., None, :], atol=1e-9
    )
    for n in (3, 0, -2):
        close(sp.linalg.matrix_power(x, n), np.linalg.matrix_power(SQUARE, n))
    close(sp.linalg.det(x), np.linalg.det(SQUARE))
    close(sp.linalg.inv(x), np.linalg.inv(SQUARE))
    close(sp.linalg.solve(x, SQUARE[..., :2]), np.linalg.solve(SQUARE, SQUARE[..., :2]))
    sym = SQUARE @ SQUARE.transpose(0, 2, 1)
    close(sp.linalg.eigvalsh(sp.array(sym, tiling=tiling)), np.linalg.eigvalsh(sym))
    close(sp.linalg.cholesky(sp.array(sym, tiling=tiling)), np.linalg.cholesky(sym))
    close(sp.linalg.slogdet(x)[1], np.linalg.slogdet(SQUARE)[1])


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (0, 0)])
@pytest.mark.parametrize(
    "name", ["svdvals", "pinv", "matrix_rank", "det", "inv", "eigvalsh", "qr", "svd", "eigvals"]
)
def test_empty_matrices_as_numpy(local, shape, name):
    z = np.zeros(shape)
    got, expected = getattr(sp.linalg, name)(sp.array(z)), getattr(np.linalg, name)(z)
    for g, e in zip(
        got if isinstance(got, tuple) else (got,),
        expected if isinstance(expected, tuple) else (expected,),
    ):
        close(g, e)


# ---- unique_* of 0-d input ---------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (1,), (2, 3), (2, 1, 2)])
@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_shapes(local, tiling, shape, name):
    a = (np.arange(math.prod(shape)) % 2 * 1.5).reshape(shape)
    got = getattr(sp, name)(sp.array(a) if a.ndim < 2 else sp.array(a, tiling=tiling))
    expected = getattr(np, name)(a)
    if name == "unique_values":  # NumPy 2.4 leaves its order unspecified
        close(sp.sort(got), np.sort(expected))
        return
    assert type(got).__name__ == type(expected).__name__.replace("Result", "")
    assert got._fields == expected._fields
    for g, e in zip(got, expected):
        close(g, e)


def test_unique_inverse_has_the_input_shape(local):
    z = np.array(7.0)
    _, inverse = sp.unique(sp.array(z), return_inverse=True)
    assert inverse.shape == np.unique(z, return_inverse=True)[1].shape == ()


# ---- tensordot of empty arrays, broadcast_arrays, permute_dims -----------------------------


@pytest.mark.parametrize(
    "sa, sb, axes",
    [
        ((3, 0), (0, 4), 1),
        ((0, 3), (3, 0), 1),
        ((2, 0, 3), (0, 3, 4), 2),
        ((0,), (0,), 1),
        ((2, 3), (3, 0), 1),
        ((0, 2), (3,), 0),
        ((2, 0), (0, 2), ([1], [0])),
        ((2, 0, 3), (3, 2, 0), ([1, 2], [2, 0])),
    ],
)
def test_tensordot_of_empty_arrays(local, tiling, sa, sb, axes):
    a, b = np.ones(sa, np.float32), np.ones(sb, np.int16)
    expected = np.tensordot(a, b, axes)
    close(sp.tensordot(sp.array(a, tiling=tiling), sp.array(b, tiling=tiling), axes), expected)
    close(sp.linalg.tensordot(sp.array(a), b, axes=axes), expected)


def test_tensordot_errors_as_numpy(local):
    a, b = np.ones((2, 3)), np.ones((3, 2))
    for axes in (([0, 0], [0, 1]), ([0], [0, 1]), 3, ([0], [0])):
        same_error(
            lambda axes=axes: sp.tensordot(sp.array(a), sp.array(b), axes),
            lambda axes=axes: np.tensordot(a, b, axes),
        )


def test_broadcast_arrays_is_a_tuple(local, tiling):
    a, b = np.arange(3.0)[:, None], np.arange(4.0)
    got = sp.broadcast_arrays(sp.array(a, tiling=tiling), b)
    expected = np.broadcast_arrays(a, b)
    assert type(got) is type(expected) is tuple
    for g, e in zip(got, expected):
        close(g, e)


def test_permute_dims_axes_optional(local, tiling):
    a = np.arange(24.0).reshape(2, 3, 4)
    x = sp.array(a, tiling=tiling)
    close(sp.permute_dims(x), np.permute_dims(a))
    close(sp.permute_dims(x, (1, 0, 2)), np.permute_dims(a, (1, 0, 2)))
    close(sp.permute_dims(x, axes=(2, 0, 1)), np.permute_dims(a, axes=(2, 0, 1)))


@pytest.mark.parametrize("copy", [None, True, False])
def test_reshape_copy_keyword(local, tiling, copy):
    """``copy=True`` copies, ``copy=False`` raises where NumPy cannot make a view."""
    a = np.arange(24.0).reshape(4, 6)
    x = sp.array(a, tiling=tiling)
    for src, ref, shape in (
        (x, a, (6, 4)),
        (x, a, (4, 1, 6)),
        (x.T, a.T, (24,)),
        (x[:, ::2], a[:, ::2], (12,)),
    ):
        try:
            expected = np.reshape(ref, shape, copy=copy)
        except ValueError:
            with pytest.raises(ValueError):
                sp.reshape(src, shape, copy=copy)
            continue
        got = sp.reshape(src, shape, copy=copy)
        close(got, expected)
        assert (got._buf is src._buf) == np.shares_memory(expected, ref)


# ---- cov / corrcoef / average ---------------------------------------------------------------


DATA = RNG.standard_normal((3, 7))
FW = np.array([1, 2, 1, 3, 1, 1, 2])
AW = RNG.uniform(0.1, 2.0, 7)


@pytest.mark.parametrize("spartan_weights", [False, True])
def test_cov_weights(local, tiling, spartan_weights):
    x = sp.array(DATA, tiling=tiling)
    w = (lambda v: sp.array(v)) if spartan_weights else (lambda v: v)
    for kw in (
        {"fweights": FW},
        {"aweights": AW},
        {"fweights": FW, "aweights": AW},
        {"fweights": FW, "aweights": AW, "ddof": 0},
        {"fweights": FW, "bias": True},
        {"aweights": AW, "ddof": 3},
    ):
        got_kw = {k: (w(v) if k.endswith("weights") else v) for k, v in kw.items()}
        close(sp.cov(x, **got_kw), np.cov(DATA, **kw))
    close(
        sp.cov(x, DATA[:1] * 2, rowvar=True, aweights=w(AW)),
        np.cov(DATA, DATA[:1] * 2, aweights=AW),
    )
    close(
        sp.cov(sp.array(DATA.T, tiling=tiling), rowvar=False, fweights=w(FW)),
        np.cov(DATA.T, rowvar=False, fweights=FW),
    )
    close(sp.cov(x[0], aweights=w(AW)), np.cov(DATA[0], aweights=AW))
    close(
        sp.cov(x.astype(np.float32), dtype=np.float32, aweights=w(AW)),
        np.cov(DATA.astype(np.float32), dtype=np.float32, aweights=AW),
        rtol=1e-5,
    )


def test_cov_weight_errors_as_numpy(local):
    x = sp.array(DATA)
    for kw in (
        {"fweights": FW + 0.5},
        {"fweights": -FW},
        {"aweights": -AW},
        {"aweights": AW[:3]},
        {"fweights": np.ones((2, 7))},
        {"ddof": 1.5},
    ):
        same_error(lambda kw=kw: sp.cov(x, **kw), lambda kw=kw: np.cov(DATA, **kw))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        got = sp.cov(x, fweights=np.ones(7, int), ddof=7).to_numpy()
    with pytest.warns(RuntimeWarning):
        expected = np.cov(DATA, fweights=np.ones(7, int), ddof=7)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))


def test_corrcoef(local, tiling):
    close(sp.corrcoef(sp.array(DATA, tiling=tiling)), np.corrcoef(DATA))
    c = DATA + 1j * DATA[::-1]
    close(sp.corrcoef(sp.array(c, tiling=tiling)), np.corrcoef(c))
    close(sp.corrcoef(sp.array(DATA[0]), DATA[1]), np.corrcoef(DATA[0], DATA[1]))
    close(sp.corrcoef(sp.array(DATA[0])), np.corrcoef(DATA[0]))


def test_average_weights_returned(local, tiling):
    a = RNG.standard_normal((3, 4, 5))
    x = sp.array(a, tiling=tiling)
    w = RNG.uniform(0.5, 2.0, (5, 3))
    for got, expected in (
        (
            sp.average(x, axis=(2, 0), weights=w, returned=True),
            np.average(a, axis=(2, 0), weights=w, returned=True),
        ),
        (
            sp.average(x, axis=1, weights=w[:4, 0], returned=True, keepdims=True),
            np.average(a, axis=1, weights=w[:4, 0], returned=True, keepdims=True),
        ),
        (sp.average(x, weights=a * a, returned=True), np.average(a, weights=a * a, returned=True)),
        (sp.average(x, axis=0, returned=True), np.average(a, axis=0, returned=True)),
        (
            sp.average(x.astype(np.int32), axis=0, weights=np.arange(3), returned=True),
            np.average(a.astype(np.int32), axis=0, weights=np.arange(3), returned=True),
        ),
    ):
        close(got[0], expected[0])
        close(got[1], expected[1])
    same_error(
        lambda: sp.average(x, axis=0, weights=np.zeros(3)),
        lambda: np.average(a, axis=0, weights=np.zeros(3)),
    )
    same_error(lambda: sp.average(x, weights=w), lambda: np.average(a, weights=w))
    same_error(
        lambda: sp.average(x, axis=(0, 2), weights=w), lambda: np.average(a, axis=(0, 2), weights=w)
    )


# ---- Generator: array parameters, NumPy's keywords -------------------------------------------


def _numpy_parameters(method) -> list[str]:
    """The parameter names in the first (possibly wrapped) line of a NumPy Generator
    method's docstring (Cython methods have no ``inspect`` signature)."""
    doc = method.__doc__.strip()
    head = doc[: doc.index(")") + 1]
    inside = re.sub(r"\s+", " ", head[head.index("(") + 1 : -1])
    names = [p.split("=")[0].strip() for p in inside.split(",")]
    return [n for n in names if n and n not in ("/", "*")]


@pytest.mark.parametrize(
    "name", [n for n in dir(np.random.Generator) if not n.startswith("_") and n != "bit_generator"]
)
def test_generator_takes_numpys_parameters(name):
    assert hasattr(sp.random.Generator, name), f"spartan's Generator has no {name}"
    ours = inspect.signature(getattr(sp.random.Generator, name)).parameters
    missing = [p for p in _numpy_parameters(getattr(np.random.Generator, name)) if p not in ours]
    assert missing == [], f"Generator.{name} lacks {missing}"


ARRAY_DRAWS = [
    ("poisson", (np.array([1.0, 20.0, 300.0]),), {}),
    ("poisson", (np.array([1.0, 2.0, 3.0]),), {"size": (4, 3)}),
    ("hypergeometric", (np.array([5, 60]), np.array([[3], [40]]), 2), {}),
    ("hypergeometric", (10, 5, np.array([0, 3, 15])), {"size": (2, 3)}),
    ("standard_gamma", (np.array([0.5, 4.0]),), {"size": (3, 2), "dtype": np.float32}),
    ("gamma", (np.array([1.0, 2.0]), np.array([[1.0], [3.0]])), {}),
    ("normal", (np.array([0.0, 100.0]), 2.0), {"size": (3, 2)}),
    ("uniform", (np.array([0.0, 100.0]), 200.0), {}),
    ("exponential", (np.array([1.0, 100.0]),), {}),
    ("integers", (np.array([0, 100]), 200), {"size": (5, 2)}),
    ("integers", (0, np.array([1, 255])), {"dtype": np.uint8, "endpoint": True}),
    ("binomial", (np.array([10, 20]), np.array([[0.1], [0.9]])), {}),
    ("negative_binomial", (np.array([1, 5]), 0.5), {}),
    ("geometric", (np.array([0.2, 0.9]),), {}),
    ("triangular", (np.array([0.0, 1.0]), 1.5, 2.0), {}),
    ("laplace", (np.zeros(2), [1.0, 2.0]), {"size": (2, 2)}),
    ("wald", (np.array([1.0, 2.0]), 1.0), {}),
    ("vonmises", (0.5, np.array([0.0, 1.0, 50.0])), {}),
    ("zipf", (np.array([2.0, 3.0]),), {}),
    ("logseries", (np.array([0.1, 0.5]),), {}),
]


@pytest.mark.parametrize(
    "name, args, kwargs", ARRAY_DRAWS, ids=[f"{c[0]}{i}" for i, c in enumerate(ARRAY_DRAWS)]
)
def test_generator_array_parameters(backend, name, args, kwargs):
    """Array parameters broadcast (with ``size``) to NumPy's shape and dtype; the same
    seed gives the same draws, also with the parameters as spartan arrays."""
    expected = np.asarray(getattr(np.random.default_rng(0), name)(*args, **kwargs))
    got = getattr(sp.random.default_rng(5), name)(*args, **kwargs).to_numpy()
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    wrapped = [sp.array(a) if isinstance(a, np.ndarray) else a for a in args]
    again = getattr(sp.random.default_rng(5), name)(*wrapped, **kwargs).to_numpy()
    np.testing.assert_array_equal(got, again)


def test_generator_array_parameters_draw_their_own_law(local):
    rng = sp.random.default_rng(1)
    lam = np.array([2.0, 50.0, 400.0])
    draws = rng.poisson(lam, size=(4000, 3)).to_numpy()
    np.testing.assert_allclose(draws.mean(0), lam, rtol=0.06)
    np.testing.assert_allclose(draws.var(0), lam, rtol=0.15)
    good = rng.hypergeometric(np.array([10, 30]), 20, 15, size=(4000, 2)).to_numpy()
    np.testing.assert_allclose(good.mean(0), [15 * 10 / 30, 15 * 30 / 50], rtol=0.05)
    assert good.min() >= 0 and good[:, 0].max() <= 10
    # a scalar parameter in an array draws what the scalar draws: one stream either way
    assert np.array_equal(
        sp.random.default_rng(3).poisson(np.full(6, 7.0)).to_numpy(),
        sp.random.default_rng(3).poisson(7.0, size=6).to_numpy(),
    )


def test_generator_draws_do_not_depend_on_tiling(local):
    def draw():
        return sp.random.default_rng(9).poisson(np.array([1.0, 5.0, 9.0]), size=(40, 3)).to_numpy()

    first = draw()
    old = sp.config.tiles_per_worker
    sp.config.tiles_per_worker = 5
    try:
        np.testing.assert_array_equal(draw(), first)
    finally:
        sp.config.tiles_per_worker = old


def test_generator_keywords_and_errors(local):
    rng = sp.random.default_rng(2)
    assert rng.standard_gamma(2.0, size=4, dtype=np.float32).dtype == np.float32
    assert rng.standard_exponential(3, dtype=np.float32, method="inv").dtype == np.float32
    assert rng.standard_normal(3, dtype=np.float32).dtype == np.float32
    out = sp.zeros((2, 3))
    assert rng.random(out=out) is out and 0 < float(out.sum()) < 6
    assert rng.standard_gamma(1.0, out=out) is out
    assert rng.permuted(sp.arange(6), 0).shape == (6,)
    assert isinstance(rng.bytes(5), bytes) and len(rng.bytes(5)) == 5
    kids = rng.spawn(2)
    assert not np.array_equal(kids[0].random(4).to_numpy(), kids[1].random(4).to_numpy())
    counts = rng.multivariate_hypergeometric([5, 10, 15], 8, size=50).to_numpy()
    assert counts.shape == (50, 3) and (counts.sum(1) == 8).all() and (counts <= [5, 10, 15]).all()
    ng = np.random.default_rng(0)
    for call in (
        lambda g: g.poisson(np.array([1.0, -1.0])),
        lambda g: g.poisson(np.ones(3), size=(2, 2)),
        lambda g: g.hypergeometric(np.array([5, 1]), 1, 3),
        lambda g: g.standard_gamma(1.0, dtype=np.int64),
        lambda g: g.random(2, dtype=np.int32),
        lambda g: g.integers(0, 300, dtype=np.uint8),
        lambda g: g.integers(np.array([5, 1]), 3),
        lambda g: g.binomial(3, np.array([0.5, 1.5])),
        lambda g: g.zipf(1.0),
        lambda g: g.multivariate_hypergeometric([2, 3], 9),
    ):
        same_error(lambda call=call: call(rng), lambda call=call: call(ng))


# ---- frompyfunc on Ray's workers ------------------------------------------------------------


def _tens(u, v):
    return u * 10 + v


def test_frompyfunc_pickles():
    import cloudpickle

    hypot = sp.frompyfunc(math.hypot, 2, 1)
    again = cloudpickle.loads(cloudpickle.dumps(hypot.ufunc))
    assert again(3.0, 4.0) == 5.0 and again.nin == 2 and again.nout == 1


def test_frompyfunc_on_workers(backend, tiling):
    a = np.arange(12.0).reshape(3, 4)
    x = sp.array(a, tiling=tiling)
    hypot = sp.frompyfunc(math.hypot, 2, 1)
    close(hypot(x, 2.0), np.frompyfunc(math.hypot, 2, 1)(a, 2.0))
    tens, np_tens = sp.frompyfunc(_tens, 2, 1), np.frompyfunc(_tens, 2, 1)
    close(tens.reduce(x, axis=0), np_tens.reduce(a, axis=0))
    close(tens.accumulate(x, axis=1), np_tens.accumulate(a, axis=1))
    lam = sp.frompyfunc(lambda u: -u, 1, 1)
    close(lam(x), np.frompyfunc(lambda u: -u, 1, 1)(a))
    q, r = sp.frompyfunc(divmod, 2, 2)(x, 5.0)
    nq, nr = np.frompyfunc(divmod, 2, 2)(a, 5.0)
    close(q, nq)
    close(r, nr)


@pytest.mark.parametrize(
    "low, high, dtype, endpoint",
    [
        (-(2**63), 2**63 - 1, np.int64, True),  # int64's whole range: a span of 2**64
        (0, 2**64, np.uint64, False),
        (2**63, 2**64 - 1, np.uint64, True),
        (-5, 5, np.int8, False),
    ],
)
def test_integers_at_the_dtype_limits(local, low, high, dtype, endpoint):
    got = sp.random.default_rng(3).integers(low, high, size=2000, dtype=dtype, endpoint=endpoint)
    want = np.random.default_rng(3).integers(low, high, size=5, dtype=dtype, endpoint=endpoint)
    values = got.to_numpy()
    assert values.dtype == want.dtype
    top = high if endpoint else high - 1
    assert int(values.min()) >= low and int(values.max()) <= top
    assert len(np.unique(values)) > 1000 or top - low < 1000  # (the bits are used)
