"""``spartan.linalg``: NumPy's ``numpy.linalg`` on spartan arrays.

>>> spartan.linalg.norm(x)          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.linalg import matmul, outer, tensordot, vdot
from spartan.frontend.manipulation import matrix_transpose

__all__ = ["matmul", "outer", "tensordot", "vdot", "matrix_transpose", "norm"]


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Frobenius / 2-norm (``ord=None``), or the vector p-norm along ``axis``."""
    import spartan

    a = spartan.asarray(x)
    if ord is None or ord == 2 and (axis is not None or a.ndim == 1):
        sq = (a * np.conj(a)).real if a.dtype.kind == "c" else a * a
        return spartan.sqrt(spartan.sum(sq, axis=axis, keepdims=keepdims))
    if ord == 1 and (axis is not None or a.ndim == 1):
        return spartan.sum(spartan.abs(a), axis=axis, keepdims=keepdims)
    if ord == np.inf and (axis is not None or a.ndim == 1):
        return spartan.max(spartan.abs(a), axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and (axis is not None or a.ndim == 1):
        return spartan.sum(spartan.abs(a) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    if ord == "fro":
        return spartan.sqrt(spartan.sum(a * a, axis=axis, keepdims=keepdims))
    raise ValueError(f"spartan.linalg.norm does not support ord={ord!r} for this input")
