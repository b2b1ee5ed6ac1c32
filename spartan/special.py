"""``spartan.special``: SciPy's ``scipy.special`` element-wise functions on spartan
arrays, computed tile by tile where the tiles live.

With ``SCIPY_ARRAY_API=1``, ``scipy.special.erf(x)`` looks for ``erf`` in
``xp.special`` (``xp`` the namespace of ``x``) before it falls back to converting every
argument to NumPy, which for a spartan array would fetch the whole array into the
driver. This module is that ``xp.special`` for spartan: each ufunc of
``scipy.special`` (``erf``, ``gammaln``, ``xlogy``, ``ndtr``, ``betainc``, ...) is a
lazy element-wise map (NumPy broadcasting and type promotion, fused with neighbouring
element-wise operations); ``polygamma``, ``multigammaln`` and ``zeta`` (not ufuncs) are
maps of SciPy's own functions, and ``sinc`` is :func:`spartan.sinc`. SciPy is imported
on first use only.

>>> import scipy.special                      # with SCIPY_ARRAY_API=1 set before
>>> y = scipy.special.gammaln(x)              # x a spartan array: y one too
>>> y = spartan.special.xlogy(x, x + 1)       # the same, called directly
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.ufuncs import elementwise


def _ufunc(name: str) -> np.ufunc | None:
    import scipy.special

    f = getattr(scipy.special._ufuncs, name, None)
    return f if isinstance(f, np.ufunc) else None


def __getattr__(name: str) -> Any:
    """``scipy.special``'s ufunc ``name``: called on spartan arrays, it dispatches to
    spartan through ``__array_ufunc__`` and runs on the tiles."""
    f = None if name.startswith("_") else _ufunc(name)
    if f is None:
        raise AttributeError(
            f"spartan.special has no {name!r}: only scipy.special's element-wise "
            "functions (its ufuncs, polygamma, multigammaln, zeta and sinc) run on "
            "spartan arrays"
        )
    return f


def __dir__() -> list[str]:
    import scipy.special

    ufuncs = [n for n in dir(scipy.special._ufuncs) if _ufunc(n) is not None]
    return sorted({*ufuncs, "polygamma", "multigammaln", "zeta", "sinc"})


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of the digamma function (see
    :func:`scipy.special.polygamma`), element by element.

    >>> spartan.special.polygamma(1, spartan.asarray([1.0, 2.0]))
    array([1.64493407, 0.64493407])
    """
    import scipy.special

    return elementwise(scipy.special.polygamma, n, x, name="polygamma")


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function, or Riemann's when ``q`` is None (see
    :func:`scipy.special.zeta`), element by element.

    >>> spartan.special.zeta(spartan.asarray([2.0, 4.0]))
    array([1.64493407, 1.08232323])
    """
    import scipy.special

    if q is None:
        return elementwise(scipy.special.zeta, x, name="zeta")
    return elementwise(scipy.special.zeta, x, q, name="zeta")


def sinc(x: Any) -> Any:
    """``sin(pi x) / (pi x)`` (see :func:`numpy.sinc`), element by element."""
    import spartan

    return spartan.sinc(x)


def _multigammaln(a: np.ndarray, d: int) -> np.ndarray:
    import scipy.special

    return scipy.special.multigammaln(a, d)


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d`` (see
    :func:`scipy.special.multigammaln`), element by element.

    Like SciPy it raises ``ValueError`` when an element of ``a`` is at most
    ``(d - 1) / 2``; checking that computes ``a`` (a one-value reduction fetched).

    >>> spartan.special.multigammaln(spartan.asarray([3.0, 4.0]), 2)
    array([1.55019499, 3.56509801])
    """
    if not np.isscalar(d) or int(d) != d or d < 1:
        raise ValueError("d should be a positive integer (dimension)")
    d = int(d)
    if isinstance(a, Array):
        too_small = bool((a <= 0.5 * (d - 1)).any())
    else:
        too_small = bool(np.any(np.asarray(a) <= 0.5 * (d - 1)))
    if too_small:
        raise ValueError(
            f"multigammaln: every element of a must exceed (d - 1) / 2 = {(d - 1) / 2}"
        )
    fn = functools.partial(_multigammaln, d=d)
    # the dtype from a value in the domain (the ones elementwise would probe with are not)
    dtype = fn(np.full(1, d, a.dtype if isinstance(a, Array) else np.asarray(a).dtype)).dtype
    return elementwise(fn, a, name="multigammaln", dtype=dtype)
