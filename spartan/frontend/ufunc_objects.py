"""``spartan.add``, ``spartan.exp``...: NumPy's ufuncs, lazily over spartan arrays.

>>> sp.add(x, 1); sp.add.reduce(x, axis=0); sp.add.accumulate(x)   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.ufuncs import apply


class UFunc:
    """A NumPy ufunc whose calls, ``reduce`` and ``accumulate`` build spartan nodes."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__doc__ = ufunc.__doc__

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ufunc, name)  # nin, nout, identity, types...

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return apply(self.ufunc, args, **kwargs)

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

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        from spartan.frontend.scan import ufunc_accumulate

        return ufunc_accumulate(self.ufunc, a, axis, dtype, out)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        """``ufunc.at`` on a spartan array (rebinds ``a`` to the updated array)."""
        from spartan.frontend.array import Array
        from spartan.frontend.fancy import ufunc_at

        if not isinstance(a, Array):
            raise TypeError("ufunc.at needs a spartan array to update")
        a._expr = ufunc_at(self.ufunc, a, indices, b)._expr

    def outer(self, a: Any, b: Any, **kwargs: Any) -> Any:
        from spartan.frontend.creation import asarray

        x, y = asarray(a), asarray(b)
        return self(x.reshape(x.shape + (1,) * y.ndim), y, **kwargs)

    def __repr__(self) -> str:
        return f"<spartan ufunc '{self.__name__}'>"


def all_ufuncs() -> dict[str, UFunc]:
    """Every element-wise ufunc in NumPy's namespace (aliases included), wrapped.

    Generalized ufuncs (``vecdot``, ``matvec``...) are not element-wise: they have
    their own implementations (``matmul`` dispatches to :func:`~spartan.frontend.linalg.matmul`).
    """
    return {
        name: UFunc(obj)
        for name in dir(np)
        if not name.startswith("_")
        and isinstance(obj := getattr(np, name), np.ufunc)
        and (obj.signature is None or obj is np.matmul)
    }


def frompyfunc(func: Any, nin: int, nout: int, *, identity: Any = None) -> UFunc:
    """A spartan ufunc (object results) from a Python function, applied tile by tile."""
    kwargs = {} if identity is None else {"identity": identity}
    return UFunc(np.frompyfunc(func, nin, nout, **kwargs))
