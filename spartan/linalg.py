"""``spartan.linalg``: NumPy's ``numpy.linalg`` on spartan arrays.

Tall-skinny matrices are factored by TSQR (``qr``, ``svd``, ``lstsq``,
``svd_compressed``) without gathering them; small square problems (``solve``, ``inv``,
``det``, ``cholesky``, ``eigh``...) run as one task on one worker, which receives the
operands whole — never the driver.

>>> q, r = spartan.linalg.qr(x)
>>> u, s, vt = spartan.linalg.svd(x, full_matrices=False)
"""

from __future__ import annotations

import functools
import operator
from typing import Any, NamedTuple

import numpy as np

from spartan.backend.device import array_module
from spartan.config import config
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.decompositions import blocked_cholesky, dense, solve_dense, stacked, tsqr
from spartan.frontend.manipulation import matrix_transpose as _matrix_transpose
from spartan.frontend.products import cross as _cross
from spartan.frontend.products import diagonal as _diagonal
from spartan.frontend.products import dot, vdot
from spartan.frontend.products import matmul as _matmul
from spartan.frontend.products import outer as _outer
from spartan.frontend.products import tensordot as _tensordot
from spartan.frontend.products import trace as _trace
from spartan.frontend.products import vecdot as _vecdot

__all__ = [
    "LinAlgError",
    "matmul",
    "outer",
    "tensordot",
    "vdot",
    "matrix_transpose",
    "trace",
    "diagonal",
    "norm",
    "vector_norm",
    "matrix_norm",
    "qr",
    "cholesky",
    "solve",
    "lstsq",
    "inv",
    "det",
    "slogdet",
    "svd",
    "svdvals",
    "svd_compressed",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "matrix_rank",
    "pinv",
    "matrix_power",
    "multi_dot",
    "cond",
    "vecdot",
    "cross",
    "tensorinv",
    "tensorsolve",
]

LinAlgError = np.linalg.LinAlgError


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


def _workers() -> int:
    from spartan.backend import session

    return session.current().nworkers


def _matrix(a: Any, name: str) -> Array:
    x = asarray(a)
    if x.ndim != 2:
        raise (
            LinAlgError(f"{x.ndim}-dimensional array given. Array must be two-dimensional")
            if x.ndim < 2
            else LinAlgError(f"spartan.linalg.{name} takes 2-d arrays")
        )
    if x.dtype.kind not in "biufc":
        raise TypeError(f"array type {x.dtype} is unsupported in linalg")
    return x


def _square(a: Any, name: str) -> Array:
    x = _matrix(a, name)
    if x.shape[0] != x.shape[1]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return x


def _square_stack(a: Any, name: str) -> Array:
    """A square matrix or a stack of them (``(..., M, M)``)."""
    x = asarray(a)
    if x.ndim < 2:
        raise LinAlgError(
            f"{x.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if x.shape[-1] != x.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"array type {x.dtype} is unsupported in linalg")
    return x


def _result_dtype(fn: Any, *xs: Array) -> np.dtype:
    probe = fn(*[np.eye(2, dtype=x.dtype) for x in xs])
    return np.asarray(probe[0] if isinstance(probe, tuple) else probe).dtype


def _tsqr_groups(x: Array) -> int:
    """Row groups for TSQR of ``x``, or 1: one task factors it whole. A matrix under
    ``config.tsqr_min_bytes`` is cheaper to send to one worker than to factor in TSQR's
    three dependent stages, each a round trip between workers."""
    m, n = x.shape
    if x.nbytes < config.tsqr_min_bytes:
        return 1
    return max(1, min(_workers() * 2, m // max(n, 1)))


def _stack(a: Any, name: str) -> Array:
    """A matrix or a stack of matrices (``(..., M, N)``) of a type linalg takes."""
    x = asarray(a)
    if x.ndim < 2:
        raise LinAlgError(
            f"{x.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if x.dtype.kind not in "biufc":
        raise TypeError(f"array type {x.dtype} is unsupported in linalg")
    return x


class _Packed:
    """``fn`` (NumPy's, with several results) on one matrix or a stack, its results'
    matrix parts flattened side by side along one last axis: one array to send back."""

    def __init__(self, fn: Any, dtype: np.dtype, sizes: tuple[int, ...]) -> None:
        self.fn, self.dtype, self.sizes = fn, dtype, sizes

    def __call__(self, a: Any) -> Any:
        xp = array_module(a)  # (NumPy's linalg dispatches GPU blocks to CuPy's)
        outs = self.fn(a)
        outs = outs if isinstance(outs, tuple) else (outs,)
        batch = a.shape[:-2]
        return xp.concatenate(
            [
                xp.asarray(o).astype(self.dtype).reshape(batch + (n,))
                for o, n in zip(outs, self.sizes)
            ],
            axis=-1,
        )


def _complex(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _factor(fn: Any, x: Array, name: str, complex_results: bool = False) -> tuple[Array, ...]:
    """``fn`` (a NumPy linalg function of one ``(..., M, N)`` array) on ``x``: one task for
    one matrix, groups along the batch axis for a stack (where the matrices live).

    The results' shapes and dtypes are NumPy's own for this matrix size, read from
    ``fn`` on an empty stack (no work); ``complex_results``: results are complex however
    the values come out (``eig`` of a real matrix is real or complex by its values, which
    a lazy result cannot wait for). An empty input is NumPy's result at once, dtypes
    included.
    """
    m, n = x.shape[-2:]
    probe = fn(np.zeros((0, m, n), x.dtype))
    probes = probe if isinstance(probe, tuple) else (probe,)
    cores = [p.shape[1:] for p in probes]
    dtypes = [_complex(p.dtype) if complex_results else p.dtype for p in probes]
    batch = x.shape[:-2]
    if x.size == 0:
        empty = fn(np.zeros(x.shape, x.dtype))
        empty = empty if isinstance(empty, tuple) else (empty,)
        return tuple(asarray(np.asarray(e)) for e in empty)  # (NumPy's dtypes: no values)
    sizes = tuple(int(np.prod(c)) for c in cores)
    packed_dtype = np.result_type(*dtypes)
    task = _Packed(fn, packed_dtype, sizes)
    if x.ndim > 2:
        packed = stacked(task, [x], batch + (sum(sizes),), packed_dtype, name)
    else:
        packed = dense(task, [x], (sum(sizes),), packed_dtype, name)
    outs, at = [], 0
    for core, size, dtype in zip(cores, sizes, dtypes):
        part = packed[..., at : at + size].reshape(batch + core)
        if part.dtype.kind == "c" and dtype.kind != "c":
            part = part.real
        outs.append(part.astype(dtype, copy=False))
        at += size
    return tuple(outs)


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR factorization of a matrix or of each matrix of a stack (see
    :func:`numpy.linalg.qr`): TSQR when one matrix is tall (``m >= 2n``) and of at least
    ``spartan.config.tsqr_min_bytes``, one task otherwise; a stack in groups.

    >>> q, r = sp.linalg.qr(sp.random.rand(100, 4))
    """
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    x = _stack(a, "qr")
    if x.ndim == 2 and mode in ("reduced", "r") and x.size:
        groups = _tsqr_groups(x)
        if groups > 1:
            q, r = tsqr(x, groups)
            return r if mode == "r" else QRResult(q, r)
    outs = _factor(functools.partial(np.linalg.qr, mode=mode), x, "qr")
    if mode == "r":
        return outs[0]
    return QRResult(*outs) if mode != "raw" else outs


def _svd_packed(a: np.ndarray) -> np.ndarray:
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    k = s.shape[0]
    out = np.zeros((a.shape[0] + 1 + k, max(k, a.shape[1])), u.dtype)
    out[: a.shape[0], :k] = u
    out[a.shape[0], :k] = s
    out[a.shape[0] + 1 :, : a.shape[1]] = vh
    return out


def _svd_full_packed(a: np.ndarray) -> np.ndarray:
    u, s, vh = np.linalg.svd(a, full_matrices=True)
    m, n = a.shape
    out = np.zeros((m + 1 + n, max(m, n)), u.dtype)
    out[:m, :m] = u
    out[m, : s.shape[0]] = s
    out[m + 1 :, :n] = vh
    return out


def _small_svd(x: Array) -> tuple[Array, Array, Array]:
    m, n = x.shape
    k = min(m, n)
    dtype = np.linalg.svd(np.ones((1, 1), x.dtype))[0].dtype
    packed = dense(_svd_packed, [x], (m + 1 + k, max(k, n)), dtype, "svd")
    sdtype = np.finfo(dtype).dtype
    return packed[:m, :k], packed[m, :k].real.astype(sdtype), packed[m + 1 :, :n]


def svd(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> Any:
    """Singular value decomposition of a matrix or of each matrix of a stack. A
    tall-skinny matrix is reduced by TSQR first (``U = Q @ U_R``); ``full_matrices=True``
    with ``m != n`` runs as one task, and so does each group of a stack. (``hermitian``
    is accepted; the general SVD gives the same singular values.)

    >>> u, s, vh = sp.linalg.svd(sp.random.rand(100, 4), full_matrices=False)
    """
    x = _stack(a, "svd")
    if x.ndim > 2 or x.size == 0:
        fn = functools.partial(np.linalg.svd, full_matrices=full_matrices, compute_uv=compute_uv)
        outs = _factor(fn, x, "svd")
        return SVDResult(*outs) if compute_uv else outs[0]
    m, n = x.shape
    if full_matrices and m != n and compute_uv:
        # one task: U (m x m), S and Vh (n x n) packed in the rows of one array
        dtype = np.linalg.svd(np.ones((1, 1), x.dtype))[0].dtype
        k = min(m, n)
        packed = dense(_svd_full_packed, [x], (m + 1 + n, max(m, n)), dtype, "svd")
        s = packed[m, :k].real.astype(np.finfo(dtype).dtype)
        return SVDResult(packed[:m, :m], s, packed[m + 1 :, :n])
    groups = _tsqr_groups(x)
    if groups > 1:
        q, r = tsqr(x, groups)
        ur, s, vh = _small_svd(r)
        u = dot(q, ur)
    else:
        u, s, vh = _small_svd(x)
    return SVDResult(u, s, vh) if compute_uv else s


def svdvals(x: Any, /) -> Array:
    """Singular values of a matrix or of each matrix of a stack, descending.

    >>> sp.linalg.svdvals(sp.eye(3)).to_numpy()
    array([1., 1., 1.])
    """
    return svd(x, compute_uv=False)


def svd_compressed(a: Any, k: int, n_power_iter: int = 2, seed: int | None = 0) -> SVDResult:
    """Randomized truncated SVD (Halko et al.): a Gaussian sketch, ``n_power_iter``
    power iterations (re-orthogonalised by ``qr``), then the SVD of the small projection.

    >>> u, s, vt = spartan.linalg.svd_compressed(sp.random.rand(100, 20), k=10)
    >>> u.shape, s.shape, vt.shape
    ((100, 10), (10,), (10, 20))
    """
    from spartan.frontend.random import default_rng

    x = _matrix(a, "svd_compressed")
    m, n = x.shape
    if not 0 < k <= min(m, n):
        raise ValueError(f"k must be in [1, {min(m, n)}], got {k}")
    p = min(n, k + 10)
    omega = default_rng(seed).standard_normal((n, p)).astype(x.dtype)
    y = dot(x, omega)

    q = qr(y)[0]
    for _ in range(n_power_iter):
        q = qr(dot(x, qr(dot(x.T, q))[0]))[0]
    b = dot(q.T, x)
    ub, s, vh = _small_svd(b)
    return SVDResult(dot(q, ub)[:, :k], s[:k], vh[:k])


#: matrices up to this order are factored by one task; larger ones blockwise
CHOLESKY_BLOCK = 1024


def cholesky(a: Any, /, *, upper: bool = False, block: int | None = None) -> Array:
    """Cholesky factor ``L`` (``a = L @ L.H``): one task for small matrices, the
    blocked right-looking algorithm (``block`` columns at a time) for larger ones."""
    x = _square_stack(a, "cholesky")
    dtype = _result_dtype(np.linalg.cholesky, x)
    block = block or CHOLESKY_BLOCK
    if x.ndim > 2:
        low = stacked(np.linalg.cholesky, [x], x.shape, dtype, "cholesky")
    elif x.shape[0] <= block:
        low = dense(np.linalg.cholesky, [x], x.shape, dtype, "cholesky")
    else:
        low = blocked_cholesky(x, block)
    return low.T.conj() if upper else low


def solve(a: Any, b: Any) -> Array:
    """Solve ``a @ x = b``: one task for one square ``a`` (by substitution when ``a`` is
    triangular, e.g. a Cholesky factor; by LU otherwise); stacks ``(..., M, M)``
    (NumPy 2 semantics: ``b`` is ``(..., M, K)``, or ``(M,)`` for one vector) in groups
    along the batch axis, where the matrices live."""
    x = _square_stack(a, "solve")
    y = asarray(b)
    if x.ndim > 2 or y.ndim > 2:
        return _solve_stack(x, y)
    if y.ndim == 0 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (m,m),(m,n)->(m,n) (size {y.shape[0] if y.ndim else 0} is different "
            f"from {x.shape[0]})"
        )
    dtype = np.result_type(
        _result_dtype(np.linalg.inv, x), y.dtype, np.float64 if y.dtype.kind in "biu" else y.dtype
    )
    return dense(solve_dense, [x, y], y.shape, dtype, "solve")


def _solve_stack(x: Array, y: Array) -> Array:
    from spartan.frontend.manipulation import broadcast_to

    m = x.shape[-1]
    vector = y.ndim == 1
    if (vector and y.shape[0] != m) or (not vector and y.shape[-2] != m):
        raise ValueError(
            f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (m,m),(m,n)->(m,n) (size {y.shape[0 if vector else -2]} is different "
            f"from {m})"
        )
    batch = tuple(np.broadcast_shapes(x.shape[:-2], () if vector else y.shape[:-2]))
    x = broadcast_to(x, batch + (m, m))
    y = broadcast_to(y, batch + ((m,) if vector else y.shape[-2:]))
    # NumPy's own dtype for these operands (float32 stays float32)
    dtype = np.linalg.solve(np.eye(1, dtype=x.dtype), np.ones((1, 1), y.dtype)).dtype
    return stacked(np.linalg.solve, [x, y], y.shape, dtype, "solve", vector_rhs=vector)


def inv(a: Any) -> Array:
    """Inverse of a small square matrix (one task) or of each matrix of a stack."""
    x = _square_stack(a, "inv")
    dtype = _result_dtype(np.linalg.inv, x)
    if x.ndim > 2:
        return stacked(np.linalg.inv, [x], x.shape, dtype, "inv")
    return dense(np.linalg.inv, [x], x.shape, dtype, "inv")


def det(a: Any) -> Array:
    """Determinant of a small square matrix (one task) or of each matrix of a stack."""
    x = _square_stack(a, "det")
    dtype = _result_dtype(np.linalg.det, x)
    if x.ndim > 2:
        return stacked(np.linalg.det, [x], x.shape[:-2], dtype, "det")
    return dense(np.linalg.det, [x], (), dtype, "det")


def _per_matrix(fn: Any, x: Array, shape: tuple[int, ...], dtype: Any, name: str) -> Array:
    """``fn`` on one small matrix (one task) or on each matrix of a stack (groups)."""
    if x.ndim > 2:
        return stacked(fn, [x], x.shape[:-2] + shape, dtype, name)
    return dense(fn, [x], shape, dtype, name)


def _slogdet_packed(a: np.ndarray) -> np.ndarray:
    sign, logdet = np.linalg.slogdet(a)
    return np.stack([sign, logdet.astype(sign.dtype)], axis=-1)


def slogdet(a: Any) -> SlogdetResult:
    """Sign and log of the absolute determinant (also of each matrix of a stack)."""
    x = _square_stack(a, "slogdet")
    sign, logdet = np.linalg.slogdet(np.eye(1, dtype=x.dtype))
    packed = _per_matrix(_slogdet_packed, x, (2,), sign.dtype, "slogdet")
    return SlogdetResult(packed[..., 0], packed[..., 1].real.astype(logdet.dtype))


def _eigh_packed(uplo: str, a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return np.concatenate([w[..., None, :].astype(v.dtype), v], axis=-2)


def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of a small symmetric matrix, or of
    each matrix of a stack."""
    x = _square_stack(a, "eigh")
    w0, v0 = np.linalg.eigh(np.eye(1, dtype=x.dtype))
    n = x.shape[-1]
    fn = functools.partial(_eigh_packed, UPLO)
    packed = _per_matrix(fn, x, (n + 1, n), v0.dtype, "eigh")
    return EighResult(packed[..., 0, :].real.astype(w0.dtype), packed[..., 1:, :])


def eigvalsh(a: Any, UPLO: str = "L") -> Array:
    """Eigenvalues of a small symmetric matrix (or of each matrix of a stack)."""
    x = _square_stack(a, "eigvalsh")
    fn = functools.partial(np.linalg.eigvalsh, UPLO=UPLO)
    dtype = np.linalg.eigvalsh(np.eye(1, dtype=x.dtype)).dtype
    return _per_matrix(fn, x, (x.shape[-1],), dtype, "eigvalsh")


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors of a square matrix or of each matrix of a
    stack. Always complex: NumPy gives a real matrix real results when every
    eigenvalue comes out real, which a lazy result cannot wait to see.

    >>> w, v = sp.linalg.eig(sp.eye(2))
    """
    x = _square_stack(a, "eig")
    return EigResult(*_factor(np.linalg.eig, x, "eig", complex_results=True))


def eigvals(a: Any) -> Array:
    """Eigenvalues of a square matrix or of each matrix of a stack (complex, see
    :func:`eig`)."""
    x = _square_stack(a, "eigvals")
    return _factor(np.linalg.eigvals, x, "eigvals", complex_results=True)[0]


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Array, Array, int, Array]:
    """Least squares ``min ||a @ x - b||``: through TSQR for tall ``a``
    (``x = R^-1 Q^H b``), one task otherwise. Returns ``(x, residuals, rank, s)``;
    ``rank`` is a forced integer, a ``numpy.int32`` as NumPy's (LAPACK's) is."""
    from spartan.frontend.reductions import sum as _sum

    x = _matrix(a, "lstsq")
    y = asarray(b)
    m, n = x.shape
    if y.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    # NumPy solves in the type both operands promote to (float64 for float32 with int8)
    probe = np.ones((1,) + y.shape[1:], y.dtype)
    dtype = np.linalg.lstsq(np.ones((1, 1), x.dtype), probe, rcond=rcond)[0].dtype
    real = np.finfo(dtype).dtype
    s = svd(x.astype(dtype, copy=False), full_matrices=False, compute_uv=False)
    cutoff = rcond if rcond is not None else np.finfo(s.dtype).eps * max(m, n)
    rank = int(_sum(s > cutoff * s[0])) if s.shape[0] else 0
    groups = _tsqr_groups(x)
    if groups > 1 and rank == n:
        q, r = tsqr(x.astype(dtype, copy=False), groups)
        # x = QR: x's solution is R^-1 Q^H y (Q^H, not Q^T: a complex Q is unitary)
        qh = q.T.conj() if q.dtype.kind == "c" else q.T
        sol = solve(r, dot(qh, y.astype(dtype, copy=False)))
    else:
        shape = (n,) + y.shape[1:]
        sol = dense(
            lambda p, q: np.linalg.lstsq(p, q, rcond=rcond)[0], [x, y], shape, dtype, "lstsq"
        )
    if rank == n and m > n:
        resid = dot(x, sol) - y
        sq = (resid * resid.conj()).real if resid.dtype.kind == "c" else resid * resid
        residuals = _sum(sq, axis=0).astype(real, copy=False)
        if y.ndim == 1:
            residuals = residuals.reshape(1)
    else:
        residuals = asarray(np.empty((0,), dtype=real))
    return sol, residuals, np.int32(rank), s


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = np._NoValue) -> Array:
    """Pseudo-inverse of a matrix or of each matrix of a stack, from the SVD
    (``V diag(1/s) U^H`` over the singular values above ``rcond`` times the largest),
    with NumPy's tolerances: ``rcond=1e-15`` by default, ``rtol=None`` the array API's
    ``max(M, N) * eps``.

    >>> sp.linalg.pinv(sp.random.rand(5, 3)).shape
    (3, 5)
    """
    x = _stack(a, "pinv")
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(x.shape[-2:]) * np.finfo(x.dtype).eps
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    cut = np.asarray(rcond)
    m, n = x.shape[-2:]
    if x.size == 0:
        return asarray(np.empty(x.shape[:-2] + (n, m), dtype=x.dtype))
    from spartan.frontend.reductions import max as _max

    u, s, vh = svd(x, full_matrices=False, hermitian=hermitian)
    if isinstance(cut, np.ndarray) and cut.ndim:
        cut = cut[..., None]
    big = s > cut * _max(s, axis=-1, keepdims=True)
    sinv = np.where(big, 1.0 / np.where(big, s, 1), 0)
    return matmul(matrix_transpose(vh).conj() * sinv[..., None, :], matrix_transpose(u).conj())


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """Number of singular values above the tolerance, of a matrix or of each matrix of
    a stack (see :func:`numpy.linalg.matrix_rank`); 0 or 1 for fewer than two
    dimensions (whether any element is nonzero), as NumPy.

    >>> int(sp.linalg.matrix_rank(sp.eye(3)))
    3
    """
    from spartan.frontend.reductions import any as _any
    from spartan.frontend.reductions import count_nonzero
    from spartan.frontend.reductions import max as _max

    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    x = asarray(A)
    if x.ndim < 2:
        return _any(x != 0).astype(np.intp)
    s = svdvals(x)
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * np.finfo(s.dtype).eps
        else:
            rtol = np.asarray(rtol)[..., None]
        if s.shape[-1] == 0:
            from spartan.frontend.creation import zeros

            return zeros(s.shape[:-1], dtype=np.intp)
        tol = _max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = np.asarray(tol)[..., None]
    return count_nonzero(s > tol, axis=-1)


def matrix_power(a: Any, n: int) -> Array:
    """``a`` (a square matrix or a stack of them) to the integer power ``n`` by repeated
    squaring (``inv`` first for a negative ``n``).

    >>> float(sp.linalg.matrix_power(sp.eye(3) * 2, 3)[0, 0])
    8.0
    """
    x = asarray(a)
    if x.ndim < 2:
        raise LinAlgError(
            f"{x.ndim}-dimensional array given. Array must be at least two-dimensional"
        )
    if x.shape[-1] != x.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        from spartan.frontend.creation import eye
        from spartan.frontend.manipulation import broadcast_to

        one = eye(x.shape[-1], dtype=x.dtype)
        return broadcast_to(one, x.shape).copy() if x.ndim > 2 else one
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def multi_dot(arrays: Any, *, out: Any = None) -> Array:
    """Chain of products, associated left to right (a 1-d first or last array is a row
    or a column, as in :func:`numpy.linalg.multi_dot`)."""
    from spartan.frontend.reductions import _out

    xs = [asarray(a) for a in arrays]
    if len(xs) < 2:
        raise ValueError("Expecting at least two arrays.")
    result = xs[0]
    for x in xs[1:]:
        result = dot(result, x)
    return _out(result, out)


def _as_float(a: Array) -> Array:
    """NumPy's norms compute integers and booleans in float64."""
    return a if a.dtype.kind in "fcO" else a.astype(np.float64)


def _vector_norm(a: Array, axis: tuple[int, ...], keepdims: bool, ord: Any) -> Any:
    """The ``ord`` vector norm of float ``a`` over the non-negative ``axis`` (NumPy's
    formulas, one reduction each)."""
    import spartan

    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord == np.inf:
        return spartan.max(spartan.abs(a), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return spartan.min(spartan.abs(a), axis=axis, keepdims=keepdims)
    if ord == 0:
        real = np.finfo(a.dtype).dtype if a.dtype.kind == "c" else a.dtype
        return spartan.sum((a != 0).astype(real), axis=axis, keepdims=keepdims)
    if ord == 1:
        return spartan.sum(spartan.abs(a), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        sq = (a.conj() * a).real if a.dtype.kind == "c" else a * a
        return spartan.sqrt(spartan.sum(sq, axis=axis, keepdims=keepdims))
    total = spartan.sum(spartan.abs(a) ** ord, axis=axis, keepdims=keepdims)
    return total ** np.reciprocal(np.asarray(ord, dtype=total.dtype))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The ``ord`` norm of the vectors along ``axis``: an int, a tuple of axes (taken
    together as one vector), or None (every element). See
    :func:`numpy.linalg.vector_norm`.

    >>> float(sp.linalg.vector_norm(sp.asarray([3.0, 4.0])))
    5.0
    """
    from spartan.frontend.reductions import normalize_axes

    a = _as_float(asarray(x))
    if axis is None:
        return _vector_norm(a, tuple(range(a.ndim)), keepdims, ord)
    if not isinstance(axis, tuple):
        axis = (operator.index(axis),)
    return _vector_norm(a, normalize_axes(axis, a.ndim), keepdims, ord)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The ``ord`` norm of a matrix or of each matrix of a stack (the last two axes).

    >>> float(sp.linalg.matrix_norm(sp.eye(4)))
    2.0
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector and matrix norms (see :func:`numpy.linalg.norm`); the 2-, -2- and nuclear
    norms of matrices take the singular values of each matrix (a stack in groups).

    >>> float(sp.linalg.norm(sp.ones((2, 2))))
    2.0
    """
    import spartan
    from spartan.frontend.manipulation import moveaxis

    a = _as_float(spartan.asarray(x))
    nd = a.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            out = _vector_norm(a, tuple(range(nd)), False, 2)
            return out.reshape((1,) * nd) if keepdims else out
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        from spartan.frontend.reductions import normalize_axes

        return _vector_norm(a, normalize_axes(axis, nd), keepdims, ord)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    from spartan.frontend.products import normalize_axis

    r, c = normalize_axis(axis[0], nd), normalize_axis(axis[1], nd)
    if r == c:
        raise ValueError("Duplicate axes given.")
    absa = spartan.abs(a)
    if ord in (2, -2, "nuc"):
        s = svdvals(moveaxis(a, (r, c), (-2, -1)))
        if ord == 2:
            out = spartan.max(s, axis=-1, initial=0)
        elif ord == -2:
            out = spartan.min(s, axis=-1)
        else:
            out = spartan.sum(s, axis=-1)
    elif ord == 1:
        out = spartan.max(spartan.sum(absa, axis=r), axis=c - (c > r), initial=0)
    elif ord == np.inf:
        out = spartan.max(spartan.sum(absa, axis=c), axis=r - (r > c), initial=0)
    elif ord == -1:
        out = spartan.min(spartan.sum(absa, axis=r), axis=c - (c > r))
    elif ord == -np.inf:
        out = spartan.min(spartan.sum(absa, axis=c), axis=r - (r > c))
    elif ord in (None, "fro", "f"):
        out = _vector_norm(a, tuple(sorted((r, c))), False, 2)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(a.shape)
        shape[r] = shape[c] = 1
        out = out.reshape(tuple(shape))
    return out


def cond(x: Any, p: Any = None) -> Any:
    """Condition number of a matrix or of each matrix of a stack (the 2-norm: the ratio
    of the extreme singular values; other ``p``: ``norm(x) * norm(inv(x))``)."""
    a = _stack(x, "cond")
    if a.size == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = svdvals(a)
        with np.errstate(all="ignore"):
            return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    _square_stack(a, "cond")
    real = np.finfo(_result_dtype(np.linalg.inv, a)).dtype
    out = norm(a, p, axis=(-2, -1)) * norm(inv(a), p, axis=(-2, -1))
    return out.astype(real, copy=False)


def matmul(x1: Any, x2: Any, /) -> Array:
    """``x1 @ x2`` (the array API's signature of :func:`spartan.matmul`)."""
    return _matmul(x1, x2)


def matrix_transpose(x: Any, /) -> Array:
    """The last two axes swapped, of a matrix or of each matrix of a stack (a view).

    >>> sp.linalg.matrix_transpose(sp.ones((2, 3, 4))).shape
    (2, 4, 3)
    """
    return _matrix_transpose(x)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """Dot product of vectors along ``axis`` (conjugating the first argument), NumPy's
    ``(n),(n)->()`` generalized ufunc (see :func:`spartan.vecdot`)."""
    return _vecdot(x1, x2, axis=axis)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """Cross product of 3-vectors along ``axis`` (the array API's: both sizes must be 3).

    >>> sp.linalg.cross(sp.asarray([1, 0, 0]), sp.asarray([0, 1, 0])).to_numpy()
    array([0, 0, 1])
    """
    a, b = asarray(x1), asarray(x2)
    na, nb = (v.shape[axis] if v.ndim else 0 for v in (a, b))
    if na != 3 or nb != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, "
            f"but they are {na} and {nb} dimensional instead."
        )
    return _cross(a, b, axis=axis)


def outer(x1: Any, x2: Any, /) -> Array:
    """Outer product of two vectors (the array API's: both must be 1-d).

    >>> sp.linalg.outer(sp.arange(3), sp.arange(2)).shape
    (3, 2)
    """
    a, b = asarray(x1), asarray(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={a.ndim} and x2.ndim={b.ndim}."
        )
    return _outer(a, b)


def diagonal(x: Any, /, *, offset: int = 0) -> Array:
    """The diagonals of the last two axes (the array API's; ``spartan.diagonal`` takes
    NumPy's first two).

    >>> sp.linalg.diagonal(sp.ones((2, 3, 3))).shape
    (2, 3)
    """
    return _diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sums of the diagonals of the last two axes (the array API's; ``spartan.trace``
    takes NumPy's first two).

    >>> sp.linalg.trace(sp.ones((2, 3, 3))).to_numpy()
    array([3., 3.])
    """
    return _trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Array:
    """Sum products over ``axes`` (the array API's signature of :func:`spartan.tensordot`)."""
    return _tensordot(x1, x2, axes)


def tensorinv(a: Any, ind: int = 2) -> Array:
    """Inverse of an N-d array seen as a matrix (see :func:`numpy.linalg.tensorinv`)."""
    x = asarray(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    rows = int(np.prod(x.shape[:ind]))
    inv_shape = x.shape[ind:] + x.shape[:ind]
    return inv(x.reshape(rows, -1)).reshape(inv_shape)


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Array:
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x``."""
    from spartan.frontend.manipulation import moveaxis

    x, y = asarray(a), asarray(b)
    if axes is not None:
        for k in axes:
            x = moveaxis(x, k, -1)
    shape = x.shape[-(x.ndim - y.ndim) :]
    prod = int(np.prod(shape))
    if int(np.prod(x.shape[: y.ndim])) != prod:
        raise LinAlgError(
            "Input arrays must satisfy the requirement "
            "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    return solve(x.reshape(prod, prod), y.ravel()).reshape(shape)
