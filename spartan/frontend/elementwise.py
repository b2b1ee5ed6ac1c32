"""Element-wise functions that are not ufuncs (``clip``, ``round``, ``nan_to_num``,
``isclose``...): each is one :class:`~spartan.frontend.map.Map`, so it fuses with its
neighbours and moves no data beyond what its operands' tilings require.

>>> sp.clip(x, 1, 4)
array([[1., 1., 2.],
       [3., 4., 4.]])
>>> sp.round(x / 3, 2)
array([[0.  , 0.33, 0.67],
       [1.  , 1.33, 1.67]])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.frontend.aliasing import READ_ONLY, read_only
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.ufuncs import _store, elementwise


def clip(
    a: Any,
    min: Any = None,  # the standard's names (NumPy 2 takes them as keywords too)
    max: Any = None,
    out: Any = None,
    *,
    a_min: Any = None,
    a_max: Any = None,
) -> Array:
    """Limit values to ``[min, max]`` (either bound may be None).

    The bounds are positional, or keywords by the array API standard's names
    (``min=``, ``max=``) or NumPy's (``a_min=``, ``a_max=``), not both.

    >>> sp.clip(sp.arange(5), 1, 3).to_numpy()
    array([1, 1, 2, 3, 3])
    >>> sp.clip(sp.arange(5), a_max=2).to_numpy()
    array([0, 1, 2, 2, 2])
    """
    if (a_min is not None or a_max is not None) and (min is not None or max is not None):
        raise ValueError("clip: pass the bounds as min=/max= or as a_min=/a_max=, not both")
    if min is not None or max is not None:
        a_min, a_max = min, max
    x = asarray(a)
    if a_min is None and a_max is None:
        result = x.copy()
    elif a_min is None:
        result = elementwise(np.minimum, x, a_max, name="clip")
    elif a_max is None:
        result = elementwise(np.maximum, x, a_min, name="clip")
    else:
        result = elementwise(np.clip, x, a_min, a_max, name="clip")
    return _store(result, out)


def round(a: Any, decimals: int = 0, out: Any = None) -> Array:  # noqa: A001
    """Round to ``decimals`` places (half to even, like NumPy)."""
    fn = functools.partial(np.round, decimals=int(decimals))
    return _store(elementwise(fn, asarray(a), name="round"), out)


around = round


def fix(x: Any, out: Any = None) -> Array:
    """Round toward zero."""
    return _store(elementwise(np.fix, asarray(x), name="fix"), out)


def nan_to_num(
    x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None
) -> Array:
    """NaN to ``nan`` and infinities to ``posinf``/``neginf`` (the dtype's extremes)."""
    fn = functools.partial(np.nan_to_num, nan=nan, posinf=posinf, neginf=neginf)
    return elementwise(fn, asarray(x), name="nan_to_num")


#: NumPy's real/imag of a complex array are views; a distributed one's are copies
_PART_COPY = (
    "assignment destination is read-only: the real/imag part of a distributed complex "
    "array is a copy in spartan, not a view; build the new array instead "
    "(x = new_real + 1j * x.imag)"
)


def real(val: Any) -> Array:
    """The real part: the array itself for a real array (NumPy's view), a read-only
    copy for a distributed complex one (small arrays: NumPy's view)."""
    x = asarray(val)
    if x.dtype.kind != "c":
        return x
    return read_only(elementwise(np.real, x, name="real"), _PART_COPY)


def imag(val: Any) -> Array:
    """The imaginary part (read-only: zeros for a real array, as NumPy's)."""
    x = asarray(val)
    return read_only(
        elementwise(np.imag, x, name="imag"), _PART_COPY if x.dtype.kind == "c" else READ_ONLY
    )


def angle(z: Any, deg: bool = False) -> Array:
    return elementwise(functools.partial(np.angle, deg=deg), asarray(z), name="angle")


def isreal(x: Any) -> Array:
    return elementwise(np.isreal, asarray(x), name="isreal")


def iscomplex(x: Any) -> Array:
    return elementwise(np.iscomplex, asarray(x), name="iscomplex")


def isrealobj(x: Any) -> bool:
    return asarray(x).dtype.kind != "c"


def iscomplexobj(x: Any) -> bool:
    return asarray(x).dtype.kind == "c"


def isposinf(x: Any, out: Any = None) -> Array:
    """Whether each element is +inf (see :func:`numpy.isposinf`)."""
    return _store(elementwise(np.isposinf, asarray(x), name="isposinf"), out)


def isneginf(x: Any, out: Any = None) -> Array:
    """Whether each element is -inf (see :func:`numpy.isneginf`)."""
    return _store(elementwise(np.isneginf, asarray(x), name="isneginf"), out)


def sinc(x: Any) -> Array:
    return elementwise(np.sinc, asarray(x), name="sinc")


def real_if_close(a: Any, tol: float = 100) -> Array:
    """The real part when every imaginary part is within ``tol`` machine epsilons
    (one small forced reduction decides the result's dtype)."""
    x = asarray(a)
    if x.dtype.kind != "c":
        return x
    eps = np.finfo(x.dtype).eps * tol if tol > 1 else tol
    from spartan.frontend.reductions import all as _all

    return real(x) if bool(_all(abs(imag(x)) < eps)) else x


def isclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Array:
    """Element-wise ``|a - b| <= atol + rtol * |b|`` (see :func:`numpy.isclose`)."""
    fn = functools.partial(np.isclose, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return elementwise(fn, asarray(a), b, name="isclose")


def allclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """Whether every element is close (forces a one-element result)."""
    from spartan.frontend.reductions import all as _all

    return bool(_all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """Same shape and elements (forces a one-element result)."""
    from spartan.frontend.reductions import all as _all

    x, y = asarray(a1), asarray(a2)
    if x.shape != y.shape:
        return False
    if equal_nan and x.dtype.kind in "fc" and y.dtype.kind in "fc":
        return bool(_all((x == y) | (np.isnan(x) & np.isnan(y))))
    return bool(_all(x == y))


def array_equiv(a1: Any, a2: Any) -> bool:
    """Equal after broadcasting (False when the shapes do not broadcast)."""
    from spartan.frontend.reductions import all as _all

    x, y = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool(_all(x == y))


def i0(x: Any) -> Array:
    """Modified Bessel function of the first kind, order 0."""
    return elementwise(np.i0, asarray(x), name="i0")


class _Piecewise:
    def __init__(self, funclist: list, ncond: int, args: tuple, kw: dict):
        self.funclist, self.ncond, self.args, self.kw = funclist, ncond, args, kw

    def __call__(self, x: np.ndarray, *conds: np.ndarray) -> np.ndarray:
        return np.piecewise(x, list(conds), self.funclist, *self.args, **self.kw)


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Array:
    """Evaluate ``funclist[i]`` where ``condlist[i]`` holds (one map over the tiles)."""
    xx = asarray(x)
    conds = [asarray(c) for c in (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    fn = _Piecewise(list(funclist), n, args, kw)
    return elementwise(fn, xx, *conds, name="piecewise", dtype=xx.dtype)


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Array:
    """Unwrap phase jumps larger than ``discont`` along ``axis`` (a diff, a fused
    correction map and a cumulative sum)."""
    from spartan.frontend.manipulation import concatenate
    from spartan.frontend.reductions import normalize_axes
    from spartan.frontend.scan import cumsum, diff

    x = asarray(p)
    if x.dtype.kind in "biu":
        x = x.astype(np.float64)
    (ax,) = normalize_axes(axis, x.ndim)
    dd = diff(x, axis=ax)
    fn = functools.partial(_unwrap_correction, discont, period)
    corr = elementwise(fn, dd, name="unwrap")
    first = x[tuple(slice(0, 1) if d == ax else slice(None) for d in range(x.ndim))]
    rest = x[tuple(slice(1, None) if d == ax else slice(None) for d in range(x.ndim))]
    return concatenate([first, rest + cumsum(corr, axis=ax)], axis=ax)


def _unwrap_correction(discont: Any, period: float, dd: np.ndarray) -> np.ndarray:
    if discont is None:
        discont = period / 2
    high = period / 2
    low = -high
    ddmod = np.mod(dd - low, period) + low
    ddmod = np.where((ddmod == low) & (dd > 0), high, ddmod)
    corr = ddmod - dd
    return np.where(np.abs(dd) < discont, 0, corr)
