"""Matrix decompositions on ``join_update``: TSQR for tall-skinny matrices, and one
task on one worker for small square problems.

TSQR (tall-skinny QR): ``G`` row groups each compute a local ``R_g`` (only the
``n x n`` factors travel), one task factors the stacked ``R``'s into ``Q2, R``, and each
group forms its rows of ``Q = Q_g @ Q2_g`` where it lives (recomputing ``Q_g`` rather
than storing it). Communication: ``G * n * n`` itemsize bytes to one worker and
``Q2`` (``G * n * n``) back to every group — independent of the row count.

>>> q, r = spartan.linalg.qr(tall)          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

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


class _LocalR:
    def __init__(self, m: int, n: int, groups: int):
        self.m, self.n, self.groups = m, n, groups

    def __call__(self, extents, block: np.ndarray):
        g = _group_of(extents[0].box[0][0], self.m, self.groups)
        r = np.linalg.qr(block, mode="r")
        return [((slice(g * self.n, (g + 1) * self.n),), r)]


def _stacked_qr(n: int, rs: np.ndarray) -> np.ndarray:
    q2, r = np.linalg.qr(rs)
    return np.concatenate([q2, r], axis=0)


class _LocalQ:
    def __init__(self, m: int, n: int, groups: int):
        self.m, self.n, self.groups = m, n, groups

    def __call__(self, extents, block: np.ndarray, packed: np.ndarray):
        g = _group_of(extents[0].box[0][0], self.m, self.groups)
        q = np.linalg.qr(block)[0]
        return [(extents[0].rows, q @ packed[g * self.n : (g + 1) * self.n])]


def tsqr(a: Array, groups: int) -> tuple[Array, Array]:
    """Reduced QR of a tall-skinny ``a`` (``m >= groups * n``) with ``groups`` row groups."""
    m, n = a.shape
    dtype = np.linalg.qr(np.ones((1, 1), a.dtype))[0].dtype
    rs = Array(
        JoinUpdate(
            _LocalR(m, n, groups),
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
            _LocalQ(m, n, groups),
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
