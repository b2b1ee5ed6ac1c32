"""NumPy ufuncs on spartan arrays: each call is an element-wise :class:`Map`.

Shapes follow NumPy broadcasting and dtypes NumPy's promotion (found by calling the
ufunc on one-element probes, so NEP 50 scalar rules hold); errors are raised here,
when the expression is built.

>>> y = np.exp(x) + 1   # x a spartan.Array: y is one too (one fused map)
>>> isinstance(y, sp.Array), float(y[0, 0])
(True, 2.0)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from spartan.frontend.expr import Expr
from spartan.frontend.map import Map
from spartan.frontend.source import FromNumpy
from spartan.frontend.view import View, base_of, transpose


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
        bases = [base_of(o) if isinstance(o, Expr) else o for o in operands]
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
            if not isinstance(o, View):
                return None
            perm = o.vm.whole_transpose(o.base.shape)
            if perm is None:
                return None
            seen.add((perm, o.base.shape))
    return seen.pop()[0] if len(seen) == 1 else None


def apply(ufunc: np.ufunc, args: tuple, **kwargs: Any) -> Any:
    """``ufunc(*args, **kwargs)`` lazily; a tuple for ufuncs with several outputs."""
    if ufunc is np.matmul:
        from spartan.frontend.products import matmul

        out = kwargs.pop("out", None)
        if kwargs:
            raise TypeError(
                f"spartan matmul takes no {', '.join(sorted(kwargs))} argument (only out=)"
            )
        return _store(matmul(*args), out)
    out = kwargs.pop("out", None)
    where = kwargs.pop("where", True)
    fn = functools.partial(ufunc, **kwargs) if kwargs else ufunc
    if ufunc.nout == 1:
        result = elementwise(fn, *args, name=ufunc.__name__)
    else:
        result = tuple(
            elementwise(functools.partial(_nth, fn, k), *args, name=f"{ufunc.__name__}[{k}]")
            for k in range(ufunc.nout)
        )
    if where is not True:
        result = _masked(result, where, out)
    return _store(result, out)


def _masked(result: Any, where: Any, out: Any) -> Any:
    """``where=``: the result where the mask holds, ``out``'s elements elsewhere. Without
    ``out`` NumPy leaves those elements uninitialized: any value is NumPy's answer, and
    spartan gives the computed one."""
    results = result if isinstance(result, tuple) else (result,)
    outs = (out if isinstance(out, tuple) else (out,)) if out is not None else ()
    mask = as_operand(where)
    mask_shape = mask.shape if isinstance(mask, Expr) else np.shape(mask)
    masked = []
    for k, r in enumerate(results):
        shape = getattr(r, "shape", ())
        if tuple(np.broadcast_shapes(mask_shape, shape)) != tuple(shape):
            raise ValueError(
                f"where= mask of shape {tuple(mask_shape)} does not broadcast to the "
                f"output shape {tuple(shape)}"
            )
        o = outs[k] if k < len(outs) else None
        masked.append(r if o is None else elementwise(np.where, where, r, o, name="where"))
    return tuple(masked) if isinstance(result, tuple) else masked[0]


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
            # (writing a distributed result into a NumPy array would gather it)
            raise Unsupported(
                f"out= is a {type(o).__module__}.{type(o).__name__}: spartan writes only "
                "into spartan arrays; fetch the spartan operand with x.to_numpy() to "
                "compute in NumPy, or pass a spartan array as out="
            )
        if o.shape != r.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {o.shape} doesn't match "
                f"the broadcast shape {r.shape}"
            )
        o._expr = r.astype(o.dtype)._expr if r.dtype != o.dtype else r._expr
    return outs[0] if len(outs) == 1 else outs  # NumPy returns the out array itself


def describe(value: Any) -> str:
    """``value`` for an error message by its type, shape and dtype only: a spartan
    array's ``repr`` computes it, and an error must never compute anything.

    >>> describe(np.zeros((2, 3)))
    'numpy.ndarray(shape=(2, 3), dtype=float64)'
    """
    from spartan.frontend.array import Array

    if isinstance(value, Array):
        return f"spartan.Array(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, Expr):
        return f"spartan expression(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, np.ndarray):
        return f"numpy.ndarray(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, (bool, int, float, complex, np.generic, str)) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else f"{text[:37]}..."
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of length {len(value)}"
    return f"{type(value).__module__}.{type(value).__qualname__} object"


def outer_operands(ufunc: np.ufunc, a: Any, b: Any, has_out: bool = False) -> tuple | None:
    """The operands of ``ufunc.outer(a, b)`` as one broadcasting call takes them: ``a``
    viewed with ``b.ndim`` trailing unit axes (nothing copied), ``b`` as it is; None for
    two scalars without ``out=`` (NumPy's own scalar is the answer).

    >>> [v.shape for v in outer_operands(np.add, sp.ones(3), sp.ones((2, 4)))]
    [(3, 1, 1), (2, 4)]
    """
    from spartan.frontend.array import Array

    if ufunc.signature is not None:
        raise TypeError("method outer is not allowed in ufunc with non-trivial signature")
    if ufunc.nin != 2:
        raise ValueError("outer product only supported for binary functions")
    x, y = (v if isinstance(v, Array) else as_operand(v) for v in (a, b))
    if not isinstance(x, (Array, Expr)) and not isinstance(y, (Array, Expr)):
        if not has_out:
            return None
        x = FromNumpy(np.asarray(x))
    if isinstance(x, Expr):
        x = Array(x)
    if isinstance(y, Expr):
        y = Array(y)
    y_ndim = y.ndim if isinstance(y, Array) else np.ndim(y)
    if isinstance(x, Array) and y_ndim:
        x = x[(Ellipsis,) + (None,) * y_ndim]
    return x, y


def ufunc_outer(ufunc: np.ufunc, a: Any, b: Any, **kwargs: Any) -> Any:
    """``ufunc.outer(a, b)`` lazily: ``ufunc(a[i...], b[j...])`` of shape ``a.shape +
    b.shape``, one element-wise map over ``a`` viewed with ``b.ndim`` unit axes.

    >>> sp.multiply.outer(sp.arange(3), [1, 10]).to_numpy()
    array([[ 0,  0],
           [ 1, 10],
           [ 2, 20]])
    """
    operands = outer_operands(ufunc, a, b, "out" in kwargs)
    if operands is None:
        return ufunc.outer(a, b, **kwargs)
    return apply(ufunc, operands, **kwargs)


def ufunc_at(ufunc: np.ufunc, a: Any, indices: Any, b: Any = None) -> None:
    """``ufunc.at(a, indices, b)``: rebinds the spartan array ``a`` to the updated array
    (repeated indices accumulate, as in NumPy).

    >>> a = sp.zeros(4)
    >>> sp.add.at(a, [0, 0, 2], 1)
    >>> a
    array([2., 0., 1., 0.])
    """
    from spartan.frontend.array import Array
    from spartan.frontend.fancy import ufunc_at as scatter

    if not isinstance(a, Array):
        raise TypeError(
            f"{ufunc.__name__}.at: spartan updates only spartan arrays in place, not "
            f"{describe(a)}; to update a NumPy array, pass spartan operands as "
            "x.to_numpy() (that computes them and gathers them to this process)"
        )
    a._expr = scatter(ufunc, a, indices, b)._expr


#: the parameter names of each ufunc method's positional operands: NumPy passes an
#: operand given by keyword (``indices=``) in ``inputs`` and in ``kwargs`` both
_OPERANDS = {
    "reduce": ("array",),
    "accumulate": ("array",),
    "reduceat": ("array", "indices"),
    "outer": ("A", "B"),
    "at": ("a", "indices", "b"),
}
#: the keywords each method takes besides its operands (NumPy's names)
_KEYWORDS = {
    "reduce": ("axis", "dtype", "out", "keepdims", "initial", "where"),
    "accumulate": ("axis", "dtype", "out"),
    "reduceat": ("axis", "dtype", "out"),
    "at": (),
}


def _method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = f"{ufunc.__name__}.{method}"
    for key in kwargs:
        if method in _KEYWORDS and key not in _KEYWORDS[method]:
            raise TypeError(f"{method}() got an unexpected keyword argument {key!r}")
    if method == "__call__":
        return apply(ufunc, inputs, **kwargs)
    if method == "outer":
        if len(inputs) != 2:
            raise TypeError(f"{name} takes exactly 2 operands ({len(inputs)} given)")
        return ufunc_outer(ufunc, *inputs, **kwargs)
    if method == "reduce":
        from spartan.frontend.reductions import ufunc_reduce

        return ufunc_reduce(ufunc, *inputs, **kwargs)
    if method == "accumulate":
        from spartan.frontend.scan import ufunc_accumulate

        return ufunc_accumulate(ufunc, *inputs, **kwargs)
    if method == "reduceat":
        from spartan.frontend.reductions import ufunc_reduceat

        return ufunc_reduceat(ufunc, *inputs, **kwargs)
    if method == "at":
        return ufunc_at(ufunc, *inputs)
    raise Unsupported(f"spartan has no ufunc method {method!r}")


def _defers(values: Any) -> bool:
    """Whether an operand other than spartan's or NumPy's arrays implements the ufunc
    protocol (it may take the call when spartan returns NotImplemented)."""
    from spartan.frontend.array import Array

    for v in values:
        if isinstance(v, (Array, np.ndarray, np.generic)):
            continue
        if getattr(type(v), "__array_ufunc__", None) is not None:
            return True
    return False


def dispatch(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """The ``__array_ufunc__`` entry: calls, ``reduce``, ``accumulate``, ``reduceat``,
    ``outer`` and ``at``, each with NumPy's signature.

    An operand spartan cannot take raises ``TypeError`` naming the operands by type,
    shape and dtype; returning NotImplemented instead would let NumPy build its own
    message from each operand's ``repr``, which computes a spartan array. Only when
    another operand implements ``__array_ufunc__`` (and might take the call) is
    NotImplemented returned.

    >>> numpy.add.reduceat(x, [0, 2], axis=1)  # x a spartan.Array
    array([[1., 2.],
           [7., 5.]])
    """
    kwargs = dict(kwargs)
    for key in _OPERANDS.get(method, ())[: len(inputs)]:
        kwargs.pop(key, None)
    try:
        return _method(ufunc, method, inputs, kwargs)
    except Unsupported as err:
        out = kwargs.get("out")
        outs = () if out is None else out if isinstance(out, tuple) else (out,)
        if _defers(tuple(inputs) + outs):
            return NotImplemented
        call = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        operands = ", ".join(describe(v) for v in inputs)
        raise TypeError(f"{call}({operands}): {err}") from None
