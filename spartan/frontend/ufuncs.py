"""NumPy ufuncs on spartan arrays: each call is an element-wise :class:`Map`.

Shapes follow NumPy broadcasting and dtypes NumPy's promotion (found by calling the
ufunc on one-element probes, so NEP 50 scalar rules hold); errors are raised here,
when the expression is built.

>>> np.exp(x) + 1          # doctest: +SKIP   (x a spartan.Array: a fused map)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.frontend.expr import Expr
from spartan.frontend.map import Map
from spartan.frontend.source import FromNumpy
from spartan.frontend.view import transpose


class Unsupported(TypeError):
    """An operand spartan cannot take part in (the caller may return NotImplemented)."""


def as_operand(value: Any) -> Any:
    """An :class:`Expr` for array-like values; Python and NumPy scalars stay constants."""
    from spartan.frontend.array import Array

    if isinstance(value, Array):
        return value._expr
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return value
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        return arr[()] if arr.ndim == 0 else FromNumpy(arr)
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return as_operand(np.asarray(value))
    raise Unsupported(f"unsupported operand type {type(value).__name__!r}")


def probe(fn: Any, operands: list[Any]) -> np.ndarray:
    """``fn`` on one-element stand-ins of the operands: gives the result dtype, and
    raises NumPy's own error for operands the function cannot take."""
    stand_ins = [np.ones(1, o.dtype) if isinstance(o, Expr) else o for o in operands]
    with np.errstate(all="ignore"):
        return fn(*stand_ins)


def result_shape(operands: list[Any]) -> tuple[int, ...]:
    shapes = [o.shape for o in operands if isinstance(o, Expr)]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            "operands could not be broadcast together with shapes "
            + " ".join(str(tuple(s)).replace(" ", "") for s in shapes)
        ) from None


def elementwise(fn: Any, *args: Any, name: str | None = None, dtype: Any = None) -> Any:
    """A lazy element-wise ``fn(*args)`` over broadcast arrays (fused with neighbours)."""
    from spartan.frontend.array import Array

    operands = [as_operand(a) for a in args]
    if not any(isinstance(o, Expr) for o in operands):
        return fn(*operands)
    perm = common_transpose(operands)
    if perm is not None:  # x.T * y.T is (x * y).T: the map reads its bases in their order
        bases = [o.base if isinstance(o, Expr) else o for o in operands]
        return Array(transpose(elementwise(fn, *bases, name=name, dtype=dtype)._expr, perm))
    shape = result_shape(operands)
    if dtype is None:
        dtype = np.asarray(probe(fn, operands)).dtype
    return Array(Map(fn, operands, shape, dtype, name=name))


def common_transpose(operands: list[Any]) -> tuple[int, ...] | None:
    """The axis order shared by operands that are all whole transposes of arrays of one
    shape (scalars aside), as in ``R.T * W.T``; None otherwise.

    Mapping over the bases and transposing the result reads every tile in its stored
    order (strided reads of transposed blocks cost several times more) and leaves a
    view that a product can read by the base's rows."""
    seen = set()
    for o in operands:
        if isinstance(o, Expr):
            perm = o.vm.whole_transpose(o.base.shape) if o.is_view else None
            if perm is None:
                return None
            seen.add((perm, o.base.shape))
    return seen.pop()[0] if len(seen) == 1 else None


def apply(ufunc: np.ufunc, args: tuple, **kwargs: Any) -> Any:
    """``ufunc(*args, **kwargs)`` lazily; a tuple for ufuncs with several outputs."""
    if ufunc is np.matmul:
        from spartan.frontend.linalg import matmul

        return matmul(*args)
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    if where is not True:
        raise TypeError("spartan ufuncs do not take where=; use spartan.where(cond, f(x), y)")
    fn = functools.partial(ufunc, **kwargs) if kwargs else ufunc
    if ufunc.nout == 1:
        result = elementwise(fn, *args, name=ufunc.__name__)
    else:
        result = tuple(
            elementwise(functools.partial(_nth, fn, k), *args, name=f"{ufunc.__name__}[{k}]")
            for k in range(ufunc.nout)
        )
    return _store(result, out)


def _nth(fn: Any, k: int, *args: Any) -> Any:
    return fn(*args)[k]


def _store(result: Any, out: Any) -> Any:
    """``out=``: rebind the given spartan arrays to the result (functional update)."""
    if out is None:
        return result
    from spartan.frontend.array import Array

    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    for o, r in zip(outs, results):
        if not isinstance(o, Array):
            raise TypeError("out= must be a spartan array")
        if o.shape != r.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {o.shape} doesn't match "
                f"the broadcast shape {r.shape}"
            )
        o._expr = r.astype(o.dtype)._expr if r.dtype != o.dtype else r._expr
    return outs[0] if len(outs) == 1 else outs  # NumPy returns the out array itself


def dispatch(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """The ``__array_ufunc__`` entry: calls, reductions and accumulations."""
    try:
        if method == "__call__":
            return apply(ufunc, inputs, **kwargs)
        if method == "reduce":
            from spartan.frontend.reductions import ufunc_reduce

            return ufunc_reduce(ufunc, *inputs, **kwargs)
        if method == "accumulate":
            from spartan.frontend.scan import ufunc_accumulate

            return ufunc_accumulate(ufunc, *inputs, **kwargs)
    except Unsupported:
        return NotImplemented
    return NotImplemented
