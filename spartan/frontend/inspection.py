"""Printing and inspection functions of NumPy's namespace for spartan arrays:
``array_repr``/``array_str``/``array2string`` fetch only the printed corners,
``asarray_chkfinite`` forces one boolean reduction, memory-sharing questions are
answered from the expression graph.

>>> sp.array2string(x, precision=2)          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def asarray_chkfinite(a: Any, dtype: Any = None) -> Array:
    """``asarray`` that raises ValueError if any element is NaN or infinite (forces
    one boolean reduction)."""
    from spartan.frontend.reductions import all as _all

    x = asarray(a, dtype=dtype)
    if x.dtype.kind in "fc" and not bool(_all(np.isfinite(x))):
        raise ValueError("array must not contain infs or NaNs")
    return x


def isfortran(a: Any) -> bool:
    """Always False: tiles are C-ordered blocks."""
    asarray(a)
    return False


def _base(x: Array) -> Any:
    e = x._expr
    return e.base if e.is_view else e


def may_share_memory(a: Any, b: Any, max_work: Any = None) -> bool:
    """Whether two arrays are views of the same node of the expression graph."""
    if not isinstance(a, Array) or not isinstance(b, Array):
        return False
    return _base(a) is _base(b)


shares_memory = may_share_memory
