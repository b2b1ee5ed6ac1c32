"""``spartan.Array``: the lazy, NumPy-like handle users hold.

Shape and dtype are known without computing; arithmetic builds expression nodes;
``bool``, ``float``, ``repr``, ``np.asarray`` and friends force evaluation. NumPy's
``__array_ufunc__``/``__array_function__`` protocols route ``numpy.exp(x)`` or
``numpy.sum(x)`` here, and anything without a distributed implementation raises
``TypeError`` rather than silently gathering the array.

>>> import spartan as sp
>>> x = sp.arange(6).reshape(2, 3)     # doctest: +SKIP
>>> (x * 2).sum(axis=0)
array([ 6, 10, 14])
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from spartan.frontend.expr import Expr
from spartan.tiling import Tiling


class Array:
    """A distributed n-dimensional array (lazy). Alias: ``spartan.ndarray``."""

    __slots__ = ("_expr", "__weakref__")
    __array_priority__ = 100

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise TypeError("use spartan.array(...) to make an Array from data")
        self._expr = expr
        from spartan.config import config

        if expr.pending > config.max_graph_size:
            # ``pending`` sums over inputs, so shared sub-expressions are counted once per
            # path: an upper bound. Count exactly before forcing an evaluation.
            from spartan.frontend.evaluate import pending_order

            expr.pending = len(pending_order([expr]))
            if expr.pending > config.max_graph_size:
                self.evaluate()

    # ---- metadata (no computation) -----------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._expr.shape

    @property
    def dtype(self) -> np.dtype:
        return self._expr.dtype

    @property
    def ndim(self) -> int:
        return len(self._expr.shape)

    @property
    def size(self) -> int:
        return self._expr.size

    @property
    def itemsize(self) -> int:
        return self._expr.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._expr.nbytes

    @property
    def T(self) -> Array:
        return self.transpose()

    @property
    def mT(self) -> Array:
        return _ns().matrix_transpose(self)

    @property
    def tiling(self) -> Tiling | None:
        """The tiling of an evaluated array (None while it is pending)."""
        e = self._expr
        if e.is_view:
            return e.induced_tiling(e.base.data.tiling) if e.base.data is not None else None
        return e.data.tiling if e.data is not None else None

    @property
    def real(self) -> Array:
        return _ns().real(self)

    @property
    def imag(self) -> Array:
        return _ns().imag(self)

    # ---- forcing ---------------------------------------------------------------------------
    def evaluate(self) -> Array:
        from spartan.frontend.evaluate import evaluate

        evaluate(self._expr)
        return self

    def to_numpy(self) -> np.ndarray:
        """The whole array as a NumPy array on the driver."""
        from spartan.frontend.evaluate import to_numpy

        return to_numpy(self._expr)

    glom = to_numpy

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def item(self, *args: Any) -> Any:
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().item()

    def tolist(self) -> Any:
        return self.to_numpy().tolist()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return operator.index(self._scalar("index"))

    def _scalar(self, kind: str) -> Any:
        if self.ndim != 0:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return self.to_numpy().reshape(()).item()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        from spartan.frontend.printing import array_repr

        return array_repr(self)

    def __str__(self) -> str:
        from spartan.frontend.printing import array_str

        return array_str(self)

    def _repr_html_(self) -> str:
        from spartan.frontend.printing import array_html

        return array_html(self)

    # ---- NumPy protocols ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        from spartan.frontend import ufuncs

        return ufuncs.dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        impl = _ns().numpy_function(func)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        import spartan

        return spartan

    # ---- methods ---------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Array:
        from spartan.frontend import indexing

        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        from spartan.frontend import indexing

        self._expr = indexing.setitem(self, key, value)._expr

    def copy(self) -> Array:
        return _ns().copy(self)

    def astype(self, dtype: Any, copy: bool = True) -> Array:
        return _ns().astype(self, dtype)

    def reshape(self, *shape: Any, order: str = "C") -> Array:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ns().reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> Array:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ns().transpose(self, axes or None)

    def retile(self, tiling: Any) -> Array:
        return _ns().retile(self, tiling)


def _ns():  # the namespace is built after this class (it imports it)
    import spartan

    return spartan


def _method(name: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(_ns(), name)(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"See :func:`spartan.{name}`."
    return method


for _name in (
    "sum prod mean std var min max argmin argmax all any cumsum cumprod ravel flatten "
    "swapaxes squeeze dot clip round conj conjugate nonzero argsort ptp repeat "
    "take trace diagonal fill_diagonal searchsorted compress choose argpartition put"
).split():
    setattr(Array, _name, _method(_name))


def _in_place(name: str):
    """NumPy's in-place methods (``x.sort()``): rebind this handle, return None."""

    def method(self: Array, *args: Any, **kwargs: Any) -> None:
        self._expr = getattr(_ns(), name)(self, *args, **kwargs)._expr

    method.__name__ = name
    method.__doc__ = f"In place, like ``numpy.ndarray.{name}`` (see :func:`spartan.{name}`)."
    return method


Array.sort = _in_place("sort")
Array.partition = _in_place("partition")


def _fill(self: Array, value: Any) -> None:
    """Set every element to ``value`` (rebinds this handle, like ``ndarray.fill``)."""
    self._expr = _ns().full_like(self, value)._expr


Array.fill = _fill


def _binary(op: str, reflected: bool = False):
    def method(self: Array, other: Any) -> Any:
        from spartan.frontend import ufuncs

        uf = getattr(np, op)
        try:
            return ufuncs.apply(uf, (other, self) if reflected else (self, other))
        except ufuncs.Unsupported:
            return NotImplemented

    return method


for _dunder, _uf in {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "true_divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "left_shift",
    "rshift": "right_shift",
}.items():
    setattr(Array, f"__{_dunder}__", _binary(_uf))
    setattr(Array, f"__r{_dunder}__", _binary(_uf, reflected=True))
    setattr(Array, f"__i{_dunder}__", _binary(_uf))  # functional: rebinds the name
for _dunder, _uf in {
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "eq": "equal",
    "ne": "not_equal",
}.items():
    setattr(Array, f"__{_dunder}__", _binary(_uf))
Array.__hash__ = None  # type: ignore[assignment]


def _unary(op: str):
    def method(self: Array) -> Array:
        return getattr(np, op)(self)

    return method


Array.__neg__ = _unary("negative")
Array.__pos__ = _unary("positive")
Array.__abs__ = _unary("absolute")
Array.__invert__ = _unary("invert")
Array.__divmod__ = lambda self, other: np.divmod(self, other)
Array.__rdivmod__ = lambda self, other: np.divmod(other, self)

ndarray = Array
