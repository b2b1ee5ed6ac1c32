"""NumPy's aliasing rules: a view shares its base.

A base array and every view of it share one :class:`Buffer`, which holds the expression
of the base's current contents. A view is the buffer seen through a path of links
(:class:`Strided` for basic indexing, transposes and unit axes; :class:`Reshaped` for a
reshape NumPy would do without copying). Reading a view derives it from the buffer's
current contents, so it sees every write made later through the base or another view;
writing through a view replaces the buffer's contents with a lazy update of them
(a ``join_update``), pushed back through the path link by link.

>>> import spartan as sp
>>> y = sp.zeros((3, 3), tiling="row")
>>> row = y[1]
>>> row[:] = 7
>>> float(y.sum())
21.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.frontend.expr import Expr
from spartan.frontend.view import view
from spartan.frontend.viewmap import ViewMap

if TYPE_CHECKING:
    from spartan.frontend.array import Array


class Buffer:
    """The memory a base array and its views share: the base's current contents."""

    __slots__ = ("_expr", "readonly", "__weakref__")

    def __init__(self, expr: Expr) -> None:
        self.expr = expr
        #: why a write must fail (NumPy's read-only results), or None
        self.readonly: str | None = None

    @property
    def expr(self) -> Expr:
        return self._expr

    @expr.setter
    def expr(self, expr: Expr) -> None:
        expr.held = True  # an array's contents: never computed apart from it
        self._expr = expr


READ_ONLY = "assignment destination is read-only"


def read_only(x: Array, why: str = READ_ONLY) -> Array:
    """``x`` made read-only, as NumPy returns some results (``broadcast_to``,
    ``diagonal``): a write raises ValueError(``why``) instead of going nowhere."""
    if x._np is None:
        x._buf.readonly = why
    else:
        x._np.flags.writeable = False
    return x


@dataclass(frozen=True)
class Strided:
    """A strided view of the parent (basic index, transpose, new or dropped unit axes)."""

    vm: ViewMap

    @property
    def shape(self) -> tuple[int, ...]:
        return self.vm.shape

    def apply(self, parent: Expr) -> Expr:
        return view(parent, self.vm)

    def strides(self, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
        return tuple(0 if a.base is None else strides[a.base] * a.step for a in self.vm.axes)

    def offset(self, strides: Sequence[int]) -> int:
        lead = {a.base: a.start for a in self.vm.axes if a.base is not None}
        lead.update(self.vm.fixed)
        return sum(strides[ax] * i for ax, i in lead.items())

    def written(self, parent: Array, new: Array) -> Array:
        """The parent with this view's elements replaced by ``new``."""
        return place(parent, self.vm, new)


@dataclass(frozen=True)
class Reshaped:
    """The parent reshaped without a copy (NumPy would return a view)."""

    shape: tuple[int, ...]

    def apply(self, parent: Expr) -> Expr:
        from spartan.frontend.reshape import Reshape

        return Reshape(parent, self.shape)

    def strides(self, shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
        out = nocopy_strides(shape, strides, self.shape)
        assert out is not None  # the link exists only where NumPy views
        return out

    def offset(self, strides: Sequence[int]) -> int:
        return 0

    def written(self, parent: Array, new: Array) -> Array:
        return new.reshape(parent.shape)


Link = Strided | Reshaped


def extend(path: tuple[Link, ...], link: Link) -> tuple[Link, ...]:
    """``path`` then ``link``, consecutive strided views composed into one."""
    if isinstance(link, Strided) and path and isinstance(path[-1], Strided):
        return path[:-1] + (Strided(path[-1].vm.then(link.vm)),)
    return path + (link,)


def derive(buffer: Buffer, path: Sequence[Link]) -> Expr:
    """The expression of the view ``path`` of the buffer's current contents."""
    expr = buffer.expr
    for link in path:
        expr = link.apply(expr)
    return expr


def layout(shape: Sequence[int], path: Sequence[Link]) -> tuple[int, tuple[int, ...]]:
    """Offset and strides, in elements of a C-ordered base of ``shape``, of a view."""
    strides = c_strides(shape)
    offset = 0
    for link in path:
        offset += link.offset(strides)
        strides = link.strides(shape, strides)
        shape = link.shape
    return offset, strides


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))


def nocopy_strides(
    old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides of ``new_shape`` over the same elements as ``old_shape`` with
    ``old_strides`` in C order, or None where that needs a copy (NumPy's
    ``_attempt_nocopy_reshape``: runs of old axes that are contiguous with each other
    may be re-cut freely).

    >>> nocopy_strides((4, 6), (6, 1), (24,)), nocopy_strides((6, 4), (1, 6), (24,))
    ((1,), None)
    """
    if math.prod(old_shape) == 0:
        return c_strides(new_shape)
    old = [(n, s) for n, s in zip(old_shape, old_strides) if n != 1]
    new = list(new_shape)
    out = [0] * len(new)
    oi = ni = 0
    # the unit axes of the new shape get any stride; walk the rest in matching runs
    real = [i for i, n in enumerate(new) if n != 1]
    while oi < len(old) and ni < len(real):
        np_, op = new[real[ni]], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                np_ *= new[real[nj]]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None  # the old axes of this run are not contiguous together
        stride = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            out[real[k]] = stride
            stride *= new[real[k]]
        oi, ni = oj, nj
    for i, n in enumerate(new):
        if n == 1:
            out[i] = 0
    return tuple(out)


class Place:
    """``f_join`` for assignment: the whole value goes to one (strided) location."""

    def __init__(self, loc: tuple) -> None:
        self.loc = loc

    def __call__(self, extents: Any, value: Any) -> list[tuple[tuple, Any]]:
        return [(self.loc, value)]


def assigned(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    """``value`` as NumPy assigns it into ``shape``: checked to broadcast, cast to
    ``dtype``."""
    from spartan.frontend.creation import asarray

    v = asarray(value)
    try:
        np.broadcast_shapes(v.shape, shape)
    except ValueError:
        raise ValueError(
            f"could not broadcast input array from shape {v.shape} into shape {shape}"
        ) from None
    return v if v.dtype == dtype else v.astype(dtype)


def filled(base: Array, value: Any) -> Array:
    """``value`` broadcast to ``base``'s shape and cast to its dtype, as NumPy assigns."""
    from spartan.frontend.manipulation import broadcast_to

    v = assigned(value, base.shape, base.dtype)
    return v if v.shape == base.shape else broadcast_to(v, base.shape)


def place(base: Array, vm: ViewMap, value: Any) -> Array:
    """``base`` with the elements the strided view ``vm`` selects set to ``value``
    (broadcast to the view's shape and cast to the base's dtype, as NumPy assigns)."""
    from spartan.frontend.array import Array
    from spartan.frontend.join_update import JoinUpdate
    from spartan.frontend.manipulation import broadcast_to

    target = vm.shape
    v = assigned(value, target, base.dtype)
    if math.prod(target) == 0:
        return base  # nothing selected: nothing to write
    # the value over the selected base elements, in base axis order: new unit axes go,
    # integer-indexed axes are dropped, transposed axes return to the base's order
    kept = [a for a in vm.axes if a.base is not None]
    v = broadcast_to(v, target).reshape(tuple(a.count for a in kept))
    order = sorted(range(len(kept)), key=lambda i: kept[i].base)
    if order != list(range(len(kept))):
        v = v.transpose(order)
    loc: list[Any] = [0] * base.ndim
    for axis, index in vm.fixed:
        loc[axis] = index
    for a in kept:
        stop = a.start + a.step * a.count
        loc[a.base] = slice(a.start, stop if stop >= 0 else None, a.step)
    return Array(
        JoinUpdate(
            Place(tuple(loc)),
            None,
            [v._expr],
            [-1],
            base.shape,
            base.dtype,
            base=base._expr,
            name="setitem",
        )
    )


def is_basic(key: Any) -> bool:
    """Whether ``key`` is a basic index (a view). A bool is not: NumPy reads it as a 0-d
    mask (``x[True]`` adds an axis), although Python's bool is an int."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(
        p is None
        or p is Ellipsis
        or (isinstance(p, (slice, int, np.integer)) and not isinstance(p, bool))
        for p in parts
    )


def written(parent: Array, path: Sequence[Link], key: Any, value: Any) -> Array:
    """``parent`` after ``view[key] = value``, where ``view`` is ``parent`` seen through
    ``path``: the write goes straight to the parent where the path is one strided view
    and the key basic, else the view's new contents are pushed back link by link."""
    from spartan.frontend.array import Array
    from spartan.frontend.indexing import setitem

    if not path:
        return setitem(parent, key, value)
    first = path[0]
    if len(path) == 1 and isinstance(first, Strided) and is_basic(key):
        return place(parent, first.vm.then(ViewMap.from_index(first.vm.shape, key)), value)
    child = Array(first.apply(parent._expr))
    return first.written(parent, written(child, path[1:], key, value))


def write(x: Array, key: Any, value: Any) -> None:
    """``x[key] = value`` for a distributed array: the shared buffer gets the update."""
    from spartan.frontend.array import Array

    if x._buf.readonly:
        raise ValueError(x._buf.readonly)
    if (
        not x._path
        and is_basic(key)
        and ViewMap.from_index(x.shape, key) == ViewMap.identity(x.shape)
    ):
        # every element (x += 1, x[...] = y): the value is the new contents, so a loop
        # of such updates stays one chain of element-wise maps, fused
        x._buf.expr = filled(x, value)._expr
        return
    base = Array(x._buf.expr)
    x._buf.expr = written(base, x._path, key, value)._expr


__all__ = [
    "Buffer",
    "Strided",
    "Reshaped",
    "extend",
    "derive",
    "layout",
    "place",
    "read_only",
    "write",
]
