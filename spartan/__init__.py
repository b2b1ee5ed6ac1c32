"""Spartan: distributed NumPy on Ray with automatic tiling.

>>> import spartan as np
>>> x = np.random.rand(1000, 10)
>>> float((x * 2).sum())                      # doctest: +SKIP

Arrays are lazy; operations build an expression graph that is tiled, fused and run
on the workers when a result is needed. Start workers with :func:`init` (or let the
first evaluation start a local Ray instance).
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from spartan import backend
from spartan.backend.session import init, shutdown
from spartan.config import config
from spartan.frontend import random
from spartan.frontend.array import Array, ndarray
from spartan.frontend.creation import (
    arange,
    array,
    asarray,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from spartan.frontend.evaluate import evaluate as _evaluate
from spartan.frontend.indexing import nonzero
from spartan.frontend.linalg import dot, inner, matmul, outer, tensordot, vdot
from spartan.frontend.manipulation import (
    astype,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    copy,
    expand_dims,
    flatten,
    hstack,
    matrix_transpose,
    moveaxis,
    ravel,
    reshape,
    retile,
    squeeze,
    stack,
    swapaxes,
    transpose,
    vstack,
    where,
)
from spartan.frontend.operators import filter, fold, join_update, map, newarray, scan, slice
from spartan.frontend.reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    ptp,
    std,
    sum,
    var,
)
from spartan.frontend.scan import cumprod, cumsum
from spartan.frontend.ufunc_objects import all_ufuncs as _all_ufuncs
from spartan.tiling import Tiling

globals().update(_all_ufuncs())

# NumPy's scalar types and constants, so `import spartan as np` code keeps working
for _name in (
    "float16 float32 float64 complex64 complex128 int8 int16 int32 int64 uint8 uint16 uint32 "
    "uint64 bool_ intp uintp dtype finfo iinfo newaxis pi e inf nan euler_gamma "
    "result_type can_cast promote_types issubdtype integer floating number generic "
    "complexfloating signedinteger unsignedinteger errstate"
).split():
    globals()[_name] = getattr(_np, _name)
bool = _np.bool_  # noqa: A001


def evaluate(*arrays: Array) -> Array | tuple[Array, ...]:
    """Compute ``arrays`` now (together, sharing common work) and keep the results.

    >>> a, b = spartan.evaluate(x + 1, x * 2)     # doctest: +SKIP
    """
    _evaluate(*(a._expr for a in arrays))
    return arrays[0] if len(arrays) == 1 else arrays


def stats() -> dict[str, Any]:
    """Worker counters since :func:`reset_stats`: tasks, bytes moved between workers
    (and between nodes), bytes pulled to and pushed from the driver."""
    return backend.current().stats().as_dict()


def reset_stats() -> None:
    backend.current().reset_stats()


def numpy_function(func: Any) -> Any:
    """The spartan implementation of a NumPy function (for ``__array_function__``)."""
    name = getattr(func, "__name__", None)
    module = getattr(func, "__module__", "") or ""
    if module.startswith("numpy.linalg"):
        from spartan import linalg as _linalg

        return getattr(_linalg, name, None)
    if module.startswith(("numpy.fft", "numpy.random", "numpy.ma", "numpy.polynomial")):
        return None
    impl = globals().get(name)
    return impl if callable(impl) and not isinstance(impl, type) else None


def __dir__() -> list[str]:
    return sorted(n for n in globals() if not n.startswith("_"))
