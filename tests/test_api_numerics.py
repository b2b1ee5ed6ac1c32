"""Index tricks, in-place style updates, calculus, lookups, windows, functional helpers,
products and random distributions against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import spartan as sp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((5, 6))


def close(got, expected):
    g = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert g.shape == np.shape(expected), (g.shape, np.shape(expected))
    np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12)


def close_all(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        close(g, e)


def test_index_arithmetic(local, tiling):
    close(
        sp.ravel_multi_index(([1, 2], [3, 4]), (5, 6)),
        np.ravel_multi_index(([1, 2], [3, 4]), (5, 6)),
    )
    close_all(
        sp.unravel_index(sp.array([3, 29], tiling=tiling), (5, 6)),
        np.unravel_index([3, 29], (5, 6)),
    )
    close_all(sp.ix_([0, 2], [1, 3]), np.ix_([0, 2], [1, 3]))
    close_all(sp.tril_indices(4, 1, 5), np.tril_indices(4, 1, 5))
    close_all(sp.triu_indices(4, -1), np.triu_indices(4, -1))
    close_all(sp.triu_indices_from(A), np.triu_indices_from(A))
    close_all(sp.tril_indices_from(A, 2), np.tril_indices_from(A, 2))
    close_all(sp.diag_indices(3), np.diag_indices(3))
    close_all(sp.diag_indices_from(np.ones((3, 3))), np.diag_indices_from(np.ones((3, 3))))


def test_updates_rebind(local, tiling):
    def both(fn_sp, fn_np):
        x = sp.array(A.copy(), tiling=tiling)
        b = A.copy()
        fn_sp(x)
        fn_np(b)
        close(x, b)

    both(lambda x: sp.fill_diagonal(x, 7), lambda b: np.fill_diagonal(b, 7))
    both(lambda x: sp.place(x, A > 0, [1, 2]), lambda b: np.place(b, A > 0, [1, 2]))
    both(lambda x: sp.putmask(x, A > 0, -A), lambda b: np.putmask(b, A > 0, -A))
    both(lambda x: sp.copyto(x, 3.0, where=A > 0), lambda b: np.copyto(b, 3.0, where=A > 0))
    idx = np.argsort(A, axis=1)[:, :2]
    both(lambda x: sp.put_along_axis(x, idx, 0.0, 1), lambda b: np.put_along_axis(b, idx, 0.0, 1))
    tall = np.zeros((7, 3))
    x = sp.array(tall)
    sp.fill_diagonal(x, 1, wrap=True)
    np.fill_diagonal(tall, 1, wrap=True)
    close(x, tall)


def test_calculus(local, tiling):
    x = sp.array(A, tiling=tiling)
    close_all(sp.gradient(x), np.gradient(A))
    close(sp.gradient(x, 0.5, axis=1, edge_order=2), np.gradient(A, 0.5, axis=1, edge_order=2))
    close(sp.trapezoid(x), np.trapezoid(A))
    close(sp.trapezoid(x, dx=0.1, axis=0), np.trapezoid(A, dx=0.1, axis=0))
    close(sp.trapezoid(x, np.arange(6.0) ** 2), np.trapezoid(A, np.arange(6.0) ** 2))
    ph = np.cumsum(RNG.random(20) * 3)
    close(sp.unwrap(np.mod(ph, 2 * np.pi)), np.unwrap(np.mod(ph, 2 * np.pi)))


def test_lookups(local, tiling):
    x = sp.array(A, tiling=tiling)
    close(sp.interp(x, [-1, 0, 1], [5, 0, 2]), np.interp(A, [-1, 0, 1], [5, 0, 2]))
    close(
        sp.interp(x, [-1, 1], [0, 1], left=-9, right=9),
        np.interp(A, [-1, 1], [0, 1], left=-9, right=9),
    )
    close(sp.digitize(x, [-1, 0, 1]), np.digitize(A, [-1, 0, 1]))
    close(sp.digitize(x, [1, 0, -1], right=True), np.digitize(A, [1, 0, -1], right=True))
    close(sp.polyval([1, 2, 3], x), np.polyval([1, 2, 3], A))
    close(sp.vander(sp.arange(4), 3, increasing=True), np.vander(np.arange(4), 3, increasing=True))
    xs = np.linspace(0, 1, 30)
    close(sp.polyfit(xs, 3 * xs**2 - xs + 1, 2), np.polyfit(xs, 3 * xs**2 - xs + 1, 2))


def test_windows(local):
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        for m in (1, 6, 7):
            close(getattr(sp, name)(m), getattr(np, name)(m))
    close(sp.kaiser(8, 3.0), np.kaiser(8, 3.0))


def test_functional(local, tiling):
    x = sp.array(A, tiling=tiling)
    close(sp.apply_along_axis(np.sum, 1, x), np.apply_along_axis(np.sum, 1, A))
    close(
        sp.apply_along_axis(lambda r: r[:2] * 2, 0, x),
        np.apply_along_axis(lambda r: r[:2] * 2, 0, A),
    )
    close(sp.apply_over_axes(sp.sum, x, [0, 1]), np.apply_over_axes(np.sum, A, [0, 1]))
    close(sp.i0(x), np.i0(A))
    fns = [lambda v: -v, lambda v: v * 2]
    close(sp.piecewise(x, [A < 0, A >= 0], fns), np.piecewise(A, [A < 0, A >= 0], fns))


def test_sorting_extras(local):
    k1, k2 = A[:, 0] > 0, np.round(A[:, 1])
    close(sp.lexsort([k1, k2]), np.lexsort([k1, k2]))
    c = np.array([3, 1 + 2j, 1 - 1j])
    close(sp.sort_complex(c), np.sort_complex(c))


def test_products_and_shapes(local, tiling):
    x = sp.array(A, tiling=tiling)
    b = np.arange(6.0).reshape(2, 3)
    close(sp.kron(x[:2, :2], b), np.kron(A[:2, :2], b))
    close(sp.kron(np.arange(3), np.arange(2)), np.kron(np.arange(3), np.arange(2)))
    close(sp.cross(x[:, :3], x[:, 3:]), np.cross(A[:, :3], A[:, 3:]))
    close(sp.vecdot(x, x), np.vecdot(A, A))
    close(sp.matvec(x, np.arange(6.0)), np.matvec(A, np.arange(6.0)))
    close(sp.vecmat(np.arange(5.0), x), np.vecmat(np.arange(5.0), A))
    assert sp.shape(x) == A.shape and sp.ndim(x) == 2 and sp.size(x) == 30 and sp.size(x, 1) == 6
    for axis, start in [(2, 0), (0, 3), (1, 1)]:
        assert (
            sp.rollaxis(sp.ones((2, 3, 4)), axis, start).shape
            == np.rollaxis(np.ones((2, 3, 4)), axis, start).shape
        )
    z = np.array([0, 0, 1, 2, 0, 3, 0])
    for trim in ("fb", "f", "b"):
        close(sp.trim_zeros(sp.array(z), trim), np.trim_zeros(z, trim))
    close(sp.histogram_bin_edges(x, 4), np.histogram_bin_edges(A, 4))


@pytest.mark.parametrize(
    "name, args",
    [
        ("laplace", ()),
        ("logistic", ()),
        ("gumbel", ()),
        ("lognormal", ()),
        ("rayleigh", ()),
        ("weibull", (2.0,)),
        ("pareto", (3.0,)),
        ("power", (2.0,)),
        ("standard_cauchy", ()),
        ("triangular", (0, 1, 3)),
        ("geometric", (0.3,)),
    ],
)
def test_distributions_match_numpy_quantiles(local, name, args):
    got = getattr(sp.random.default_rng(1), name)(*args, size=4000).to_numpy()
    ref = getattr(np.random.default_rng(1), name)(*args, size=4000)
    assert got.dtype == ref.dtype
    # the same distribution: quartiles agree within sampling error
    q = [0.25, 0.5, 0.75]
    np.testing.assert_allclose(np.quantile(got, q), np.quantile(ref, q), rtol=0.15, atol=0.05)


def test_errors(local):
    with pytest.raises(ValueError):
        sp.interp(sp.ones(3), [0, 1], [0, 1, 2])
    with pytest.raises(ValueError):
        sp.digitize(sp.ones(3), [0, 2, 1])
    with pytest.raises(ValueError):
        sp.gradient(sp.ones(1))
    with pytest.raises(ValueError):
        sp.ravel_multi_index(([1],), (2, 2))
    with pytest.raises(TypeError):
        sp.unravel_index(sp.ones(2), (2, 2))
    with pytest.raises(ValueError):
        sp.random.default_rng(0).triangular(2, 1, 3)
    with pytest.raises(ValueError):
        sp.cross(sp.ones((2, 4)), sp.ones((2, 4)))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate(local, tiling, mode):
    a = RNG.standard_normal(40)
    k = RNG.standard_normal(5)
    c = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
    for x, y in [(a, k), (k, a), (a, c), (c, a)]:
        sx = sp.array(x, tiling=tiling)
        close(sp.convolve(sx, y, mode), np.convolve(x, y, mode))
        close(sp.correlate(sx, y, mode), np.correlate(x, y, mode))


def test_tensor_solvers_and_permuted(local):
    a = RNG.standard_normal((6, 2, 3))
    b = RNG.standard_normal(6)
    close(sp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b))
    t = RNG.standard_normal((4, 6, 8, 3))
    close(sp.linalg.tensorinv(t, 2), np.linalg.tensorinv(t, 2))
    p = sp.random.default_rng(0).permuted(sp.array(np.arange(12).reshape(3, 4)), axis=1).to_numpy()
    np.testing.assert_array_equal(np.sort(p, axis=1), np.arange(12).reshape(3, 4))
    q = sp.random.default_rng(0).permuted(sp.arange(10)).to_numpy()
    np.testing.assert_array_equal(np.sort(q), np.arange(10))


@pytest.mark.parametrize(
    "name, args",
    [
        ("gamma", (2.0, 3.0)),
        ("beta", (2.0, 5.0)),
        ("chisquare", (3.0,)),
        ("f", (5.0, 7.0)),
        ("standard_t", (4.0,)),
        ("wald", (1.0, 2.0)),
        ("poisson", (4.0,)),
        ("binomial", (10, 0.3)),
        ("negative_binomial", (3, 0.4)),
        ("hypergeometric", (10, 5, 6)),
        ("noncentral_chisquare", (3.0, 2.0)),
    ],
)
def test_scipy_quantile_distributions(local, name, args):
    got = getattr(sp.random.default_rng(2), name)(*args, size=3000).to_numpy()
    ref = getattr(np.random.default_rng(2), name)(*args, size=3000)
    assert got.dtype == ref.dtype
    q = [0.25, 0.5, 0.75]
    np.testing.assert_allclose(np.quantile(got, q), np.quantile(ref, q), rtol=0.15, atol=0.2)


def test_histogram_dd(local, tiling):
    a = RNG.standard_normal((120, 2))
    h, e1, e2 = sp.histogram2d(a[:, 0], a[:, 1], bins=4)
    h_np, e1_np, e2_np = np.histogram2d(a[:, 0], a[:, 1], bins=4)
    close(h, h_np)
    close(e1, e1_np)
    close(e2, e2_np)
    h, _ = sp.histogramdd(sp.array(a, tiling=tiling), bins=(3, 5), density=True)
    close(h, np.histogramdd(a, bins=(3, 5), density=True)[0])


def test_inspection(local):
    a = np.arange(6.0).reshape(2, 3)
    x = sp.array(a)
    assert sp.array_repr(x) == np.array_repr(a)
    assert sp.array_str(x) == np.array_str(a)
    assert sp.array2string(x, precision=1, separator=",") == np.array2string(
        a, precision=1, separator=","
    )
    with pytest.raises(ValueError):
        sp.asarray_chkfinite(np.array([1.0, np.nan]))
    assert sp.may_share_memory(x, x[1:]) and not sp.may_share_memory(x, x + 1)
    assert not sp.isfortran(x)


def test_multivariate_normal_and_dirichlet(local):
    g = sp.random.default_rng(0)
    m = g.multivariate_normal([1, 2], [[1, 0.5], [0.5, 2]], size=4000).to_numpy()
    assert m.shape == (4000, 2)
    np.testing.assert_allclose(m.mean(0), [1, 2], atol=0.1)
    np.testing.assert_allclose(np.cov(m.T), [[1, 0.5], [0.5, 2]], atol=0.15)
    d = g.dirichlet([1, 2, 3], size=2000).to_numpy()
    np.testing.assert_allclose(d.sum(1), 1)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.03)


def test_mask_indices_row_stack(local):
    for g, e in zip(sp.mask_indices(4, sp.triu, 1), np.mask_indices(4, np.triu, 1)):
        close(g, e)
    close(sp.row_stack([sp.ones(2), np.zeros(2)]), np.vstack([np.ones(2), np.zeros(2)]))


def test_polynomials(local):
    cases = [
        (sp.polyadd([1, 2], [1, 2, 3]), np.polyadd([1, 2], [1, 2, 3])),
        (
            sp.polysub(np.array([1, 2]), np.array([1.0, 2, 3])),
            np.polysub(np.array([1, 2]), np.array([1.0, 2, 3])),
        ),
        (sp.polymul([1, 2], [1, 2, 3]), np.polymul([1, 2], [1, 2, 3])),
        (sp.polyder([1, 2, 3, 4], 2), np.polyder([1, 2, 3, 4], 2)),
        (sp.polyint([1, 2, 3], 2, [1, 2]), np.polyint([1, 2, 3], 2, [1, 2])),
        (sp.poly([1, 2, 3]), np.poly([1, 2, 3])),
        (sp.poly(np.array([[1.0, 2], [3, 4]])), np.poly(np.array([[1.0, 2], [3, 4]]))),
    ]
    for got, expected in cases:
        assert got.dtype == np.asarray(expected).dtype
        close(got, expected)
    close(np.sort_complex(sp.roots([1, -6, 11, -6]).to_numpy()), [1, 2, 3])
    with pytest.raises(ValueError):
        sp.roots([0, 1, -1]).to_numpy()


def test_einsum_path_frompyfunc_multinomial(local):
    a, b, c = np.ones((3, 4)), np.ones((4, 5)), np.ones((5, 2))
    assert (
        sp.einsum_path("ij,jk,kl->il", sp.array(a), b, c)[0]
        == np.einsum_path("ij,jk,kl->il", a, b, c)[0]
    )
    f = sp.frompyfunc(lambda x, y: x * 10 + y, 2, 1)
    got = f(sp.arange(4), 1).to_numpy()
    assert got.dtype == object and list(got) == [1, 11, 21, 31]
    m = sp.random.default_rng(0).multinomial(20, [0.2, 0.3, 0.5], size=3000).to_numpy()
    assert m.shape == (3000, 3) and m.dtype == np.int64
    np.testing.assert_array_equal(m.sum(1), 20)
    np.testing.assert_allclose(m.mean(0), [4, 6, 10], atol=0.2)
