"""Printing and inspection functions of NumPy's namespace for spartan arrays:
``array_repr``/``array_str``/``array2string`` fetch only the printed corners,
``asarray_chkfinite`` forces one boolean reduction, memory-sharing questions are
answered from the views' layouts over their shared base.

>>> print(sp.array2string(x, precision=2))
[[0. 1. 2.]
 [3. 4. 5.]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from spartan.frontend.aliasing import layout
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray


def array_repr(
    arr: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None
) -> str:
    from spartan.frontend.printing import array_repr as _repr

    with np.printoptions(**_options(max_line_width, precision, suppress_small)):
        return _repr(asarray(arr))


def array_str(
    a: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None
) -> str:
    from spartan.frontend.printing import array_str as _str

    with np.printoptions(**_options(max_line_width, precision, suppress_small)):
        return _str(asarray(a))


def array2string(
    a: Any,
    max_line_width: Any = None,
    precision: Any = None,
    suppress_small: Any = None,
    separator: str = " ",
    prefix: str = "",
    **kwargs: Any,
) -> str:
    """NumPy's ``array2string`` of the printed part (corners of a big array)."""
    from spartan.frontend.printing import summary

    small, summarized = summary(asarray(a))
    opts = _options(max_line_width, precision, suppress_small)
    if summarized:
        opts["threshold"] = 0
    with np.printoptions(**opts):
        return np.array2string(small, separator=separator, prefix=prefix, **kwargs)


def _options(max_line_width: Any, precision: Any, suppress_small: Any) -> dict[str, Any]:
    opts = {"linewidth": max_line_width, "precision": precision, "suppress": suppress_small}
    return {k: v for k, v in opts.items() if v is not None}


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Array:
    """``asarray`` that raises ValueError if any element is NaN or infinite (forces
    one boolean reduction). ``order`` is accepted for NumPy's sake: tiles are C-ordered.

    >>> sp.asarray_chkfinite([1.0, np.inf])
    Traceback (most recent call last):
    ValueError: array must not contain infs or NaNs
    """
    from spartan.frontend.reductions import all as _all

    if order not in (None, "C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")

    x = asarray(a, dtype=dtype)
    if x.dtype.kind in "fc" and not bool(_all(np.isfinite(x))):
        raise ValueError("array must not contain infs or NaNs")
    return x


def isfortran(a: Any) -> bool:
    """Always False: tiles are C-ordered blocks."""
    asarray(a)
    return False


def _stand_in(x: Array, whole: np.ndarray) -> np.ndarray:
    """A NumPy array with ``x``'s offset, shape and strides over ``whole``, a byte per
    element of its buffer whose memory is never read: NumPy's overlap tests need only
    the layouts."""
    offset, strides = layout(x._buf.expr.shape, x._path)
    return as_strided(whole[offset:], shape=x.shape, strides=strides, writeable=False)


def _overlap(test: Any, a: Any, b: Any, max_work: Any) -> bool:
    if not isinstance(a, Array) and not isinstance(b, Array):
        return bool(test(a, b, max_work=max_work))
    if not isinstance(a, Array) or not isinstance(b, Array):  # a NumPy array or data
        x, other = (a, b) if isinstance(a, Array) else (b, a)
        return x._np is not None and isinstance(other, np.ndarray) and test(x._np, other)
    if a._np is not None or b._np is not None:
        return (
            a._np is not None and b._np is not None and bool(test(a._np, b._np, max_work=max_work))
        )
    if a._buf is not b._buf:
        return False
    size = max(math.prod(a._buf.expr.shape), 1)
    whole = as_strided(np.zeros(1, np.int8), shape=(size,), strides=(1,), writeable=False)
    return bool(test(_stand_in(a, whole), _stand_in(b, whole), max_work=max_work))


def shares_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """Whether ``a`` and ``b`` have an element in common (NumPy's answer: views of one
    base that overlap; a copy shares nothing).

    >>> y = sp.zeros((4, 4), tiling="row")
    >>> sp.shares_memory(y, y[1]), sp.shares_memory(y[0], y[1]), sp.shares_memory(y, y.copy())
    (True, False, False)
    """
    return _overlap(np.shares_memory, a, b, max_work)


def may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """Whether ``a`` and ``b`` might share an element (bounds only, as NumPy checks).

    >>> y = sp.zeros((4, 4), tiling="row")
    >>> sp.may_share_memory(y[:, 0], y[:, 1]), sp.may_share_memory(y, y.T)
    (True, True)
    """
    return _overlap(np.may_share_memory, a, b, max_work)
