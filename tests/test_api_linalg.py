"""spartan.linalg and the products in the main namespace against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp

RNG = np.random.default_rng(0)
TALL = RNG.standard_normal((48, 4))
SQ = TALL.T @ TALL + np.eye(4)


@pytest.fixture
def tsqr_always(monkeypatch):
    """TSQR for every tall matrix, however small (by default small ones are one task)."""
    monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)


def close(got, expected, **kw):
    g = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert g.shape == np.shape(expected)
    np.testing.assert_allclose(g, expected, rtol=1e-8, atol=1e-10, **kw)


@pytest.mark.parametrize(
    "spec, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("ij->ji", [(3, 4)]),
        ("ij->", [(3, 4)]),
        ("ij,ij->i", [(3, 4), (3, 4)]),
        ("i,i", [(4,), (4,)]),
        ("i,j->ij", [(3,), (4,)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("...j,j->...", [(2, 3, 4), (4,)]),
        ("ijk,kl->ijl", [(2, 3, 4), (4, 2)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ],
)
def test_einsum(local, spec, shapes):
    ops = [RNG.standard_normal(s) for s in shapes]
    close(sp.einsum(spec, *[sp.array(o, tiling="block") for o in ops]), np.einsum(spec, *ops))


def test_diagonal_trace(local, tiling):
    a = RNG.standard_normal((5, 7))
    x = sp.array(a, tiling=tiling)
    for k in (-2, 0, 3, 9):
        close(sp.diagonal(x, k), np.diagonal(a, k))
        close(sp.trace(x, k), np.trace(a, k))
    b = RNG.standard_normal((3, 4, 5))
    close(sp.diagonal(sp.array(b), 1, 0, 2), np.diagonal(b, 1, 0, 2))


def test_tsqr(local, tiling, tsqr_always):
    x = sp.array(TALL, tiling=tiling)
    q, r = sp.linalg.qr(x)
    qn, rn = q.to_numpy(), r.to_numpy()
    np.testing.assert_allclose(qn @ rn, TALL, atol=1e-10)
    np.testing.assert_allclose(qn.T @ qn, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(np.triu(rn), rn)
    np.testing.assert_allclose(np.abs(rn), np.abs(np.linalg.qr(TALL)[1]), atol=1e-10)
    close(abs(sp.linalg.qr(x, mode="r")), np.abs(np.linalg.qr(TALL, mode="r")))


@pytest.mark.parametrize("tsqr", [True, False])
def test_svd(local, tsqr, monkeypatch):
    if tsqr:
        monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)
    x = sp.array(TALL)
    u, s, vh = sp.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose((u.to_numpy() * s.to_numpy()) @ vh.to_numpy(), TALL, atol=1e-10)
    close(s, np.linalg.svd(TALL, compute_uv=False))
    close(sp.linalg.svdvals(x), np.linalg.svd(TALL, compute_uv=False))
    u, s, vh = sp.linalg.svd(x)
    assert u.shape == (48, 48) and vh.shape == (4, 4)
    low = (RNG.standard_normal((60, 3)) * [50, 10, 5]) @ RNG.standard_normal((3, 20))
    u, s, vh = sp.linalg.svd_compressed(sp.array(low), 3)
    close(s, np.linalg.svd(low, compute_uv=False)[:3])


def test_square_solvers(local):
    x = sp.array(SQ)
    b = RNG.standard_normal((4, 2))
    close(sp.linalg.solve(x, b), np.linalg.solve(SQ, b))
    close(sp.linalg.inv(x), np.linalg.inv(SQ))
    close(sp.linalg.det(x), np.linalg.det(SQ))
    sign, logdet = sp.linalg.slogdet(x)
    close(sign, 1.0)
    close(logdet, np.linalg.slogdet(SQ)[1])
    close(sp.linalg.cholesky(x), np.linalg.cholesky(SQ))
    w, v = sp.linalg.eigh(x)
    close(w, np.linalg.eigh(SQ)[0])
    np.testing.assert_allclose(SQ @ v.to_numpy(), v.to_numpy() * w.to_numpy(), atol=1e-9)
    close(sp.linalg.eigvalsh(x), np.linalg.eigvalsh(SQ))
    close(sp.linalg.matrix_power(x, 3), np.linalg.matrix_power(SQ, 3))
    close(sp.linalg.matrix_power(x, -1), np.linalg.inv(SQ))
    close(sp.linalg.multi_dot([x, x, x]), SQ @ SQ @ SQ)


def test_least_squares_and_friends(local, tsqr_always):
    x = sp.array(TALL)
    b = RNG.standard_normal(48)
    sol, res, rank, s = sp.linalg.lstsq(x, b)
    e = np.linalg.lstsq(TALL, b)
    close(sol, e[0])
    close(res, e[1])
    assert rank == e[2]
    close(s, e[3])
    close(sp.linalg.pinv(x), np.linalg.pinv(TALL))
    assert int(sp.linalg.matrix_rank(x)) == np.linalg.matrix_rank(TALL)
    close(sp.linalg.cond(x), np.linalg.cond(TALL))


@pytest.mark.parametrize(
    "dtype, b_dtype",
    [
        (np.float32, np.float32),
        (np.complex64, np.complex64),
        (np.float64, np.float64),
        (np.float32, np.int8),  # NumPy solves in float64
        (np.int16, np.float32),
    ],
)
@pytest.mark.parametrize("tsqr", [True, False])
def test_least_squares_keeps_numpys_dtype(local, monkeypatch, dtype, b_dtype, tsqr):
    if tsqr:
        monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)
    a, b = (TALL * 5).astype(dtype), (RNG.standard_normal(48) * 3).astype(b_dtype)
    sol, res, _, s = sp.linalg.lstsq(sp.array(a), b)
    e = np.linalg.lstsq(a, b)
    assert (sol.dtype, res.dtype, s.dtype) == (e[0].dtype, e[1].dtype, e[3].dtype)
    np.testing.assert_allclose(sol.to_numpy(), e[0], rtol=1e-4)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms(local, ord):
    close(sp.linalg.norm(sp.array(TALL), ord), np.linalg.norm(TALL, ord))


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, np.inf, -np.inf])
def test_vector_norms(local, tiling, ord):
    x = sp.array(TALL, tiling=tiling)
    close(sp.linalg.norm(x, ord, axis=0), np.linalg.norm(TALL, ord, axis=0))
    close(
        sp.linalg.norm(x, ord, axis=1, keepdims=True),
        np.linalg.norm(TALL, ord, axis=1, keepdims=True),
    )


def test_vector_products(local):
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
    close(sp.linalg.cross(sp.array(a), sp.array(b)), np.cross(a, b))
    close(sp.linalg.vecdot(sp.array(a), sp.array(b)), np.linalg.vecdot(a, b))
    close(sp.linalg.vector_norm(sp.array(a)), np.linalg.vector_norm(a))
    close(sp.linalg.matrix_norm(sp.array(a)), np.linalg.matrix_norm(a))


def test_errors(local):
    with pytest.raises(np.linalg.LinAlgError):
        sp.linalg.inv(sp.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError):
        sp.linalg.det(sp.ones(3))
    with pytest.raises(ValueError):
        sp.linalg.solve(sp.eye(3), sp.ones(4))
    with pytest.raises(ValueError):
        sp.linalg.norm(sp.ones((2, 2)), "bogus")
    with pytest.raises(ValueError):
        sp.einsum("ij,jk->ik", sp.ones((2, 3)), sp.ones((4, 2)))
    with pytest.raises(ValueError):
        sp.diagonal(sp.ones(3))


@pytest.mark.parametrize("n, block", [(10, 3), (12, 4), (9, 2)])
def test_blocked_cholesky(local, tiling, n, block):
    m = RNG.standard_normal((n + 3, n))
    s = m.T @ m + np.eye(n)
    close(sp.linalg.cholesky(sp.array(s, tiling=tiling), block=block), np.linalg.cholesky(s))
    c = RNG.standard_normal((n, n)) + 1j * RNG.standard_normal((n, n))
    h = c @ c.conj().T + np.eye(n)
    close(
        sp.linalg.cholesky(sp.array(h), block=block, upper=True), np.linalg.cholesky(h, upper=True)
    )


@pytest.mark.parametrize("kind", ["lower", "upper", "almost", "general"])
def test_solve_triangular_systems(backend, tiling, kind):
    """A triangular matrix (a Cholesky factor or its transpose) is solved by
    substitution; one nonzero above the diagonal sends it to LU: NumPy's answers."""
    n = 70  # large enough to be checked for a triangle
    m = RNG.standard_normal((n, n)) + n * np.eye(n)
    a = {"lower": np.tril(m), "upper": np.triu(m), "almost": np.tril(m), "general": m}[kind]
    if kind == "almost":
        a[3, 60] = 0.5
    b = RNG.standard_normal((n, 2))
    x = sp.array(a, tiling=tiling)
    close(sp.linalg.solve(x, b), np.linalg.solve(a, b))
    close(sp.linalg.solve(x.T, b[:, 0]), np.linalg.solve(a.T, b[:, 0]))


def test_singular_triangular_solve_is_numpys_error(local):
    a = np.tril(RNG.standard_normal((80, 80)))
    a[40, 40] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        sp.linalg.solve(sp.array(a), np.ones(80)).to_numpy()


def test_tsqr_and_solve_on_ray(backend, tsqr_always):
    q, r = sp.linalg.qr(sp.array(TALL, tiling="row"))
    np.testing.assert_allclose(q.to_numpy() @ r.to_numpy(), TALL, atol=1e-10)
    close(sp.linalg.solve(sp.array(SQ), np.ones(4)), np.linalg.solve(SQ, np.ones(4)))


def test_stacked_matrices(local, tiling):
    a = RNG.standard_normal((7, 3, 3)) + 3 * np.eye(3)
    b = RNG.standard_normal((7, 3, 2))
    v = RNG.standard_normal(3)
    x = sp.array(a, tiling=tiling)
    close(sp.linalg.solve(x, b), np.linalg.solve(a, b))
    close(sp.linalg.solve(x, v), np.linalg.solve(a, v))
    close(sp.linalg.solve(a[0], b), np.linalg.solve(a[0], b))
    close(sp.linalg.inv(x), np.linalg.inv(a))
    close(sp.linalg.det(x), np.linalg.det(a))
    s = a @ a.transpose(0, 2, 1)
    close(sp.linalg.cholesky(sp.array(s, tiling=tiling)), np.linalg.cholesky(s))
    w, v = sp.linalg.eigh(sp.array(s, tiling=tiling))
    close(w, np.linalg.eigh(s)[0])
    np.testing.assert_allclose(s @ v.to_numpy(), v.to_numpy() * w.to_numpy()[:, None, :], atol=1e-9)
    close(sp.linalg.eigvalsh(sp.array(s)), np.linalg.eigvalsh(s))
    sign, logdet = sp.linalg.slogdet(x)
    close(sign, np.linalg.slogdet(a)[0])
    close(logdet, np.linalg.slogdet(a)[1])
    with pytest.raises(ValueError):
        sp.linalg.solve(x, np.ones((7, 4, 1)))


def test_qr_of_small_integers_in_float64(local, tsqr_always):
    """NumPy factors integers in float64; so must every group's local QR."""
    a = np.random.default_rng(8).integers(-100, 100, (400, 5)).astype(np.int8)
    q, r = sp.linalg.qr(sp.asarray(a))
    q, r = q.to_numpy(), r.to_numpy()
    assert q.dtype == np.float64
    np.testing.assert_allclose(q @ r, a, atol=1e-10)
    np.testing.assert_allclose(q.T @ q, np.eye(5), atol=1e-12)


def _ops(x: sp.Array) -> str:
    return str(sp.explain(x))


@pytest.mark.parametrize("min_bytes, tsqr", [(None, False), (0, True)])
def test_small_tall_matrix_is_one_task(local, monkeypatch, min_bytes, tsqr):
    """Under ``config.tsqr_min_bytes`` a tall QR is one task, at or above it TSQR; both
    give NumPy's factors (up to signs)."""
    if min_bytes is not None:
        monkeypatch.setattr(sp.config, "tsqr_min_bytes", min_bytes)
    q, r = sp.linalg.qr(sp.array(TALL, tiling="row"))
    qn, rn = q.to_numpy(), r.to_numpy()
    assert ("tsqr" in _ops(q)) is tsqr
    np.testing.assert_allclose(qn @ rn, TALL, atol=1e-10)
    np.testing.assert_allclose(np.abs(rn), np.abs(np.linalg.qr(TALL)[1]), atol=1e-10)
