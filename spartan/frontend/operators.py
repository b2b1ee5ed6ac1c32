"""The five high-level operators and the views, as public functions.

Everything in spartan's NumPy namespace is written on these; user code may call them
directly with functions that work on whole tiles (NumPy arrays).

>>> sp.map(lambda t: t * 2, x)
array([[ 0.,  2.,  4.],
       [ 6.,  8., 10.]])
>>> sp.fold(np.add, x, axis=0)
array([3., 5., 7.])
>>> sp.scan(np.add, x, axis=1)
array([[ 0.,  1.,  3.],
       [ 3.,  7., 12.]])
>>> sp.filter(x, lambda t: t > 2)
array([3., 4., 5.])

and :func:`join_update` (its docstring has an example).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module, to_host
from spartan.backend.worker import box_text, call_user, name_of, note, task_tiles
from spartan.frontend.aliasing import Strided
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, newarray
from spartan.frontend.expr import Expr
from spartan.frontend.fold import Fold
from spartan.frontend.join_update import JoinUpdate, integer_axes, location_runs
from spartan.frontend.map import Map
from spartan.frontend.reductions import normalize_axes, ufunc_reduce
from spartan.frontend.scan import Scan
from spartan.frontend.ufuncs import as_operand, result_shape
from spartan.frontend.view import base_of
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import box_shape

__all__ = ["map", "fold", "scan", "filter", "join_update", "newarray", "slice", "swapaxes"]


def map(  # noqa: A001
    fn: Callable[..., Any], *arrays: Any, dtype: Any = None, shape: Sequence[int] | None = None
) -> Array:
    """``fn`` applied tile by tile.

    Without ``shape``, the output has the inputs' broadcast shape and ``fn`` gets one
    block per input (the region of its output tile; tiles may be cut along any axis) and
    must return a block of exactly that shape. With ``shape=``, ``fn`` maps whole rows:
    each input whose first axis has ``shape[0]`` elements arrives as a run of its rows
    (every other axis whole), any other input whole, and ``fn`` returns those rows of the
    output, ``(rows, *shape[1:])`` (``t @ W`` whatever the tiling).

    Each returned block is checked where it is made: a block of another shape (``t[:1]``,
    ``t.sum()``) raises ``ValueError`` naming ``fn``, the tile and both shapes (it is never
    broadcast). A block of another dtype is cast to ``dtype`` where NumPy's
    ``same_kind`` casting allows it (float64 into float32, int into float); otherwise
    (float into int, complex into float, objects or strings into numbers) ``ValueError``.

    Without ``dtype``, it is inferred by calling ``fn`` once, here, on blocks of ones of
    each input's dtype shaped like one row of it (its real trailing axes: ``t @ W`` works;
    inputs read whole are passed whole): a function that cannot take that raises its own
    exception, with a note to pass ``dtype=``. An exception ``fn`` raises on a worker
    reaches the caller with its type and message, the user's frames in its traceback,
    and a note naming the tile.

    >>> sp.map(lambda t: t * 2, x)
    array([[ 0.,  2.,  4.],
           [ 6.,  8., 10.]])
    >>> W = np.ones((3, 2))
    >>> sp.map(lambda t: t @ W, x, shape=(2, 2))
    array([[ 3.,  3.],
           [12., 12.]])
    """
    return _map(fn, arrays, dtype, shape, f"spartan.map({name_of(fn)})")


def _map(
    fn: Callable[..., Any],
    arrays: Sequence[Any],
    dtype: Any,
    shape: Sequence[int] | None,
    what: str,
) -> Array:
    """:func:`map`, its errors naming the user's call as ``what``."""
    operands = [as_operand(a) for a in arrays]
    label = getattr(fn, "__name__", "map")
    if shape is not None:
        return _row_map(fn, operands, tuple(int(n) for n in shape), dtype, what, label)
    out_shape = result_shape(operands)
    nd = len(out_shape)
    if dtype is None:
        rows = [isinstance(o, Expr) and o.ndim == nd and nd > 0 for o in operands]
        dtype = _probe_dtype(fn, operands, rows, what)
    dtype = np.dtype(dtype)
    checked = _UserMap(fn, dtype, what)
    return Array(Map(checked, operands, out_shape, dtype, elementwise=False, name=label))


def _row_map(
    fn: Callable[..., Any],
    operands: list,
    shape: tuple[int, ...],
    dtype: Any,
    what: str,
    label: str,
) -> Array:
    """``map`` with ``shape=``: a join over row groups, each group's rows written in place."""
    if not shape:
        raise ValueError(f"{what}: shape= needs an axis to cut by rows, got {shape}")
    n = shape[0]
    rows = [isinstance(o, Expr) and o.ndim > 0 and o.shape[0] == n for o in operands]
    if not any(rows):
        raise ValueError(
            f"{what}: with shape={shape} the inputs are cut by rows, so one must have {n} rows"
        )
    if dtype is None:
        dtype = _probe_dtype(fn, operands, rows, what)
    dtype = np.dtype(dtype)
    # inputs cut by rows first: a join's groups follow its first joined input
    inputs: list[Expr] = []
    for by_rows in (True, False):
        for o, r in zip(operands, rows):
            if isinstance(o, Expr) and r == by_rows and not any(o is i for i in inputs):
                inputs.append(o)
    layout = tuple(
        (True, next(j for j, i in enumerate(inputs) if i is o))
        if isinstance(o, Expr)
        else (False, o)
        for o in operands
    )
    axes = [0 if any(i is o for o, r in zip(operands, rows) if r) else -1 for i in inputs]
    f_join = _RowMap(fn, layout, shape[1:], dtype, what)
    return Array(
        JoinUpdate(f_join, None, inputs, axes, shape, dtype, update_axis=0, name=f"map({label})")
    )


def _probe_dtype(fn: Callable[..., Any], operands: list, rows: list[bool], what: str) -> np.dtype:
    """The dtype of ``fn`` on stand-ins for its blocks: one row of each input flagged
    in ``rows`` (its trailing axes whole, as in a row tile), the others whole; constants
    as they are. Blocks of ones first (nothing computed or fetched); where ``fn`` cannot
    take those and every input's values are at hand (held in the driver, or evaluated),
    the same slices of the real values."""
    boxes = [
        tuple((0, min(1, n) if (r and i == 0) else n) for i, n in enumerate(o.shape))
        if isinstance(o, Expr)
        else None
        for o, r in zip(operands, rows)
    ]
    ones = [np.ones(box_shape(b), o.dtype) if b is not None else o for o, b in zip(operands, boxes)]
    try:
        return _dtype_of(fn, ones)
    except Exception as error:
        real = _real_slices(operands, boxes)
        # (where the real values fail too, the first error says more, with its note)
        with contextlib.suppress(Exception):
            if real is not None:
                return _dtype_of(fn, real)
        shapes = ", ".join(str(box_shape(b)) for b in boxes if b is not None)
        note(
            error,
            f"while inferring the dtype of {what}: it was called on blocks of ones shaped "
            f"{shapes}; pass dtype= to skip this",
        )
        raise


def _dtype_of(fn: Callable[..., Any], blocks: list) -> np.dtype:
    with np.errstate(all="ignore"):
        return np.asarray(to_host(fn(*blocks))).dtype


def _real_slices(operands: list, boxes: list) -> list | None:
    """The real values of each input's ``box`` where all are at hand without computing."""
    from spartan.frontend.evaluate import gather

    out = []
    for o, box in zip(operands, boxes):
        if box is None:
            out.append(o)
            continue
        values = o.small_values()
        if values is not None:
            out.append(values[tuple(builtins.slice(lo, hi) for lo, hi in box)])  # (slice: ours)
        elif base_of(o).data is not None:
            out.append(gather(o, box))
        else:
            return None
    return out


def fold(f_accum: Callable[[Any, Any], Any], x: Any, axis: Any = None, dtype: Any = None) -> Array:
    """Reduce ``x`` over ``axis`` with an associative, commutative binary ``f_accum``
    (a NumPy ufunc, or any Python function of two arrays).

    A Python ``f_accum`` (a lambda, a ``def``, a closure, ``operator.add``, ``max``...)
    runs element by element (through ``np.frompyfunc``), within each tile and where the
    tiles' partials meet alike, so the result does not depend on the tiling. Its results
    must be values of ``dtype`` (default: ``x``'s) or cast to it by ``same_kind``
    casting; otherwise ``ValueError`` naming ``f_accum`` and the tile. Its exceptions
    keep their type, message and the user's frames. Partials are combined in tile
    order, so the same program gives the same bits on every run.

    >>> sp.fold(lambda a, b: a + b, x, axis=0)
    array([3., 5., 7.])
    >>> sp.fold(max, x, axis=1)
    array([2., 5.])
    """
    x = asarray(x)
    if isinstance(f_accum, np.ufunc):
        return ufunc_reduce(f_accum, x, axis, dtype)
    axes = normalize_axes(axis, x.ndim)
    dtype = np.dtype(dtype or x.dtype)
    what = f"spartan.fold({name_of(f_accum)})"
    local = _FoldLocal(f_accum, dtype, what)
    combine = _FoldCombine(f_accum, dtype, what)
    return Array(
        Fold(x._expr, axes, local, combine, dtype, name=getattr(f_accum, "__name__", "fold"))
    )


def scan(f_accum: Callable[[Any, Any], Any], x: Any, axis: int = 0, dtype: Any = None) -> Array:
    """Cumulative ``f_accum`` along ``axis``; the output has ``x``'s shape.

    A Python ``f_accum`` runs element by element (through ``np.frompyfunc``); its
    results must be values of ``dtype`` (default: ``x``'s) or cast to it by
    ``same_kind`` casting, else ``ValueError`` naming it and the tile.

    >>> sp.scan(lambda a, b: a + b, x, axis=0)
    array([[0., 1., 2.],
           [3., 5., 7.]])
    """
    x = asarray(x)
    (ax,) = normalize_axes(axis, x.ndim)
    dtype = np.dtype(dtype or x.dtype)
    uf = f_accum if isinstance(f_accum, np.ufunc) else _ScanUfunc(f_accum, dtype)
    return Array(Scan(x._expr, uf, ax, dtype))


def filter(x: Any, mask: Any) -> Array:  # noqa: A001
    """The elements of ``x`` where ``mask`` (an array, or a predicate on tiles) holds.

    A predicate returns a boolean block of its tile's shape (checked as :func:`map`'s).

    >>> sp.filter(x, lambda t: t > 2)
    array([3., 4., 5.])
    """
    x = asarray(x)
    if callable(mask) and not isinstance(mask, Array):
        mask = _map(mask, [x], bool, None, f"spartan.filter({name_of(mask)})")
    from spartan.frontend.indexing import compress_mask

    return compress_mask(x, asarray(mask).astype(bool, copy=False))


def join_update(
    f_join: Callable[..., Iterable[tuple[Any, Any]]],
    f_accum: Callable[[Any, Any], Any] | None,
    inputs: Sequence[Any],
    axes: Sequence[int],
    shape: Sequence[int],
    dtype: Any = float,
    fill: Any = 0,
    groups: int | None = None,
    update_axis: int | None = None,
) -> Array:
    """Join groups of tiles and combine their ``(location, update)`` pairs.

    Input ``i`` is split into groups along ``axes[i]`` (-1: whole array). ``f_join``
    is called as ``f_join(extents, *blocks)`` per group (``extents[i].box`` is block
    ``i``'s global region) and yields ``(location, update)``: ``location`` a tuple of
    slices of the output, ``update`` an array. Overlapping updates are combined with
    ``f_accum`` onto an output that starts at ``fill`` (``f_accum=None``: overwrite).
    ``update_axis=k`` promises that a group's updates stay within the output range,
    along axis ``k``, that the group spans of the first joined input: each group then
    feeds only the output tiles it overlaps, and a worker finishes the tiles only it
    feeds in its own join task. With ``f_accum=None``, an ``f_join`` making one update
    per group may also have ``place(extents)`` (that update's location) and
    ``into(out, *blocks)`` (the update written into ``out``): an update landing whole in
    a tile its task finishes is then written there in place, not made and copied.

    Each update must have its location's shape (axes indexed by an integer may be left
    out) and a dtype that ``same_kind`` casting turns into ``dtype``; a Python ``f_accum``
    must return the accumulator's shape and such a dtype. Otherwise ``ValueError``
    naming the function, the group or tile and both shapes (or dtypes): updates are
    never broadcast. Exceptions from either keep their type, message and user frames.

    >>> def rows_times(ext, xt, w):
    ...     return [(ext[0].rows, xt @ w)]
    >>> w = sp.eye(3) * 2
    >>> sp.join_update(rows_times, None, [x, w], [0, -1], (2, 3), update_axis=0)
    array([[ 0.,  2.,  4.],
           [ 6.,  8., 10.]])
    """
    exprs = [asarray(x)._expr for x in inputs]
    dtype = np.dtype(dtype)
    if f_accum is not None and not isinstance(f_accum, np.ufunc):
        f_accum = _Combine(f_accum, dtype, f"spartan.join_update(f_accum={name_of(f_accum)})")
    return Array(
        JoinUpdate(
            _UserJoin(f_join, tuple(shape), dtype),
            f_accum,
            exprs,
            axes,
            tuple(shape),
            dtype,
            fill,
            groups=groups,
            update_axis=update_axis,
        )
    )


def slice(x: Any, region: Any) -> Array:  # noqa: A001
    """A view of ``x`` (any basic index: slices, ints, None, Ellipsis)."""
    x = asarray(x)
    return x._linked(Strided(ViewMap.from_index(x.shape, region)))


def swapaxes(x: Any, axis1: int, axis2: int) -> Array:
    """A view of ``x`` with two axes exchanged (a column-tiled x reads row-tiled)."""
    from spartan.frontend.manipulation import swapaxes as _swap

    return _swap(x, axis1, axis2)


# ---- the user's functions, checked where they run ---------------------------------------


def _checked(value: Any, shape: Sequence[int], dtype: np.dtype, what: str, where: str) -> Any:
    """``value`` (a user function's result) as a block of ``shape`` and ``dtype``: cast
    where ``same_kind`` casting allows, else ``ValueError`` (never broadcast)."""
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        value = np.asarray(value)
    got = tuple(value.shape)
    if got != tuple(shape):
        hint = ""
        if len(got) == len(shape) > 1 and got[0] == shape[0]:
            hint = "; a function that changes the rows' length needs map(..., shape=)"
        raise ValueError(
            f"{what} returned shape {got} for {where}, whose shape is {tuple(shape)}{hint}"
        )
    return _cast(value, dtype, what, where)


def _cast(value: Any, dtype: np.dtype, what: str, where: str) -> Any:
    if value.dtype == dtype:
        return value
    if not np.can_cast(value.dtype, dtype, casting="same_kind"):
        raise ValueError(
            f"{what} returned dtype {value.dtype} for {where}, declared {dtype} "
            "(same_kind casting does not allow it)"
        )
    return value.astype(dtype)


def _values_as(value: Any, dtype: np.dtype, what: str, where: str) -> Any:
    """The object array ``np.frompyfunc`` made of a user function's results, as
    ``dtype``: judged by the values' own dtype (Python floats are float64), then cast as
    in :func:`_cast`."""
    value = np.asarray(value)
    if value.size == 0:
        return value.astype(dtype)
    if value.dtype.kind != "O" or dtype.kind == "O":
        return _cast(value, dtype, what, where)
    values = np.array(value.ravel().tolist())
    if values.shape != (value.size,):  # the function returned arrays, not values
        values = value.ravel()
    return _cast(values.reshape(value.shape), dtype, what, where)


class _UserMap:
    """``spartan.map``'s function in a kernel: its block checked against the inputs'
    broadcast shape (the tile's, or a row chunk's) and the declared dtype."""

    def __init__(self, fn: Callable[..., Any], dtype: np.dtype, what: str) -> None:
        self.fn, self.dtype, self.what = fn, dtype, what

    def __call__(self, *args: Any) -> Any:
        out = call_user(self.what, self.fn, *args)
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        return _checked(out, shape, self.dtype, self.what, task_tiles())


class _RowMap:
    """The ``f_join`` of ``map(..., shape=)``: ``fn`` on one group's rows of the inputs
    (``layout``: per operand, ``(True, input index)`` or ``(False, constant)``)."""

    def __init__(
        self, fn: Callable[..., Any], layout: tuple, tail: tuple, dtype: np.dtype, what: str
    ) -> None:
        self.fn, self.layout, self.tail, self.dtype, self.what = fn, layout, tail, dtype, what

    def __call__(self, extents: Sequence[Any], *blocks: Any) -> list[tuple[Any, Any]]:
        lo, hi = extents[0].box[0]
        where = f"rows {lo}:{hi}"
        args = [blocks[v] if is_input else v for is_input, v in self.layout]
        out = call_user(self.what, self.fn, *args, where=where)
        return [
            (extents[0].rows, _checked(out, (hi - lo, *self.tail), self.dtype, self.what, where))
        ]


def _reduced(uf: np.ufunc, block: Any, axes: Sequence[int]) -> Any:
    """``block`` reduced by ``uf`` over ``axes``."""
    for ax in sorted(axes, reverse=True):
        block = uf.reduce(block, axis=ax)
    return block


class _PyUfunc:
    """A Python function of two values as ``np.frompyfunc`` makes it, made where it runs
    (such a ufunc does not pickle); :meth:`run` applies it to host copies of GPU blocks
    (CuPy has no ``frompyfunc``) and returns the result where the blocks were."""

    def __init__(self, fn: Callable[[Any, Any], Any], dtype: np.dtype, what: str) -> None:
        self.fn, self.dtype, self.what = fn, dtype, what
        self._uf: np.ufunc | None = None

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_uf"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _uf=None)

    @property
    def ufunc(self) -> np.ufunc:
        if self._uf is None:
            self._uf = np.frompyfunc(self.fn, 2, 1)
        return self._uf

    def run(self, method: Callable[..., Any], blocks: Sequence[Any], *rest: Any, where: str) -> Any:
        """``method(*blocks, *rest)`` (the ufunc or one of its methods) on host copies of
        ``blocks``, its values checked against ``dtype``, on the blocks' device."""
        xp = array_module(*blocks)
        out = call_user(self.what, method, *(to_host(b) for b in blocks), *rest, where=where)
        out = _values_as(out, self.dtype, self.what, where)
        return out if xp is np else xp.asarray(out)


class _FoldLocal(_PyUfunc):
    """``fold``'s per-tile reduction with a Python ``f_accum``, element by element."""

    def __call__(self, block: Any, axes: Sequence[int], box: Sequence[tuple[int, int]]) -> Any:
        reduce = functools.partial(_reduced, self.ufunc)
        return self.run(reduce, [block], axes, where=f"input tile {box_text(box)}")


class _FoldCombine(_PyUfunc):
    """``fold``'s Python ``f_accum`` joining two partials element by element, as within a
    tile (a function of two values, ``max`` say, then works for every tiling)."""

    def __call__(self, acc: Any, update: Any) -> Any:
        return self.run(self.ufunc, [acc, update], where=task_tiles())


class _Combine:
    """A Python ``f_accum`` on whole arrays (a join's accumulator and update): its
    result keeps their broadcast shape and casts to ``dtype``."""

    def __init__(self, fn: Callable[[Any, Any], Any], dtype: np.dtype, what: str) -> None:
        self.fn, self.dtype, self.what = fn, dtype, what

    def __call__(self, acc: Any, update: Any) -> Any:
        out = call_user(self.what, self.fn, acc, update)
        shape = np.broadcast_shapes(np.shape(acc), np.shape(update))
        return _checked(out, shape, self.dtype, self.what, task_tiles())


class _ScanUfunc(_PyUfunc):
    """``scan``'s Python ``f_accum`` standing in for the ufunc a :class:`Scan` runs: it
    accumulates a tile and combines carried slices element by element, its results
    checked against ``dtype``."""

    def __init__(self, fn: Callable[[Any, Any], Any], dtype: np.dtype) -> None:
        super().__init__(fn, dtype, f"spartan.scan({name_of(fn)})")
        self.__name__ = name_of(fn)

    def accumulate(self, block: Any, axis: int = 0, dtype: Any = None) -> Any:
        return self.run(self.ufunc.accumulate, [block], axis, where=task_tiles())

    def __call__(self, a: Any, b: Any) -> Any:
        return self.run(self.ufunc, [a, b], where=task_tiles())


def _pairs(f_join: Callable[..., Any], extents: Sequence[Any], blocks: Sequence[Any]) -> list:
    return list(f_join(extents, *blocks) or ())  # a generator's code runs here too


class _UserJoin:
    """A user's ``f_join``: every ``(location, update)`` pair checked (the update has the
    location's shape and a dtype that casts to the output's). Its ``place``/``into``,
    when it has them, are the user's too."""

    def __init__(self, fn: Callable[..., Any], shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.fn, self.shape, self.dtype = fn, shape, dtype
        self.what = f"spartan.join_update(f_join={name_of(fn)})"

    def __getattr__(self, name: str) -> Any:
        fn = self.__dict__.get("fn")
        if name not in ("place", "into") or fn is None:
            raise AttributeError(name)
        return functools.partial(call_user, f"{self.what}.{name}", getattr(fn, name))

    def __call__(self, extents: Sequence[Any], *blocks: Any) -> list[tuple[Any, Any]]:
        where = "the group of blocks " + ", ".join(box_text(e.box) for e in extents)
        pairs = call_user(self.what, _pairs, self.fn, extents, blocks, where=where)
        return [self._checked(pair, where) for pair in pairs]

    def _checked(self, pair: Any, where: str) -> tuple[Any, Any]:
        try:
            loc, update = pair
        except (TypeError, ValueError):
            raise ValueError(
                f"{self.what} gave {type(pair).__name__} for {where}, not a (location, update) pair"
            ) from None
        parts = loc if isinstance(loc, tuple) else (loc,)
        try:
            if len(parts) > len(self.shape):
                raise IndexError("too many indices")
            runs = location_runs(loc, self.shape)
        except Exception as error:  # noqa: BLE001 -- named, with NumPy's reason
            raise ValueError(
                f"{self.what} gave location {loc!r} for {where}: not slices and integers "
                f"of the output, whose shape is {self.shape} ({error})"
            ) from None
        dropped = integer_axes(loc)
        kept = tuple(count for i, (_, count, _) in enumerate(runs) if i not in dropped)
        full = tuple(count for _, count, _ in runs)
        if not (hasattr(update, "shape") and hasattr(update, "dtype")):
            update = np.asarray(update)
        if tuple(update.shape) not in (kept, full):
            raise ValueError(
                f"{self.what} returned an update of shape {tuple(update.shape)} for "
                f"location {loc!r} in {where}, whose shape is {kept}"
            )
        return loc, _cast(update, self.dtype, self.what, where)
