"""Matrix decompositions on ``join_update``: TSQR for tall-skinny matrices, and one
task on one worker for small square problems.

TSQR (tall-skinny QR): ``G`` row groups each compute a local ``R_g`` (only the
``n x n`` factors travel), one task factors the stacked ``R``'s into ``Q2, R``, and each
group forms its rows of ``Q = Q_g @ Q2_g`` where it lives (recomputing ``Q_g`` rather
than storing it). Communication: ``G * n * n`` itemsize bytes to one worker and
``Q2`` (``G * n * n``) back to every group — independent of the row count.

>>> q, r = spartan.linalg.qr(spartan.random.rand(1000, 4))
>>> q.shape, r.shape
((1000, 4), (4, 4))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.array import Array
from spartan.frontend.join_update import JoinUpdate


class _Dense:
    """``f_join`` of :func:`dense`: the whole inputs through ``fn`` on one worker."""

    def __init__(self, fn: Callable[..., np.ndarray], shape: tuple[int, ...]):
        self.fn, self.shape = fn, shape

    def __call__(self, extents, *blocks: np.ndarray):
        return [((), np.asarray(self.fn(*blocks)).reshape(self.shape))]


def dense(
    fn: Callable[..., np.ndarray],
    inputs: Sequence[Array],
    shape: Sequence[int],
    dtype: Any,
    name: str,
) -> Array:
    """``fn(*inputs)`` computed by one task on one worker (for small operands).

    Communication: every input, whole, to that worker (``sum(nbytes)``), once.
    """
    shape = tuple(shape)
    # a 0-d result travels as one element (join_update locations need an axis)
    out_shape = shape or (1,)
    expr = JoinUpdate(
        _Dense(fn, out_shape),
        None,
        [x._expr for x in inputs],
        [-1] * len(inputs),
        out_shape,
        dtype,
        groups=1,
        name=name,
    )
    return Array(expr) if shape else Array(expr).reshape(())


def _group_of(lo: int, m: int, groups: int) -> int:
    g = lo * groups // max(m, 1)
    while g + 1 < groups and (g + 1) * m // groups <= lo:
        g += 1
    while g > 0 and g * m // groups > lo:
        g -= 1
    return g


def _local_qr(block: Any, dtype: Any, want_q: bool = True) -> Any:
    """The reduced QR ``(Q, R)`` of one group's rows in ``dtype`` (NumPy's: float64 for
    integers, where SciPy would take float32 for small ones), or ``R`` alone. Both TSQR
    passes factor with the same LAPACK call, so the ``Q_g`` of the second pass matches
    the ``R_g`` of the first; ``R`` alone skips forming ``Q`` (50,000 x 20: 3.7 ms, not
    6.2). LAPACK factors a column-major copy in place: made by NumPy it takes 0.7 ms,
    where SciPy's own conversion of a row-major block took 6 of the 13 ms of the QR."""
    xp = array_module(block)
    if xp is not np:
        block = block.astype(dtype, copy=False)
        return xp.linalg.qr(block) if want_q else xp.linalg.qr(block, mode="r")
    import scipy.linalg

    mine = np.array(block, dtype=dtype, order="F")  # a copy LAPACK may overwrite
    if want_q:
        return scipy.linalg.qr(mine, mode="economic", check_finite=False, overwrite_a=True)
    # "raw": the Householder form and R, without forming Q
    return scipy.linalg.qr(mine, mode="raw", check_finite=False, overwrite_a=True)[1]


class _LocalR:
    def __init__(self, m: int, n: int, groups: int, dtype: Any):
        self.m, self.n, self.groups, self.dtype = m, n, groups, dtype

    def __call__(self, extents, block: np.ndarray):
        g = _group_of(extents[0].box[0][0], self.m, self.groups)
        r = _local_qr(block, self.dtype, want_q=False)
        return [((slice(g * self.n, (g + 1) * self.n),), r)]


def _stacked_qr(n: int, rs: np.ndarray) -> np.ndarray:
    q2, r = np.linalg.qr(rs)
    return np.concatenate([q2, r], axis=0)


class _LocalQ:
    def __init__(self, m: int, n: int, groups: int, dtype: Any):
        self.m, self.n, self.groups, self.dtype = m, n, groups, dtype

    def __call__(self, extents, block: np.ndarray, packed: np.ndarray):
        g = _group_of(extents[0].box[0][0], self.m, self.groups)
        q = _local_qr(block, self.dtype)[0]
        return [(extents[0].rows, q @ packed[g * self.n : (g + 1) * self.n])]


def tsqr(a: Array, groups: int) -> tuple[Array, Array]:
    """Reduced QR of a tall-skinny ``a`` (``m >= groups * n``) with ``groups`` row groups."""
    m, n = a.shape
    dtype = np.linalg.qr(np.ones((1, 1), a.dtype))[0].dtype
    rs = Array(
        JoinUpdate(
            _LocalR(m, n, groups, dtype),
            None,
            [a._expr],
            [0],
            (groups * n, n),
            dtype,
            groups=groups,
            name="tsqr_r",
        )
    )
    import functools

    packed = dense(
        functools.partial(_stacked_qr, n), [rs], ((groups + 1) * n, n), dtype, "tsqr_combine"
    )
    q = Array(
        JoinUpdate(
            _LocalQ(m, n, groups, dtype),
            None,
            [a._expr, packed._expr],
            [0, -1],
            (m, n),
            dtype,
            groups=groups,
            name="tsqr_q",
        )
    )
    return q, packed[groups * n :]


class _PanelSolve:
    """``f_join``: rows of a panel times ``L_kk^-H`` (a triangular solve per group)."""

    def __call__(self, extents, panel: np.ndarray, lkk: np.ndarray):
        sol = _solve_triangular(lkk, panel.conj().T, lower=True).conj().T
        return [(extents[0].rows, sol)]


def _solve_triangular(a: Any, b: Any, lower: bool) -> Any:
    """``solve(a, b)`` by substitution for a triangular ``a`` (``n^2`` work, not LU's
    ``n^3``); a zero on the diagonal is NumPy's singular-matrix error."""
    xp = array_module(a)
    if not xp.all(xp.diagonal(a)):
        raise np.linalg.LinAlgError("Singular matrix")
    if xp is np:
        import scipy.linalg

        return scipy.linalg.solve_triangular(a, b, lower=lower, check_finite=False)
    import cupyx.scipy.linalg

    return cupyx.scipy.linalg.solve_triangular(a, b, lower=lower)


def _zero_above_diagonal(a: Any, step: int = 256) -> bool:
    """Whether the strict upper triangle of square ``a`` is all zero, scanned a slab of
    rows at a time: a general matrix fails at the first slab."""
    xp = array_module(a)
    n = a.shape[0]
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        if a[i0:i1, i1:].any() or xp.triu(a[i0:i1, i0:i1], 1).any():
            return False
    return True


#: smaller systems are solved by LU without looking for a triangle
TRIANGULAR_CHECK_MIN = 64


def solve_dense(a: Any, b: Any) -> Any:
    """:func:`numpy.linalg.solve` for one square ``a``, but a triangular ``a`` (a
    Cholesky factor, or its transpose) is solved by substitution, as MATLAB's
    backslash does: the same solution, ``n`` times less work."""
    if a.ndim == 2 and a.shape[0] >= TRIANGULAR_CHECK_MIN:
        for lower, m in ((True, a), (False, a.T)):
            if _zero_above_diagonal(m):
                return _solve_triangular(a, b, lower)
    return np.linalg.solve(a, b)


def blocked_cholesky(a: Array, block: int) -> Array:
    """Right-looking blocked Cholesky: per block column, factor the diagonal block
    (one task), solve the panel below it by row groups, and update the trailing matrix
    with one ``dot``; the factor is assembled from the blocks.

    Communication per block column ``k`` (``b`` wide, ``r`` rows below): the
    ``b x b`` diagonal block to one worker and to every panel group, and the trailing
    update ``r x r`` from the panel product.
    """
    from spartan.frontend.creation import zeros
    from spartan.frontend.manipulation import concatenate
    from spartan.frontend.products import dot

    n = a.shape[0]
    dtype = np.linalg.cholesky(np.eye(1, dtype=a.dtype)).dtype
    work = a.astype(dtype)  # the trailing matrix still to factor
    columns = []
    for k0 in range(0, n, block):
        k1 = min(k0 + block, n)
        b = k1 - k0
        lkk = dense(np.linalg.cholesky, [work[:b, :b]], (b, b), dtype, "cholesky_block")
        parts = [zeros((k0, b), dtype=dtype)] if k0 else []
        parts.append(lkk)
        if k1 < n:
            panel = Array(
                JoinUpdate(
                    _PanelSolve(),
                    None,
                    [work[b:, :b]._expr, lkk._expr],
                    [0, -1],
                    (n - k1, b),
                    dtype,
                    name="cholesky_panel",
                )
            )
            parts.append(panel)
            work = work[b:, b:] - dot(panel, panel.conj().T if dtype.kind == "c" else panel.T)
        columns.append(concatenate(parts, axis=0) if len(parts) > 1 else parts[0])
    return concatenate(columns, axis=1) if len(columns) > 1 else columns[0]


class _PerMatrix:
    """``f_join``: NumPy's linear-algebra function on a group of stacked matrices."""

    def __init__(self, fn: Callable[..., np.ndarray], vector_rhs: bool):
        self.fn, self.vector_rhs = fn, vector_rhs

    def __call__(self, extents, *blocks: np.ndarray):
        if self.vector_rhs:  # b is a stack of vectors: solve for a column each
            out = self.fn(blocks[0], blocks[1][..., None])[..., 0]
        else:
            out = self.fn(*blocks)
        return [(extents[0].rows, out)]


def stacked(
    fn: Callable[..., np.ndarray],
    inputs: Sequence[Array],
    shape: Sequence[int],
    dtype: Any,
    name: str,
    vector_rhs: bool = False,
) -> Array:
    """``fn`` on stacks of small matrices, in groups along the first batch axis (every
    input has the same batch shape). Communication: none when the inputs are cut along
    that axis alike; otherwise each group reads its slices once."""
    task = _PerMatrix(fn, vector_rhs)
    expr = JoinUpdate(
        task, None, [x._expr for x in inputs], [0] * len(inputs), tuple(shape), dtype, name=name
    )
    return Array(expr)
