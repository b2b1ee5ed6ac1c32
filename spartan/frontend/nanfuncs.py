"""The ``nan*`` reductions and scans: NaN-ignoring versions built on the same folds
and scans as their plain counterparts (NaNs are masked by a fused map, or skipped by
``fmin``/``fmax``), so they move exactly as many bytes.

>>> sp.nansum(x, axis=0); sp.nanmean(x); sp.nancumsum(x)     # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.reductions import _arg, _out, mean, normalize_axes, sum, ufunc_reduce
from spartan.frontend.scan import cumprod, cumsum
from spartan.frontend.ufuncs import elementwise


def _is_inexact(x: Array) -> bool:
    return x.dtype.kind in "fc"


def _replace_nan(x: Array, value: Any) -> Array:
    if not _is_inexact(x):
        return x
    return elementwise(
        np.where, elementwise(np.isnan, x), np.array(value, x.dtype)[()], x, name="replace_nan"
    )


def nansum(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Any:
    """Sum treating NaN as zero."""
    return sum(_replace_nan(asarray(a), 0), axis, dtype, out, keepdims)


def nanprod(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Any:
    """Product treating NaN as one."""
    from spartan.frontend.reductions import prod

    return prod(_replace_nan(asarray(a), 1), axis, dtype, out, keepdims)


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Maximum ignoring NaN (NaN where a slice is all NaN); ``fmax`` skips NaN."""
    x = asarray(a)
    uf = np.fmax if _is_inexact(x) else np.maximum
    return ufunc_reduce(uf, x, axis, None, out, keepdims)


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Minimum ignoring NaN (NaN where a slice is all NaN); ``fmin`` skips NaN."""
    x = asarray(a)
    uf = np.fmin if _is_inexact(x) else np.minimum
    return ufunc_reduce(uf, x, axis, None, out, keepdims)


def nanargmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Index of the maximum ignoring NaN (NaN counts as -inf)."""
    x = _replace_nan(asarray(a), -np.inf)
    return _arg(np.argmax, np.greater, "nanargmax", x, axis, out, keepdims)


def nanargmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Index of the minimum ignoring NaN (NaN counts as +inf)."""
    x = _replace_nan(asarray(a), np.inf)
    return _arg(np.argmin, np.less, "nanargmin", x, axis, out, keepdims)


def _count(x: Array, axis: Any, keepdims: bool) -> Array:
    return sum(~elementwise(np.isnan, x), axis, dtype=np.intp, keepdims=keepdims)


def nanmean(
    a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False
) -> Any:
    """Mean of the non-NaN elements (NaN for an all-NaN slice)."""
    x = asarray(a)
    if not _is_inexact(x):
        return mean(x, axis, dtype, out, keepdims)
    total = nansum(x, axis, dtype=dtype, keepdims=keepdims)
    with np.errstate(all="ignore"):
        result = elementwise(np.true_divide, total, _count(x, axis, keepdims))
    return _out(result.astype(total.dtype), out)


def nanvar(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
) -> Any:
    """Variance of the non-NaN elements."""
    from spartan.frontend.reductions import var

    x = asarray(a)
    if not _is_inexact(x):
        return var(x, axis, dtype, out, ddof, keepdims)
    axes = normalize_axes(axis, x.ndim)
    m = nanmean(x, axes, dtype=dtype, keepdims=True)
    d = _replace_nan(x - m, 0)
    sq = (d * np.conj(d)).real if x.dtype.kind == "c" else d * d
    total = sum(sq, axes, dtype=dtype, keepdims=keepdims)
    n = _count(x, axes, keepdims) - ddof
    with np.errstate(all="ignore"):
        result = elementwise(np.true_divide, total, elementwise(np.maximum, n, 0), name="nanvar")
    return _out(result.astype(total.dtype), out)


def nanstd(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
) -> Any:
    """Standard deviation of the non-NaN elements."""
    return _out(np.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims)), out)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """Cumulative sum treating NaN as zero."""
    return cumsum(_replace_nan(asarray(a), 0), axis, dtype, out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """Cumulative product treating NaN as one."""
    return cumprod(_replace_nan(asarray(a), 1), axis, dtype, out)
