"""``spartan.linalg``: NumPy's ``numpy.linalg`` on spartan arrays.

Tall-skinny matrices are factored by TSQR (``qr``, ``svd``, ``lstsq``,
``svd_compressed``) without gathering them; small square problems (``solve``, ``inv``,
``det``, ``cholesky``, ``eigh``...) run as one task on one worker, which receives the
operands whole — never the driver.

>>> q, r = spartan.linalg.qr(x)                             # doctest: +SKIP
>>> u, s, vt = spartan.linalg.svd(x, full_matrices=False)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from spartan.config import config
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.decompositions import blocked_cholesky, dense, solve_dense, stacked, tsqr
from spartan.frontend.linalg import cross as _cross
from spartan.frontend.linalg import diagonal, dot, matmul, outer, tensordot, trace, vdot
from spartan.frontend.linalg import vecdot as _vecdot
from spartan.frontend.manipulation import matrix_transpose

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


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR factorization: TSQR when ``a`` is tall (``m >= 2n``) and of at least
    ``spartan.config.tsqr_min_bytes``, one task otherwise."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    x = _matrix(a, "qr")
    m, n = x.shape
    groups = _tsqr_groups(x)
    if mode in ("reduced", "r") and groups > 1:
        q, r = tsqr(x, groups)
        return r if mode == "r" else QRResult(q, r)
    if mode == "raw":
        raise ValueError("spartan.linalg.qr does not return the raw Householder form")
    k = min(m, n)
    dtype = np.linalg.qr(np.ones((1, 1), x.dtype))[0].dtype
    qcols = m if mode == "complete" else k
    rrows = m if mode == "complete" else k
    packed = dense(
        functools.partial(_qr_packed, mode), [x], (m + rrows, max(qcols, n)), dtype, "qr"
    )
    r = packed[m:, :n]
    if mode == "r":
        return r
    return QRResult(packed[:m, :qcols], r)


def _qr_packed(mode: str, a: np.ndarray) -> np.ndarray:
    q, r = np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    out = np.zeros((q.shape[0] + r.shape[0], max(q.shape[1], r.shape[1])), q.dtype)
    out[: q.shape[0], : q.shape[1]] = q
    out[q.shape[0] :, : r.shape[1]] = r
    return out


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
    """Singular value decomposition. A tall-skinny matrix is reduced by TSQR first
    (``U = Q @ U_R``); ``full_matrices=True`` with ``m != n`` runs as one task."""
    x = _matrix(a, "svd")
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


def svdvals(x: Any) -> Array:
    return svd(x, compute_uv=False)


def svd_compressed(a: Any, k: int, n_power_iter: int = 2, seed: int | None = 0) -> SVDResult:
    """Randomized truncated SVD (Halko et al.): a Gaussian sketch, ``n_power_iter``
    power iterations (re-orthogonalised by ``qr``), then the SVD of the small projection.

    >>> u, s, vt = spartan.linalg.svd_compressed(x, k=10)      # doctest: +SKIP
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


def cholesky(a: Any, *, upper: bool = False, block: int | None = None) -> Array:
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
    dtype = np.result_type(_result_dtype(np.linalg.inv, x), y.dtype, np.float64)
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


def _eig_packed(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(a)
    return np.concatenate([w[None, :], v], axis=0).astype(np.complex128)


def eig(a: Any) -> tuple[Array, Array]:
    """Eigenvalues and right eigenvectors of a small square matrix (complex results)."""
    x = _square(a, "eig")
    n = x.shape[0]
    packed = dense(_eig_packed, [x], (n + 1, n), np.complex128, "eig")
    return packed[0], packed[1:]


def eigvals(a: Any) -> Array:
    x = _square(a, "eigvals")
    return dense(
        lambda b: np.linalg.eigvals(b).astype(np.complex128),
        [x],
        (x.shape[0],),
        np.complex128,
        "eigvals",
    )


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Array, Array, int, Array]:
    """Least squares ``min ||a @ x - b||``: through TSQR for tall ``a``
    (``x = R^-1 Q^T b``), one task otherwise. Returns ``(x, residuals, rank, s)``;
    ``rank`` is a forced integer, as NumPy returns one."""
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
        sol = solve(r, dot(q.T, y.astype(dtype, copy=False)))
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
    return sol, residuals, rank, s


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Array:
    """Pseudo-inverse from the SVD (``V diag(1/s) U^H`` over the significant ``s``)."""
    x = _matrix(a, "pinv")
    u, s, vh = svd(x, full_matrices=False)
    tol = rcond if rcond is not None else (rtol if rtol is not None else 1e-15)
    from spartan.frontend.reductions import max as _max

    big = s > tol * _max(s)
    sinv = np.where(big, 1.0 / np.where(big, s, 1.0), 0.0)
    return dot(vh.conj().T * sinv[None, :], u.conj().T)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Array:
    """Number of singular values above the tolerance."""
    from spartan.frontend.reductions import max as _max
    from spartan.frontend.reductions import sum as _sum

    x = asarray(A)
    if x.ndim < 2:
        return _sum(x != 0).astype(np.intp).reshape(()) if x.ndim else (x != 0).astype(np.intp)
    s = svdvals(x)
    if tol is None:
        r = rtol if rtol is not None else max(x.shape) * np.finfo(s.dtype).eps
        tol = _max(s) * r
    return _sum(s > tol)


def matrix_power(a: Any, n: int) -> Array:
    """``a`` to the integer power ``n`` by repeated squaring (``inv`` for negative n)."""
    x = _square(a, "matrix_power")
    if not isinstance(n, (int, np.integer)):
        raise TypeError("exponent must be an integer")
    if n == 0:
        from spartan.frontend.creation import eye

        return eye(x.shape[0], dtype=x.dtype)
    if n < 0:
        x, n = inv(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else dot(result, base)
        n >>= 1
        if n:
            base = dot(base, base)
    return result


def multi_dot(arrays: Any, *, out: Any = None) -> Array:
    """Chain of products, associated left to right."""
    xs = [asarray(a) for a in arrays]
    if len(xs) < 2:
        raise ValueError("Expecting at least two arrays.")
    result = xs[0]
    for x in xs[1:]:
        result = dot(result, x)
    return result


def vector_norm(x: Any, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """p-norm of the elements over ``axis`` (all of them when None)."""
    import spartan

    a = spartan.asarray(x)
    absa = spartan.abs(a)
    if ord == np.inf:
        return spartan.max(absa, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return spartan.min(absa, axis=axis, keepdims=keepdims)
    if ord == 0:
        return spartan.sum(a != 0, axis=axis, keepdims=keepdims).astype(
            absa.dtype if absa.dtype.kind == "f" else np.float64
        )
    if ord == 1:
        return spartan.sum(absa, axis=axis, keepdims=keepdims)
    if ord == 2:
        sq = (a * np.conj(a)).real if a.dtype.kind == "c" else a * a
        return spartan.sqrt(spartan.sum(sq, axis=axis, keepdims=keepdims))
    return spartan.sum(absa**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector and matrix norms (see :func:`numpy.linalg.norm`)."""
    import spartan

    a = spartan.asarray(x)
    if a.dtype.kind in "biu":
        a = a.astype(np.float64)
    if axis is None and ord is None:
        return vector_norm(a.ravel() if not keepdims else a, None, keepdims)
    if axis is None:
        axis = tuple(range(a.ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return vector_norm(a, axes[0], keepdims, 2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    r, c = (ax % a.ndim for ax in axes)
    if r == c:
        raise ValueError("Duplicate axes given.")
    absa = spartan.abs(a)
    if ord in (None, "fro"):
        return vector_norm(a, (r, c), keepdims, 2)
    if ord == 1:
        out = spartan.max(spartan.sum(absa, axis=r, keepdims=True), axis=c, keepdims=True)
    elif ord == -1:
        out = spartan.min(spartan.sum(absa, axis=r, keepdims=True), axis=c, keepdims=True)
    elif ord == np.inf:
        out = spartan.max(spartan.sum(absa, axis=c, keepdims=True), axis=r, keepdims=True)
    elif ord == -np.inf:
        out = spartan.min(spartan.sum(absa, axis=c, keepdims=True), axis=r, keepdims=True)
    elif ord in (2, -2, "nuc") and a.ndim == 2:
        s = svdvals(a)
        out = spartan.max(s) if ord == 2 else spartan.min(s) if ord == -2 else spartan.sum(s)
        return out.reshape((1, 1)) if keepdims else out
    else:
        raise ValueError("Invalid norm order for matrices.")
    return (
        out
        if keepdims
        else out.reshape(tuple(n for i, n in enumerate(out.shape) if i not in (r, c)))
    )


def cond(x: Any, p: Any = None) -> Any:
    """Condition number (2-norm: ratio of extreme singular values)."""
    if p in (None, 2, -2):
        import spartan

        s = svdvals(x)
        return spartan.max(s) / spartan.min(s) if p != -2 else spartan.min(s) / spartan.max(s)
    return norm(x, p) * norm(inv(x), p)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """Dot product of vectors along ``axis`` (conjugating the first argument)."""
    return _vecdot(x1, x2, axis=axis)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """Cross product of 3-vectors along ``axis``."""
    return _cross(x1, x2, axis=axis)


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
