"""``spartan.add``, ``spartan.exp``...: NumPy's ufuncs, lazily over spartan arrays.

>>> sp.add(x, 1)
array([[1., 2., 3.],
       [4., 5., 6.]])
>>> sp.add.reduce(x, axis=0)
array([3., 5., 7.])
>>> sp.subtract.outer(sp.arange(3), [1, 10]).shape
(3, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend import small
from spartan.frontend.ufuncs import apply


class UFunc:
    """A NumPy ufunc whose calls and methods (``reduce``, ``accumulate``, ``reduceat``,
    ``outer``, ``at``) build spartan nodes, with NumPy's signatures."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__doc__ = ufunc.__doc__

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ufunc, name)  # nin, nout, identity, types...

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = small.call(self.ufunc, args, kwargs)
        return apply(self.ufunc, args, **kwargs) if out is small.NO else out

    def reduce(
        self,
        a: Any,
        axis: Any = 0,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        **kw: Any,
    ) -> Any:
        from spartan.frontend.reductions import ufunc_reduce

        return ufunc_reduce(self.ufunc, a, axis, dtype, out, keepdims, **kw)

    def accumulate(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
        """``ufunc.accumulate`` (see :func:`~spartan.frontend.scan.ufunc_accumulate`).

        >>> sp.subtract.accumulate(sp.arange(4)).to_numpy()
        array([ 0, -1, -3, -6])
        """
        from spartan.frontend.scan import ufunc_accumulate

        return ufunc_accumulate(self.ufunc, array, axis, dtype, out)

    def reduceat(
        self, array: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None
    ) -> Any:
        """``ufunc.reduceat`` (see :func:`~spartan.frontend.reductions.ufunc_reduceat`).

        >>> sp.add.reduceat(sp.arange(8), [0, 4, 5]).to_numpy()
        array([ 6,  4, 18])
        """
        from spartan.frontend.reductions import ufunc_reduceat

        return ufunc_reduceat(self.ufunc, array, indices, axis, dtype, out)

    def at(self, a: Any, indices: Any, b: Any = None, /) -> None:
        """``ufunc.at`` on a spartan array (rebinds ``a`` to the updated array).

        >>> a = sp.zeros(4)
        >>> sp.add.at(a, [0, 0, 2], 1)
        >>> a
        array([2., 0., 1., 0.])
        """
        from spartan.frontend.ufuncs import ufunc_at

        ufunc_at(self.ufunc, a, indices, b)

    def outer(self, A: Any, B: Any, /, **kwargs: Any) -> Any:
        """``ufunc.outer``: ``self(A[i...], B[j...])``, of shape ``A.shape + B.shape``.

        >>> sp.multiply.outer(sp.arange(3), [1, 10]).shape
        (3, 2)
        """
        from spartan.frontend.ufuncs import outer_operands

        operands = outer_operands(self.ufunc, A, B, "out" in kwargs)
        if operands is None:
            return self.ufunc.outer(A, B, **kwargs)  # two scalars: NumPy's own scalar
        return self(*operands, **kwargs)

    def __repr__(self) -> str:
        return f"<spartan ufunc '{self.__name__}'>"


def _small_first(name: str) -> None:
    """``UFunc.name`` runs NumPy's ``ufunc.name`` when its spartan arrays are all small."""
    distributed = getattr(UFunc, name)

    def method(self: UFunc, *args: Any, **kwargs: Any) -> Any:
        out = small.call(getattr(self.ufunc, name), args, kwargs)
        return distributed(self, *args, **kwargs) if out is small.NO else out

    method.__name__, method.__doc__ = name, distributed.__doc__
    setattr(UFunc, name, method)


for _name in ("reduce", "accumulate", "reduceat", "at"):
    _small_first(_name)


def all_ufuncs() -> dict[str, UFunc]:
    """Every element-wise ufunc in NumPy's namespace (aliases included), wrapped.

    Generalized ufuncs (``vecdot``, ``matvec``...) are not element-wise: they have
    their own implementations (``matmul`` dispatches to :func:`~spartan.frontend.products.matmul`).
    """
    return {
        name: UFunc(obj)
        for name in dir(np)
        if not name.startswith("_")
        and isinstance(obj := getattr(np, name), np.ufunc)
        and (obj.signature is None or obj is np.matmul)
    }


class PyUfunc:
    """``np.frompyfunc(func, nin, nout)`` that pickles: NumPy's ufunc made from a Python
    function does not (it pickles by a name that names nothing), so this object travels
    to the workers as ``(func, nin, nout, identity)`` and makes the ufunc again where it
    runs. ``func`` pickles as any task function: a builtin (``math.hypot``) or a module's
    function by reference, a lambda or a local function by value (cloudpickle).

    It is called and used as the ufunc it stands for (``reduce``, ``accumulate``,
    ``outer``, ``nin``, ``identity``... are the ufunc's own).
    """

    def __init__(self, func: Any, nin: int, nout: int, identity: Any = None) -> None:
        self.func, self.nin, self.nout, self.identity = func, nin, nout, identity
        self._ufunc: np.ufunc | None = None

    @property
    def ufunc(self) -> np.ufunc:
        if self._ufunc is None:
            kwargs = {} if self.identity is None else {"identity": self.identity}
            self._ufunc = np.frompyfunc(self.func, self.nin, self.nout, **kwargs)
        return self._ufunc

    def __reduce__(self) -> tuple:
        return (PyUfunc, (self.func, self.nin, self.nout, self.identity))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.ufunc(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_ufunc":
            raise AttributeError(name)
        return getattr(self.ufunc, name)  # reduce, accumulate, outer, at, types...

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return self.ufunc.__name__

    def __repr__(self) -> str:
        return repr(self.ufunc)


def frompyfunc(func: Any, nin: int, nout: int, *, identity: Any = None) -> UFunc:
    """A spartan ufunc (object results) from a Python function, applied tile by tile on
    the workers (also on Ray's: see :class:`PyUfunc`).

    >>> import math
    >>> hypot = sp.frompyfunc(math.hypot, 2, 1)
    >>> hypot(sp.asarray([3.0]), 4.0).to_numpy()
    array([5.0], dtype=object)
    """
    made = PyUfunc(func, nin, nout, identity)
    made.ufunc  # noqa: B018  (NumPy's errors for a bad nin/nout/identity, here and now)
    out = UFunc(made)  # type: ignore[arg-type]
    out.__doc__ = made.ufunc.__doc__
    return out
