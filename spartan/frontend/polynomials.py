"""Polynomials as 1-d coefficient arrays (highest power first), like ``numpy.poly*``:
sums are padded adds, products are distributed convolutions, derivatives and integrals
are element-wise maps against the powers, and root finding is the eigenvalue problem of
the companion matrix (one task, as the matrix is small).

>>> sp.polymul([1, 2], [1, 2, 3])
array([1, 4, 7, 6])
>>> sp.polyder([1, 2, 3, 4], 2)
array([6, 4])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import arange, asarray, zeros
from spartan.frontend.interpolation import _small
from spartan.frontend.ufuncs import elementwise


def _coeffs(p: Any) -> Array:
    c = asarray(p)
    if c.ndim == 0:
        c = c.reshape(1)
    if c.ndim != 1:
        raise ValueError("polynomial coefficients must be 1-d")
    return c


def _left_pad(c: Array, n: int, dtype: Any) -> Array:
    from spartan.frontend.manipulation import concatenate

    c = c.astype(dtype)
    return c if c.shape[0] == n else concatenate([zeros((n - c.shape[0],), dtype=dtype), c])


def polyadd(a1: Any, a2: Any) -> Array:
    """Sum of two polynomials."""
    a, b = _coeffs(a1), _coeffs(a2)
    n = max(a.shape[0], b.shape[0])
    dtype = np.result_type(a.dtype, b.dtype)
    return _left_pad(a, n, dtype) + _left_pad(b, n, dtype)


def polysub(a1: Any, a2: Any) -> Array:
    """Difference of two polynomials."""
    a, b = _coeffs(a1), _coeffs(a2)
    n = max(a.shape[0], b.shape[0])
    dtype = np.result_type(a.dtype, b.dtype)
    return _left_pad(a, n, dtype) - _left_pad(b, n, dtype)


def polymul(a1: Any, a2: Any) -> Array:
    """Product of two polynomials (a distributed convolution)."""
    from spartan.frontend.convolution import convolve

    return convolve(_coeffs(a1), _coeffs(a2))


def polyder(p: Any, m: int = 1) -> Array:
    """The ``m``-th derivative."""
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    c = _coeffs(p)
    for _ in range(m):
        n = c.shape[0] - 1
        if n <= 0:
            return c[:0] if c.dtype.kind != "b" else c[:0].astype(np.int64)
        c = c[:-1] * arange(n, 0, -1, dtype=np.int64)
    return c


def polyint(p: Any, m: int = 1, k: Any = None) -> Array:
    """The ``m``-th antiderivative with integration constants ``k``."""
    from spartan.frontend.manipulation import concatenate

    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    ks = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k, dtype=float))
    if ks.size == 1 and m > 1:
        ks = np.full(m, ks[0])
    if ks.size < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    c = _coeffs(p).astype(np.result_type(_coeffs(p).dtype, np.float64))
    for i in range(m):
        n = c.shape[0]
        c = concatenate([c / arange(n, 0, -1, dtype=np.float64), asarray(ks[i : i + 1])])
    return c


def poly(seq_of_zeros: Any) -> Array:
    """Coefficients of the monic polynomial with the given roots (a chain of
    convolutions); a square matrix gives its characteristic polynomial."""
    from spartan.frontend.convolution import convolve

    z = asarray(seq_of_zeros)
    real_matrix = z.ndim == 2 and z.dtype.kind != "c"
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] > 0:
        from spartan import linalg

        # a real matrix's eigenvalues come in conjugate pairs: its polynomial is real
        return poly(linalg.eigvals(z)).real if real_matrix else poly(linalg.eigvals(z))
    if z.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dtype = np.result_type(z.dtype, np.float64)
    if z.shape[0] == 0:
        return asarray(np.array(1.0, dtype=dtype))
    coeffs = asarray(np.array([1.0], dtype=dtype))
    for i in range(z.shape[0]):
        root = z[i : i + 1].astype(dtype)
        from spartan.frontend.manipulation import concatenate

        coeffs = convolve(coeffs, concatenate([asarray(np.ones(1, dtype)), -root]))
    return coeffs


class _Roots:
    def __init__(self, count: int):
        self.count = count

    def __call__(self, p: np.ndarray) -> np.ndarray:
        r = np.roots(p)
        if r.size != self.count:
            raise ValueError(
                "spartan.roots needs a non-zero leading coefficient (strip leading zeros: "
                "the number of roots would depend on the data)"
            )
        return r.astype(np.complex128)


def roots(p: Any) -> Array:
    """Roots of a polynomial: eigenvalues of its companion matrix (one task).

    The result is complex128 (NumPy returns float64 when every root is real; that
    depends on the data, so spartan keeps the complex type)."""
    from spartan.frontend.decompositions import dense

    c = _coeffs(p)
    nz = c.shape[0] - 1
    if nz <= 0:
        return c[:0].astype(np.complex128)
    return dense(_Roots(nz), [c], (nz,), np.complex128, "roots")


def polyval(p: Any, x: Any) -> Array:
    """The polynomial with coefficients ``p`` (highest first) at ``x`` (Horner's rule
    as one fused map)."""
    coeffs = _small(p, "polyval")
    xx = asarray(x)
    result = elementwise(np.multiply, xx, 0) + coeffs[0] if coeffs.size else xx * 0
    for c in coeffs[1:]:
        result = result * xx + c
    return result


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Array:
    """Vandermonde matrix: columns are powers of ``x`` (one map over a broadcast)."""
    xx = asarray(x)
    if xx.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = xx.shape[0] if N is None else int(N)
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    return elementwise(np.power, xx[:, None], powers[None, :], name="vander")


def polyfit(
    x: Any,
    y: Any,
    deg: int,
    rcond: Any = None,
    full: bool = False,
    w: Any = None,
    cov: bool = False,
) -> Array:
    """Least-squares polynomial fit (TSQR ``lstsq`` on the Vandermonde matrix)."""
    from spartan import linalg

    if deg < 0:
        raise ValueError("expected deg >= 0")
    if full or cov or w is not None:
        raise TypeError("spartan.polyfit returns the coefficients only (no full/cov/w)")
    xx = asarray(x).astype(np.float64)
    yy = asarray(y).astype(np.float64)
    if xx.ndim != 1 or xx.shape[0] != yy.shape[0]:
        raise (
            TypeError("expected 1D vector for x")
            if xx.ndim != 1
            else TypeError("expected x and y to have same length")
        )
    coeffs, _, _, _ = linalg.lstsq(vander(xx, deg + 1), yy, rcond)
    return coeffs
