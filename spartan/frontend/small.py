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
import itertools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from spartan.backend import session
from spartan.config import config
from spartan.frontend.array import Array
from spartan.frontend.expr import Expr

#: "this call is not one for the driver": the caller takes the distributed path
NO = object()


#: the versions writes give memories: each write a number no write had before
_writes = itertools.count(1)


class Memory:
    """The memory a small array and its NumPy views share, and its version: a copy sent
    to the workers stays valid while the version is unchanged."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version = 0

    def wrote(self) -> None:
        """Note a write into this memory (after it is made). A fresh version, not a
        count: two threads writing at once could each read the same count and store
        the same increment, and a copy made between their writes would stay valid."""
        self.version = next(_writes)  # (atomic: the counter is C code)


def snapshot(x: Array) -> Expr:
    """``x``'s values as a constant of a distributed expression: a copy, sent to the
    workers once and used again while ``x``'s memory sees no write (a small array used
    in every step of a loop over a big one goes once). A copy handed out twice is
    ``held``: a graph computed in the driver (:func:`computed_in_driver`) must not
    evaluate it there, as another graph will read it on the workers. A copy is used again
    only by the thread that made it: another thread's graph could be computed in the
    driver between that thread's look at ``held`` and this one's mark."""
    from spartan.frontend.source import FromNumpy, NewArray

    # read before the copy: a write during it gives a new version, and the copy goes
    version, thread = x._buf.version, threading.get_ident()
    cached = x._derived
    if cached is not None and cached[0] == version and cached[2] == thread:
        expr = cached[1]
        if expr.data is None or expr.data.backend is session.peek():
            expr.held = True
            return expr
    values = _held(x).copy()
    if values.nbytes <= INLINE_BYTES:
        # inside the tasks that make its tiles: a put per tile costs more (a small
        # constant such as k-means' np.arange(k) is made at every step)
        expr = NewArray(values.shape, values.dtype, Inline(values), name="array")
    else:
        expr = FromNumpy(values)
    x._derived = (version, expr, thread)
    return expr


#: small arrays of at most this many bytes travel inside the tasks that make their
#: tiles instead of being put in Ray's object store
INLINE_BYTES = 64 << 10


class Inline:
    """``newarray``'s ``init``: the piece of ``values`` a tile covers."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __call__(self, box: tuple[tuple[int, int], ...], dtype: np.dtype) -> np.ndarray:
        return self.values[tuple(slice(lo, hi) for lo, hi in box)]


def _held(x: Array) -> np.ndarray:
    """``x``'s values in the driver: every array this module is handed is a small one."""
    values = x._np
    assert values is not None, "a small array's values are held in the driver"
    return values


def _root(values: np.ndarray) -> np.ndarray:
    """The array whose memory ``values`` views (itself if it owns its memory)."""
    while isinstance(values.base, np.ndarray):
        values = values.base
    return values


#: NumPy functions and ndarray methods that write into an array argument
WRITERS = frozenset(
    "copyto put place putmask fill_diagonal at sort partition fill itemset resize".split()
)

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
    (small ones stay in the driver, sharing the memory of the input they view; others
    go to the workers), an input handed back (``asarray``, ``out=``) is that input's
    handle, containers are wrapped item by item."""
    if isinstance(out, np.ndarray):
        for a in inputs:
            if a._np is out:
                return a
        if out.nbytes < config.local_below_bytes:
            if out.base is None:
                return Array._local(out)
            root = _root(out)
            memory = next((a._buf for a in inputs if _root(_held(a)) is root), None)
            return Array._local(out, memory)
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
    theirs = [a for a in args if isinstance(a, np.ndarray)]  # the user's own arrays
    try:
        args = [_unwrap(a, found) for a in args]
        kwargs = {k: _unwrap(v, found) for k, v in kwargs.items()}
    except _Distributed:
        return NO
    if not found:
        return NO
    out = func(*args, **kwargs)
    if "out" in kwargs or getattr(func, "__name__", "") in WRITERS:
        for a in found:  # (conservatively: every small array it was given)
            a._buf.wrote()
    if theirs and isinstance(out, np.ndarray):
        # a spartan array never shares memory with a NumPy array of the user's
        if any(np.may_share_memory(out, a) for a in theirs):
            out = out.copy()
    return wrap(out, tuple(found))


def local_first(np_func: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` (the distributed version of ``np_func``) that runs ``np_func`` in the
    driver when its spartan array arguments are all small. Spartan's own keywords
    (``tiling=``) and arguments NumPy rejects (TypeError) go to ``impl``.

    An ``impl`` with a ``driver_numpy`` attribute runs that function in the driver
    instead of ``np_func``: NumPy's call with the defaults that make it give what
    ``impl`` gives (``argsort``: stable, as the distributed sort always is)."""
    np_func = getattr(impl, "driver_numpy", np_func)

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


def call_method(x: Array, name: str, args: Any, kwargs: dict[str, Any]) -> Any:
    """``x.name(*args, **kwargs)`` with NumPy's ndarray method, when no argument is a
    distributed array; else :data:`NO`."""
    found: list[Array] = [x]
    if name == "argsort" and len(args) < 2 and not {"kind", "stable"} & set(kwargs):
        kwargs = {**kwargs, "stable": True}  # as spartan.argsort (see its driver_numpy)
    if args or kwargs:
        try:
            args = [_unwrap(a, found) for a in args]
            kwargs = {k: _unwrap(v, found) for k, v in kwargs.items()}
        except _Distributed:
            return NO
    out = getattr(x._np, name)(*args, **kwargs)
    if name in WRITERS or "out" in kwargs:
        for a in found:
            a._buf.wrote()
    return wrap(out, tuple(found))


def getitem(x: Array, key: Any) -> Any:
    """``x[key]``: a NumPy view for a basic index (sharing ``x``'s memory), a copy
    otherwise, and NumPy's scalar for an integer per axis, as NumPy gives it (a scalar
    loop runs at NumPy's speed). A spartan array in the key is read through
    ``__array__``: it selects from a small array, so it is small too."""
    out = _held(x)[key]
    if type(out) is not np.ndarray:
        return out
    return Array._local(out, x._buf if out.base is not None else None)


def setitem(x: Array, key: Any, value: Any) -> None:
    """``x[key] = value`` in place (a distributed value is fetched first)."""
    if isinstance(value, Array):
        value = value._np if value._np is not None else value.to_numpy()
    _held(x)[key] = value
    x._buf.wrote()


__all__ = [
    "NO",
    "Memory",
    "call",
    "call_method",
    "getitem",
    "local_first",
    "operand",
    "setitem",
    "snapshot",
    "wrap",
]
