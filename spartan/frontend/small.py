"""Small arrays are computed in the driver with NumPy, at NumPy's speed.

An array below ``spartan.config.local_below_bytes`` made without a ``tiling=`` holds its
values in the driver (:meth:`Array._local`). NumPy functions, ufuncs, operators and
indexing whose spartan array arguments are all small run NumPy directly on them: no
expression, no plan, no worker, no Ray. NumPy's views come with it (a slice of a small
array is a NumPy view of it). A result that is not small any more is handed to the
workers as a distributed array; a small array meeting a distributed one enters that
expression as a constant holding a copy of its values.

>>> import spartan as sp
>>> x = sp.zeros((20, 20))
>>> x[3, 4] = 1
>>> float(x.sum()), x.tiling is None
(1.0, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from spartan.backend import session
from spartan.config import config
from spartan.frontend.array import Array
from spartan.frontend.expr import Expr

#: "this call is not one for the driver": the caller takes the distributed path
NO = object()

_SCALARS = (int, float, complex, bool, np.generic)


def operand(x: Any) -> Any:
    """``x`` as NumPy takes it, if it is small enough for the driver; else :data:`NO`."""
    if isinstance(x, Array):
        return NO if x._np is None else x._np
    if isinstance(x, _SCALARS):
        return x
    if isinstance(x, np.ndarray):
        return x if x.nbytes < config.local_below_bytes else NO
    return NO


def dtype_of(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, (Array, np.ndarray, np.generic)) else np.asarray(x).dtype


def wrap(out: Any, inputs: tuple[Array, ...] = ()) -> Any:
    """A NumPy result as spartan returns it: arrays and NumPy scalars become arrays
    (small ones stay in the driver, others go to the workers), an input handed back
    (``asarray``, ``out=``) is that input's handle, containers are wrapped item by item."""
    if type(out) is np.ndarray and not inputs and out.nbytes < config.local_below_bytes:
        return Array._local(out)  # the common case first
    if isinstance(out, np.ndarray):
        for a in inputs:
            if a._np is out:
                return a
        if out.nbytes < config.local_below_bytes:
            return Array._local(out)
        from spartan.frontend.source import FromNumpy

        # it grew past the threshold: its own copy goes to the workers (a view would
        # change with the small array it views until the copy is sent)
        return Array(FromNumpy(out if out.flags.owndata else out.copy()))
    if isinstance(out, np.generic):
        return Array._local(np.asarray(out))
    if isinstance(out, tuple):
        items = [wrap(o, inputs) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if isinstance(out, list):
        return [wrap(o, inputs) for o in out]
    return out


def _unwrap(x: Any, found: list[Array]) -> Any:
    """``x`` with small spartan arrays replaced by their values (one level into lists
    and tuples); raises :class:`_Distributed` at a distributed one."""
    if isinstance(x, Array):
        if x._np is None:
            raise _Distributed
        found.append(x)
        return x._np
    if isinstance(x, (list, tuple)) and any(isinstance(i, Array) for i in x):
        return type(x)(_unwrap(i, found) for i in x)
    return x


class _Distributed(Exception):
    """A distributed array among the arguments: not a call for the driver."""


def call(func: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)`` with NumPy in the driver when every spartan array
    among the arguments is small (and there is at least one); else :data:`NO`."""
    found: list[Array] = []
    try:
        args = [_unwrap(a, found) for a in args]
        kwargs = {k: _unwrap(v, found) for k, v in kwargs.items()}
    except _Distributed:
        return NO
    if not found:
        return NO
    return wrap(func(*args, **kwargs), tuple(found))


def local_first(np_func: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` (the distributed version of ``np_func``) that runs ``np_func`` in the
    driver when its spartan array arguments are all small. Spartan's own keywords
    (``tiling=``) and arguments NumPy rejects (TypeError) go to ``impl``."""

    @functools.wraps(impl)
    def function(*args: Any, **kwargs: Any) -> Any:
        if "tiling" not in kwargs:
            try:
                out = call(np_func, args, kwargs)
            except TypeError:
                out = NO
            if out is not NO:
                return out
        return impl(*args, **kwargs)

    function.__wrapped__ = impl
    return function


#: the in-process workers that compute small graphs of spartan's own operators
_driver: Any = None
#: the most nodes a graph computed in the driver may have (beyond: leave it lazy)
DRIVER_GRAPH_NODES = 64


def computed_in_driver(expr: Expr) -> np.ndarray | None:
    """The values of ``expr``, computed by in-process workers, when it is a small graph
    (every node under the threshold) whose leaves are all made in the driver: spartan's
    own operators (``map``, ``fold``, ``scan``, random permutations...) on small arrays,
    which NumPy has no function for. None otherwise."""
    limit = config.local_below_bytes
    stack, seen = [expr], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if len(seen) > DRIVER_GRAPH_NODES or e.nbytes >= limit:
            return None
        if e.held or e.data is not None or not (e.children or e.driver_leaf):
            return None  # a distributed array's, or a leaf the driver cannot make
        stack.extend(e.children)
    global _driver
    if _driver is None:
        from spartan.backend.local import LocalBackend

        _driver = LocalBackend(1)
    from spartan.frontend.evaluate import to_numpy

    with session.borrowed(_driver):
        return to_numpy(expr)


def call_method(values: np.ndarray, name: str, args: Any, kwargs: dict[str, Any]) -> Any:
    """``values.name(*args, **kwargs)`` when no argument is a distributed array."""
    if args or kwargs:
        found: list[Array] = []
        try:
            args = [_unwrap(a, found) for a in args]
            kwargs = {k: _unwrap(v, found) for k, v in kwargs.items()}
        except _Distributed:
            return NO
    return wrap(getattr(values, name)(*args, **kwargs))


def getitem(values: np.ndarray, key: Any) -> Any:
    """``values[key]``: a NumPy view for a basic index, a copy otherwise, and NumPy's
    scalar for an integer per axis, as NumPy gives it (a scalar loop runs at NumPy's
    speed). A spartan array in the key is read through ``__array__``: it selects from
    a small array, so it is small too."""
    out = values[key]
    return Array._local(out) if type(out) is np.ndarray else out


def setitem(values: np.ndarray, key: Any, value: Any) -> None:
    """``values[key] = value`` in place (a distributed value is fetched first)."""
    if isinstance(value, Array):
        value = value._np if value._np is not None else value.to_numpy()
    values[key] = value


__all__ = ["NO", "call", "call_method", "wrap", "operand", "local_first", "getitem", "setitem"]
