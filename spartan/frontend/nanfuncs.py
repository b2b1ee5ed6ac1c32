"""The ``nan*`` reductions and scans: NaN-ignoring versions built on the same folds
and scans as their plain counterparts (NaNs are masked by a fused map, or skipped by
``fmin``/``fmax``), so they move exactly as many bytes.

>>> y = sp.where(x > 3, np.nan, x)
>>> sp.nansum(y, axis=0)
array([3., 1., 2.])
>>> float(sp.nanmean(y))
1.5
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
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Sum treating NaN as zero (``initial=``/``where=`` as in :func:`numpy.nansum`)."""
    return sum(_replace_nan(asarray(a), 0), axis, dtype, out, keepdims, initial, where)


def nanprod(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Product treating NaN as one (``initial=``/``where=`` as in :func:`numpy.nanprod`)."""
    from spartan.frontend.reductions import prod

    return prod(_replace_nan(asarray(a), 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(
    uf: np.ufunc, plain: np.ufunc, a: Any, axis: Any, out: Any, keepdims: bool, initial, where
) -> Any:
    x = asarray(a)
    if where is not True and initial is np._NoValue:
        raise ValueError(
            f"reduction operation '{plain.__name__}' does not have an identity, so to use a "
            "where mask one has to specify 'initial'"
        )
    return ufunc_reduce(
        uf if _is_inexact(x) else plain, x, axis, None, out, keepdims, initial, where
    )


def nanmax(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Maximum ignoring NaN (NaN where a slice is all NaN); ``fmax`` skips NaN."""
    return _nan_extreme(np.fmax, np.maximum, a, axis, out, keepdims, initial, where)


def nanmin(
    a: Any,
    axis: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """Minimum ignoring NaN (NaN where a slice is all NaN); ``fmin`` skips NaN."""
    return _nan_extreme(np.fmin, np.minimum, a, axis, out, keepdims, initial, where)


def nanargmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Index of the maximum ignoring NaN (NaN counts as -inf)."""
    x = _replace_nan(asarray(a), -np.inf)
    return _arg(np.argmax, np.greater, "nanargmax", x, axis, out, keepdims)


def nanargmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
    """Index of the minimum ignoring NaN (NaN counts as +inf)."""
    x = _replace_nan(asarray(a), np.inf)
    return _arg(np.argmin, np.less, "nanargmin", x, axis, out, keepdims)


def _count(x: Array, axis: Any, keepdims: bool, where: Any = True) -> Array:
    return sum(~elementwise(np.isnan, x), axis, dtype=np.intp, keepdims=keepdims, where=where)


def nanmean(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    *,
    where: Any = True,
) -> Any:
    """Mean of the non-NaN elements (NaN for an all-NaN slice); ``where=`` leaves
    elements out as NaNs are."""
    x = asarray(a)
    if not _is_inexact(x):
        return mean(x, axis, dtype, out, keepdims, where=where)
    total = nansum(x, axis, dtype=dtype, keepdims=keepdims, where=where)
    with np.errstate(all="ignore"):
        result = elementwise(np.true_divide, total, _count(x, axis, keepdims, where))
    return _out(result.astype(total.dtype), out)


def nanvar(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: float = 0,
    keepdims: bool = False,
    *,
    where: Any = True,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    """Variance of the non-NaN elements (``where=``, ``mean=``, ``correction=`` as in
    :func:`numpy.nanvar`; ``correction`` is the array API's name for ``ddof``)."""
    from spartan.frontend.reductions import var

    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    x = asarray(a)
    if not _is_inexact(x):
        return var(x, axis, dtype, out, ddof, keepdims, where=where, mean=mean)
    axes = normalize_axes(axis, x.ndim)
    m = nanmean(x, axes, dtype=dtype, keepdims=True, where=where) if mean is None else mean
    d = _replace_nan(x - m, 0)
    sq = (d * np.conj(d)).real if x.dtype.kind == "c" else d * d
    total = sum(sq, axes, dtype=dtype, keepdims=keepdims, where=where)
    n = _count(x, axes, keepdims, where) - ddof
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
    *,
    where: Any = True,
    mean: Any = None,
    correction: Any = None,
) -> Any:
    """Standard deviation of the non-NaN elements (keywords as :func:`nanvar`)."""
    v = nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _out(np.sqrt(v), out)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """Cumulative sum treating NaN as zero."""
    return cumsum(_replace_nan(asarray(a), 0), axis, dtype, out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
    """Cumulative product treating NaN as one."""
    return cumprod(_replace_nan(asarray(a), 1), axis, dtype, out)
