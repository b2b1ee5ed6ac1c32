"""Matrix products on ``join_update`` (thesis Fig. 2.2, 2.5).

``dot(X, Y)`` with X n×k and Y k×m has two implementations: (a) ``rows``, row groups of
X joined with the whole of Y, each writing its rows of Z; (b) ``inner``, column groups
of X joined with the matching row groups of Y, each producing a full n×m partial summed
with ``add``. Which one runs is the tiling optimizer's choice, made jointly with the
tilings (a :class:`Dot` is a ``dot`` node of its program); where the optimizer is not
asked, :func:`_rows_first` decides (the thesis's rule: (b) when ``n <= k``).

>>> sp.dot(sp.ones((4, 3)), sp.ones((3, 2)))
array([[3., 3.],
       [3., 3.],
       [3., 3.],
       [3., 3.]])
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.aliasing import read_only
from spartan.frontend.array import Array
from spartan.frontend.expr import Expr, register
from spartan.frontend.join_update import JoinUpdate

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


class _RowsTimesWhole:
    """The join of implementation (a): a row group of x times the whole y, at those
    rows of the output; it can say where before computing it, and compute it in place
    (:mod:`spartan.frontend.join_update`)."""

    def __call__(self, extents, xt: np.ndarray, y: np.ndarray):  # noqa: ANN001, ANN204
        return [(self.place(extents), xt @ y)]

    def place(self, extents) -> tuple[slice, ...]:  # noqa: ANN001
        return extents[0].rows

    def into(self, out: Any, xt: Any, y: Any) -> None:
        array_module(xt, y).matmul(xt, y, out=out)


_rows_times_whole = _RowsTimesWhole()


def _partial_product(extents, xt: np.ndarray, yt: np.ndarray):
    return [((), xt @ yt)]


def _rows_first(x: Array) -> bool:
    """Whether to join column groups of x with row groups of y (implementation (b)):
    the local rule, which decides where the optimizer does not (it failed).

    An already evaluated x decides by where it is cut: cut along its rows, implementation
    (a) reads it in place (a solver's ``A @ p`` every iteration); cut along its columns,
    (b) does. Otherwise the thesis's shape rule (Fig. 2.5): (b) when ``n <= k``.
    """
    t = x.tiling
    if (
        t is not None
        and not t.replicated
        and len(t.cuts) == 2
        and (t.cuts[0] > 1) != (t.cuts[1] > 1)
    ):
        return t.cuts[1] > 1
    return x.shape[0] <= x.shape[1]


@register
class Dot(JoinUpdate):
    """``x @ y`` of 1-D/2-D operands as one of two join_updates (the module docstring):
    ``"rows"`` (named ``dot(a)``: row groups of x times the whole y, each writing its
    rows, update_axis 0) or ``"inner"`` (``dot(b)``: column groups of x times the
    matching row groups of y, partial products summed with ``np.add``).

    ``impl=None`` leaves the algorithm to the optimizer: the node is a ``dot`` of its
    program, and planning hands the chosen algorithm back (:meth:`use_impl`) before the
    node is lowered or row pipelines are formed. Until then, and where the optimizer
    fails, it runs ``rule`` (:func:`_rows_first`'s choice). A forced ``impl`` is a plain
    join_update to the optimizer. A 1-D x has no rows to group: it always takes
    ``"inner"``.
    """

    def __init__(
        self,
        x: Expr,
        y: Expr,
        shape: Sequence[int],
        dtype: Any,
        impl: str | None = None,
        rule: str = "inner",
    ) -> None:
        super().__init__(_partial_product, np.add, [x, y], [x.ndim - 1, 0], shape, dtype)
        #: the algorithm named by the caller (the optimizer does not choose it), and the
        #: local rule's, which runs where no plan chose one
        self.forced, self.rule = impl, "inner" if x.ndim == 1 else rule
        # one site whichever algorithm the optimizer picks; a forced one learns apart
        self.site = ("dot", impl, self.site[1])
        self.use_impl(None)

    def use_impl(self, impl: str | None) -> None:
        """Run algorithm ``impl`` (``"rows"`` or ``"inner"``): the optimizer's choice,
        set before lowering (None: the forced one, else the local rule's). The join's
        parameters and name follow it, so the row pipelines recognize
        ``dot(a)``/``dot(b)`` whichever was chosen."""
        impl = impl or self.forced or self.rule
        x = self.children[0]
        if impl == "rows" and x.ndim == 2:
            self.f_join, self.f_accum, self.axes = _rows_times_whole, None, (0, -1)
            self.name, self.update_axis = "dot(a)", 0
        elif impl == "inner":
            self.f_join, self.f_accum, self.axes = _partial_product, np.add, (x.ndim - 1, 0)
            self.name, self.update_axis = "dot(b)", None
        else:
            raise ValueError(f"dot has no algorithm {impl!r} for a {x.ndim}-d first operand")
        self.impl = impl

    def program_node(self, p: Program, ins: list[int]) -> int:
        """A ``dot`` node (both algorithms open) unless the algorithm is forced. Its
        update bytes are exact geometry, so it has no site to learn them by: the plan
        is then the same on every run of a program, and so are the bits of its sums
        (a learned cost that flipped the algorithm would change their order)."""
        if self.forced is not None:
            return super().program_node(p, ins)
        return p.dot(ins[0], ins[1], self.dtype.itemsize, None, "dot")


def dot2d(x: Array, y: Array, impl: str | None = None) -> Array:
    """``x @ y`` for 1-D and 2-D arrays (NumPy's shapes: a 1-D ``x`` is a row, a 1-D ``y``
    a column, and those axes are dropped from the result), as a :class:`Dot`: the
    optimizer picks its algorithm unless ``impl`` (``"rows"``/``"inner"``) forces one;
    a 1-D ``x`` has no rows to group, so it takes ``"inner"``.

    >>> float(dot2d(sp.ones((4, 3)), sp.ones((3, 2)), impl="rows").sum())
    24.0
    """
    k, k2 = x.shape[-1], y.shape[0]
    if k != k2:
        raise ValueError(
            f"shapes {x.shape} and {y.shape} not aligned: {k} (dim {x.ndim - 1}) != {k2} (dim 0)"
        )
    shape = x.shape[:-1] + y.shape[1:]
    dtype = np.result_type(x.dtype, y.dtype)
    rule = "inner" if x.ndim == 1 or _rows_first(x) else "rows"
    return Array(Dot(x._expr, y._expr, shape, dtype, impl, rule))


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """Dot product of two arrays (see :func:`numpy.dot`), for 0-, 1- and 2-d inputs."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.reductions import _out

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return _out(x * y, out)
    if x.ndim > 2 or y.ndim > 2:
        return _out(tensordot(x, y, axes=([x.ndim - 1], [max(y.ndim - 2, 0)])), out)
    return _out(dot2d(x, y), out)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` (see :func:`numpy.matmul`); scalars are rejected like NumPy does."""
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if x.ndim <= 2 and y.ndim <= 2:
        return dot(x, y)
    from spartan.frontend import manipulation as mp

    # (checked before einsum, which would broadcast a length-1 summed axis)
    k = y.shape[0] if y.ndim == 1 else y.shape[-2]
    if x.shape[-1] != k:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n?,k),(k,m?)->(n?,m?) (size {k} is different from {x.shape[-1]})"
        )
    # batched: broadcast the leading axes, then groups of batch elements (einsum)
    if x.ndim == 1 or y.ndim == 1:
        spec = "...j,j->..." if y.ndim == 1 else "j,...jk->...k"
        return einsum(spec, x, y)
    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    x = mp.broadcast_to(x, batch + x.shape[-2:])
    y = mp.broadcast_to(y, batch + y.shape[-2:])
    return einsum("...ij,...jk->...ik", x, y)


def _tensordot_axes(axes: Any) -> tuple[list[Any], list[Any]]:
    """The summed axes of each operand, read as NumPy's ``tensordot`` reads ``axes``."""
    try:
        iter(axes)
    except TypeError:
        n = operator.index(axes)
        return list(range(-n, 0)), list(range(n))
    ax_a, ax_b = axes
    ax_a = list(ax_a) if isinstance(ax_a, Sequence | np.ndarray) else [ax_a]
    ax_b = list(ax_b) if isinstance(ax_b, Sequence | np.ndarray) else [ax_b]
    return ax_a, ax_b


def tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    """Sum products over the given axes (see :func:`numpy.tensordot`), via reshapes.

    Empty operands give NumPy's result (zeros where nothing is summed) without a task.

    >>> sp.tensordot(sp.ones((3, 4)), sp.ones((4, 2)), axes=1).shape
    (3, 2)
    """
    from spartan.frontend.creation import asarray, zeros

    ax_a, ax_b = _tensordot_axes(axes)
    if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    x, y = asarray(a), asarray(b)
    if len(ax_a) != len(ax_b):
        raise ValueError("shape-mismatch for sum")
    ax_a = [normalize_axis(i, x.ndim) for i in ax_a]
    ax_b = [normalize_axis(j, y.ndim) for j in ax_b]
    if any(x.shape[i] != y.shape[j] for i, j in zip(ax_a, ax_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [i for i in range(y.ndim) if i not in ax_b]
    k = math.prod(x.shape[i] for i in ax_a)
    m = math.prod(x.shape[i] for i in free_a)
    n = math.prod(y.shape[i] for i in free_b)
    shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[i] for i in free_b)
    if k == 0 or m == 0 or n == 0:
        # an empty sum is zero (NumPy's dot of empty operands); nothing to compute
        return zeros(shape, dtype=np.result_type(x.dtype, y.dtype))
    xa = x.transpose(free_a + ax_a).reshape(m, k)
    yb = y.transpose(ax_b + free_b).reshape(k, n)
    return dot2d(xa, yb).reshape(shape)


def normalize_axis(axis: Any, ndim: int) -> int:
    """One axis as a non-negative index, with NumPy's ``AxisError`` when out of range."""
    i = operator.index(axis)
    if not -ndim <= i < ndim:
        raise np.exceptions.AxisError(i, ndim)
    return i % ndim


def vdot(a: Any, b: Any, /) -> Array:
    """Dot product of the flattened arrays, the first conjugated (see :func:`numpy.vdot`).

    >>> float(sp.vdot(sp.ones(3), sp.ones(3)))
    3.0
    """
    from spartan.frontend.creation import asarray

    x = asarray(a)
    # conj of a real array is the array: np.conj would turn bools into int8
    x = np.conj(x) if x.dtype.kind == "c" else x
    return dot(x.ravel(), asarray(b).ravel())


def inner(a: Any, b: Any, /) -> Array:
    """Sum of products over the last axes (see :func:`numpy.inner`).

    >>> sp.inner(sp.ones((2, 3)), sp.ones((4, 3))).shape
    (2, 4)
    """
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]))


def outer(a: Any, b: Any, out: Any = None) -> Array:
    """Outer product of the flattened ``a`` and ``b`` (see :func:`numpy.outer`).

    >>> sp.outer(sp.arange(3), sp.arange(2)).shape
    (3, 2)
    """
    from spartan.frontend.creation import asarray
    from spartan.frontend.reductions import _out

    return _out(asarray(a).ravel()[:, None] * asarray(b).ravel()[None, :], out)


class _DiagonalRun:
    """``f_join`` of :func:`diagonal`: the diagonal entries held by a group of rows."""

    def __init__(self, offset: int, length: int):
        self.offset, self.length = offset, length

    def __call__(self, extents, block: np.ndarray):
        lo, hi = extents[0].box[-2]
        r_off, c_off = max(-self.offset, 0), max(self.offset, 0)
        d0, d1 = max(lo - r_off, 0), min(hi - r_off, self.length)
        if d1 <= d0:
            return []
        d = np.arange(d0, d1)
        vals = block[..., d + r_off - lo, d + c_off]
        lead = (slice(None),) * (block.ndim - 2)
        return [(lead + (slice(d0, d1),), vals)]


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The diagonal over ``axis1``/``axis2``, appended as the last axis (a read-only
    copy; NumPy's is a read-only view).

    Communication: none beyond reading the rows each group holds (groups follow the
    tiles along ``axis1``).
    """
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.reductions import normalize_axes

    x = asarray(a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    (i,), (j,) = normalize_axes(axis1, x.ndim), normalize_axes(axis2, x.ndim)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    y = moveaxis(x, (i, j), (-2, -1))
    n, m = y.shape[-2:]
    offset = int(offset)
    length = max(0, min(n - max(-offset, 0), m - max(offset, 0)))
    shape = y.shape[:-2] + (length,)
    out = Array(
        JoinUpdate(
            _DiagonalRun(offset, length),
            None,
            [y._expr],
            [y.ndim - 2],
            shape,
            x.dtype,
            name="diagonal",
        )
    )
    return read_only(out)  # NumPy's diagonal is a read-only view


def trace(
    a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
) -> Any:
    """Sum along a diagonal (see :func:`numpy.trace`)."""
    from spartan.frontend.reductions import sum as _sum

    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, rhs = spec.split("->")
    else:
        lhs, rhs = spec, None
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError("more operands provided to einstein sum function than specified")
    letters = sorted({c for t in terms for c in t if c.isalpha()})
    ell = "".join(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in letters)
    nell = max((nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims)), default=0)
    out_terms = []
    for t, nd in zip(terms, ndims):
        if "..." in t:
            k = nd - len(t.replace("...", ""))
            t = t.replace("...", ell[nell - k : nell])
        if len(t) != nd:
            raise ValueError(
                f"einstein sum subscripts string contains too many subscripts for operand "
                f"{len(out_terms)}"
            )
        out_terms.append(t)
    if rhs is None:
        counts = {c: sum(t.count(c) for t in out_terms) for c in letters}
        rhs = ell[:nell] + "".join(c for c in letters if counts[c] == 1)
    else:
        rhs = rhs.replace("...", ell[:nell])
    return out_terms, rhs


def _batch_index(terms: list[str], rhs: str, xs: list, sizes: dict) -> str | None:
    """An index every operand and the output carry at full size (a batch axis)."""
    for c in rhs:
        if all(c in t and x.shape[t.index(c)] == sizes[c] for t, x in zip(terms, xs)):
            if sizes[c] > 1:
                return c
    return None


class _EinsumGroup:
    """``f_join``: NumPy's einsum on one group of batch slices, written at its slices."""

    def __init__(self, spec: str, out_axis: int, in_axis: int):
        self.spec, self.out_axis, self.in_axis = spec, out_axis, in_axis

    def __call__(self, extents, *blocks: np.ndarray):
        lo, hi = extents[0].box[self.in_axis]
        out = np.einsum(self.spec, *blocks)
        return [((slice(None),) * self.out_axis + (slice(lo, hi),), out)]


def _grouped_einsum(terms: list[str], rhs: str, xs: list, sizes: dict, c: str) -> Array:
    """Einsum split into groups along the batch index ``c``: each group runs NumPy's
    einsum where its slices live. Communication: none when the operands are cut along
    ``c`` alike; otherwise each operand's group is read once."""
    spec = ",".join(terms) + "->" + rhs
    dtype = np.einsum(spec, *[np.ones((1,) * x.ndim, x.dtype) for x in xs]).dtype
    shape = tuple(sizes[k] for k in rhs)
    axes = [t.index(c) for t in terms]
    task = _EinsumGroup(spec, rhs.index(c), axes[0])
    return Array(JoinUpdate(task, None, [x._expr for x in xs], axes, shape, dtype, name="einsum"))


def _interleaved(operands: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """NumPy's second einsum form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as a
    subscripts string and the operands (sublist integers 0-51 name the letters)."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    def term(sublist: Any) -> str:
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
                continue
            i = operator.index(s)
            if not 0 <= i < len(letters):
                raise ValueError(
                    f"subscript is not within the valid range [0, {len(letters)}): {i}"
                )
            out.append(letters[i])
        return "".join(out)

    arrays, terms = operands[0::2], operands[1::2]
    rhs = ""
    if len(operands) % 2:  # a last sublist: the output's
        arrays, rhs = arrays[:-1], "->" + term(operands[-1])
    return ",".join(term(t) for t in terms) + rhs, tuple(arrays)


def einsum(
    subscripts: Any,
    *operands: Any,
    out: Any = None,
    optimize: Any = False,
    dtype: Any = None,
    order: str = "K",
    casting: str = "safe",
) -> Any:
    """Einstein summation (see :func:`numpy.einsum`), any number of operands, in either
    of NumPy's forms (a subscripts string, or operands interleaved with sublists).

    Plain two-operand contractions (``ij,jk->ik``, ``ijk,kl->ijl``...) run as a
    tensordot (``join_update``); everything else aligns the operands by views, multiplies
    them element-wise and folds the summed indices (the product is never stored: the map
    fuses into the fold). Repeated indices within one operand take a diagonal first.
    The result has NumPy's dtype (``int8`` in, ``int8`` out: no promotion of sums);
    ``dtype=`` computes in that type, and it and ``out=`` obey ``casting=`` as NumPy's
    do; ``order=`` is checked and otherwise changes nothing (tiles have no layout the
    user sees).

    >>> a, b = sp.ones((2, 3)), sp.ones((3, 2))
    >>> sp.einsum("ij,jk->ik", a, b)
    array([[3., 3.],
           [3., 3.]])
    >>> c = sp.zeros((2, 2))
    >>> sp.einsum(a, [0, 1], b, [1, 2], [0, 2], out=c) is c
    True
    """
    from spartan.frontend.creation import asarray
    from spartan.frontend.ufuncs import _store

    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    xs = [asarray(o) for o in operands]
    # NumPy's dtype and its errors (casting=, dtype=, order=, out='s dtype) from a probe
    # of ones: shapes of ones broadcast with any subscripts
    ones = [np.ones((1,) * x.ndim, x.dtype) for x in xs]
    kw = {"dtype": dtype, "order": order, "casting": casting}
    result_dtype = np.einsum(subscripts, *ones, **kw).dtype
    if out is not None:
        np.einsum(subscripts, *ones, out=np.empty((1,) * np.ndim(out), out.dtype), **kw)
    if dtype is not None:
        # NumPy computes in dtype (its casting of the operands was checked above)
        xs = [x.astype(dtype, copy=False) for x in xs]
    return _store(_einsum(subscripts, xs, result_dtype), out)


def _einsum(subscripts: str, xs: list[Array], dtype: np.dtype) -> Array:
    """:func:`einsum` of spartan arrays ``xs``, its result of ``dtype``."""
    from spartan.frontend.manipulation import transpose
    from spartan.frontend.reductions import sum as _sum

    terms, rhs = _parse_einsum(subscripts, [x.ndim for x in xs])
    sizes: dict[str, int] = {}
    for t, x in zip(terms, xs):
        for c, n in zip(t, x.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise ValueError(
                    f"operands could not be broadcast together with remapped shapes: "
                    f"index '{c}' has sizes {sizes[c]} and {n}"
                )
            sizes[c] = max(sizes[c], n)
    # repeated index inside one term: its diagonal
    for k, (t, x) in enumerate(zip(terms, xs)):
        while len(set(t)) != len(t):
            c = next(c for c in t if t.count(c) > 1)
            i = t.index(c)
            j = t.index(c, i + 1)
            x = diagonal(x, 0, i, j)
            t = t[:i] + t[i + 1 : j] + t[j + 1 :] + c
        terms[k], xs[k] = t, x
    batch = _batch_index(terms, rhs, xs, sizes)
    if batch is not None:
        return _grouped_einsum(terms, rhs, xs, sizes, batch).astype(dtype, copy=False)
    if len(xs) == 2:
        a, b = terms
        shared = [c for c in a if c in b]
        if (
            shared
            and all(c not in rhs for c in shared)
            and all(sizes[c] == xs[0].shape[a.index(c)] == xs[1].shape[b.index(c)] for c in shared)
        ):
            out = tensordot(
                xs[0], xs[1], axes=([a.index(c) for c in shared], [b.index(c) for c in shared])
            )
            got = [c for c in a if c not in shared] + [c for c in b if c not in shared]
            if sorted(got) == sorted(rhs) and len(set(got)) == len(got):
                out = transpose(out, [got.index(c) for c in rhs]) if got != list(rhs) else out
                return out.astype(dtype, copy=False)
    allidx = list(rhs) + sorted({c for t in terms for c in t} - set(rhs))
    aligned = []
    for t, x in zip(terms, xs):
        present = [c for c in allidx if c in t]
        y = transpose(x, [t.index(c) for c in present]) if list(t) != present else x
        key = tuple(slice(None) if c in t else None for c in allidx)
        aligned.append(y[key])
    prod = aligned[0]
    for y in aligned[1:]:
        prod = prod * y
    summed = tuple(range(len(rhs), len(allidx)))
    if not summed:
        from spartan.frontend.manipulation import broadcast_to

        return broadcast_to(prod.astype(dtype, copy=False), tuple(sizes[c] for c in rhs))
    # (in dtype: np.sum would promote small integers and booleans, einsum does not)
    return _sum(prod, axis=summed, dtype=dtype)


def kron(a: Any, b: Any) -> Array:
    """Kronecker product: a broadcast product of the two arrays, reshaped."""
    from spartan.frontend.creation import asarray

    x, y = asarray(a), asarray(b)
    nd = max(x.ndim, y.ndim)
    x = x.reshape((1,) * (nd - x.ndim) + x.shape)
    y = y.reshape((1,) * (nd - y.ndim) + y.shape)
    xe = x[tuple(s for _ in range(nd) for s in (slice(None), None))]
    ye = y[tuple(s for _ in range(nd) for s in (None, slice(None)))]
    prod = xe * ye
    return prod.reshape(tuple(m * n for m, n in zip(x.shape, y.shape)))


def _cross_term(p: Any, q: Any, r: Any, t: Any) -> Any:
    """``p * q - r * t`` where a missing component (``None``: the z of a 2-vector) is
    zero, as NumPy leaves such terms out rather than multiplying by zero."""
    first = None if p is None or q is None else p * q
    second = None if r is None or t is None else r * t
    if second is None:
        return first
    return -second if first is None else first - second


def cross(
    a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None
) -> Array:
    """Cross product of 2- or 3-vectors (see :func:`numpy.cross`), from component views.

    A 2-vector has a zero z component; two 2-vectors give the z component alone (NumPy
    2 deprecates 2-vectors, and so warns the same ``DeprecationWarning``).

    >>> sp.cross(sp.asarray([1, 0, 0]), sp.asarray([0, 1, 0])).to_numpy()
    array([0, 0, 1])
    """
    import warnings

    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import moveaxis, stack

    x, y = asarray(a), asarray(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if x.ndim == 0 or y.ndim == 0:
        raise np.exceptions.AxisError(axisa if x.ndim == 0 else axisb, 0)
    x, y = moveaxis(x, axisa, -1), moveaxis(y, axisb, -1)
    nx, ny = x.shape[-1], y.shape[-1]
    if nx not in (2, 3) or ny not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if nx == 2 or ny == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of "
            "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
    shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    dtype = np.promote_types(x.dtype, y.dtype)
    xs = [x[..., i].astype(dtype, copy=False) for i in range(nx)] + [None] * (3 - nx)
    ys = [y[..., i].astype(dtype, copy=False) for i in range(ny)] + [None] * (3 - ny)
    z = _cross_term(xs[0], ys[1], xs[1], ys[0])
    if nx == 2 and ny == 2:
        from spartan.frontend.manipulation import broadcast_to

        return broadcast_to(z, shape) if z.shape != shape else z
    if len(shape) > 0:
        normalize_axis(axisc, len(shape) + 1)  # NumPy's AxisError for a bad axisc
    comps = [_cross_term(xs[1], ys[2], xs[2], ys[1]), _cross_term(xs[2], ys[0], xs[0], ys[2]), z]
    from spartan.frontend.manipulation import broadcast_to

    comps = [broadcast_to(c, shape) if c.shape != shape else c for c in comps]
    out = stack(comps, axis=-1)
    return moveaxis(out, -1, axisc) if out.ndim > 1 else out


def _gufunc_probe(
    ufunc: np.ufunc, xs: Sequence[Array], out: Any, kwargs: dict[str, Any]
) -> np.dtype:
    """NumPy's result dtype of ``ufunc`` (a generalized ufunc) for these operands and
    keywords, and NumPy's own errors for keywords it rejects (``axes=``, ``axis=``,
    ``keepdims=``, ``casting=``, ``order=``, ``signature=``...), from one call on
    stand-ins of ones with the operands' number of axes: no data is read."""
    given = {k: v for k, v in kwargs.items() if v is not None}
    if not given.get("keepdims", True):
        del given["keepdims"]  # (NumPy rejects even keepdims=False where it has none)
    ones = [np.ones((1,) * x.ndim, x.dtype) for x in xs]
    dtype = ufunc(*ones, **given).dtype
    if out is not None:
        ufunc(*ones, out=np.empty((1,) * np.ndim(out), out.dtype), **given)
    return dtype


def _core_axis(entry: Any) -> int:
    """One core axis of a gufunc's ``axes=`` entry (an int or a 1-tuple)."""
    return operator.index(entry if not isinstance(entry, Sequence) else entry[0])


def vecdot(
    x1: Any,
    x2: Any,
    /,
    out: Any = None,
    *,
    casting: str = "same_kind",
    order: str = "K",
    dtype: Any = None,
    subok: bool = True,
    signature: Any = None,
    axes: Any = None,
    axis: Any = None,
    keepdims: bool = False,
) -> Array:
    """Vector dot product along ``axis`` (the first argument conjugated), NumPy's
    generalized ufunc ``(n),(n)->()``: ``axis`` is taken in each operand, their sizes
    there must be equal (they do not broadcast), the other axes broadcast, and the result
    keeps NumPy's dtype (``uint8`` in, ``uint8`` out; the sum wraps around like NumPy's).
    NumPy's ufunc keywords work as NumPy's: ``axes=[(i,), (j,)]`` (and ``(k,)`` for the
    output with ``keepdims=True``), ``dtype=``/``signature=`` (computed in that type),
    ``casting=``, ``out=`` (a spartan array, rebound to the result); ``order=`` and
    ``subok=`` are checked and change nothing (spartan arrays have no layout or
    subclasses).

    >>> sp.vecdot(sp.ones((2, 3)), sp.ones(3)).to_numpy()
    array([3., 3.])
    >>> sp.vecdot(sp.ones((3, 2)), sp.ones((3, 2)), axis=0, keepdims=True).shape
    (1, 2)
    """
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import expand_dims, moveaxis
    from spartan.frontend.reductions import sum as _sum
    from spartan.frontend.ufuncs import _store

    a, b = asarray(x1), asarray(x2)
    for k, v in enumerate((a, b)):
        if v.ndim == 0:
            raise ValueError(
                f"vecdot: Input operand {k} does not have enough dimensions (has 0, gufunc "
                f"core with signature (n),(n)->() requires 1)"
            )
    kw = {
        "casting": casting, "order": order, "dtype": dtype, "subok": subok,
        "signature": signature, "axes": axes, "axis": axis, "keepdims": keepdims,
    }  # fmt: skip
    # NumPy's dtype for these operands (its TypeError for ones vecdot has no loop for)
    result_dtype = _gufunc_probe(np.vecdot, (a, b), out, kw)
    if axes is not None:
        ia, ib = _core_axis(axes[0]), _core_axis(axes[1])
        io = _core_axis(axes[2]) if len(axes) > 2 and keepdims else -1
    else:
        ia = ib = io = -1 if axis is None else operator.index(axis)
    a = moveaxis(a, normalize_axis(ia, a.ndim), -1)
    b = moveaxis(b, normalize_axis(ib, b.ndim), -1)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            f"signature (n),(n)->() (size {b.shape[-1]} is different from {a.shape[-1]})"
        )
    if dtype is not None or signature is not None:
        # the loop NumPy picks runs in that type (its casting was checked above)
        a, b = a.astype(result_dtype, copy=False), b.astype(result_dtype, copy=False)
    # (the core sizes are equal: the product broadcasts the other axes alone)
    prod = (np.conj(a) if a.dtype.kind == "c" else a) * b
    result = _sum(prod, axis=-1, dtype=result_dtype)
    if keepdims:
        result = expand_dims(result, normalize_axis(io, result.ndim + 1))
    return _store(result, out)


def _matrix_vector(name: str, x1: Any, x2: Any, out: Any, axes: Any, kw: dict[str, Any]) -> Array:
    """:func:`matvec` (``(m,n),(n)->(m)``) or :func:`vecmat` (``(n),(n,m)->(m)``): the
    core axes moved last (``axes=``), one :func:`vecdot`, the result's core axis moved
    where ``axes`` puts it."""
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.ufuncs import _store

    ufunc = getattr(np, name)
    x, y = asarray(x1), asarray(x2)
    result_dtype = _gufunc_probe(ufunc, (x, y), out, {**kw, "axes": axes})
    if kw["dtype"] is not None or kw["signature"] is not None:
        x, y = x.astype(result_dtype, copy=False), y.astype(result_dtype, copy=False)
    matrix_first = name == "matvec"
    m, v = (x, y) if matrix_first else (y, x)
    io = -1
    if axes is not None:
        m_axes = axes[0] if matrix_first else axes[1]
        v_axis = _core_axis(axes[1] if matrix_first else axes[0])
        m = moveaxis(m, [normalize_axis(i, m.ndim) for i in m_axes], [-2, -1])
        v = moveaxis(v, normalize_axis(v_axis, v.ndim), -1)
        io = _core_axis(axes[2]) if len(axes) > 2 else -1
    if matrix_first:
        # (vecdot conjugates its first operand: conjugated twice, the matrix is as given)
        result = vecdot(np.conj(m) if m.dtype.kind == "c" else m, v[..., None, :])
    else:
        m = moveaxis(m, -2, -1)  # (n, m) -> (m, n): n last, as vecdot sums
        result = vecdot(v[..., None, :], m)
    result = result.astype(result_dtype, copy=False)
    if io != -1:
        result = moveaxis(result, -1, normalize_axis(io, result.ndim))
    return _store(result, out)


def matvec(
    x1: Any,
    x2: Any,
    /,
    out: Any = None,
    *,
    casting: str = "same_kind",
    order: str = "K",
    dtype: Any = None,
    subok: bool = True,
    signature: Any = None,
    axes: Any = None,
    axis: Any = None,
    keepdims: bool = False,
) -> Array:
    """Matrix-vector product over the last axes (NumPy's gufunc ``(m,n),(n)->(m)``),
    with NumPy's ufunc keywords as :func:`vecdot` takes them (``axes=`` names the
    matrix's two core axes, the vector's and the output's).

    >>> sp.matvec(sp.ones((2, 3)), sp.ones(3)).to_numpy()
    array([3., 3.])
    """
    kw = {
        "casting": casting, "order": order, "dtype": dtype, "subok": subok,
        "signature": signature, "axis": axis, "keepdims": keepdims,
    }  # fmt: skip
    return _matrix_vector("matvec", x1, x2, out, axes, kw)


def vecmat(
    x1: Any,
    x2: Any,
    /,
    out: Any = None,
    *,
    casting: str = "same_kind",
    order: str = "K",
    dtype: Any = None,
    subok: bool = True,
    signature: Any = None,
    axes: Any = None,
    axis: Any = None,
    keepdims: bool = False,
) -> Array:
    """Vector-matrix product over the last axes, the vector conjugated (NumPy's gufunc
    ``(n),(n,m)->(m)``), with NumPy's ufunc keywords as :func:`matvec` takes them.

    >>> sp.vecmat(sp.ones(2), sp.ones((2, 3))).to_numpy()
    array([2., 2., 2.])
    """
    kw = {
        "casting": casting, "order": order, "dtype": dtype, "subok": subok,
        "signature": signature, "axis": axis, "keepdims": keepdims,
    }  # fmt: skip
    return _matrix_vector("vecmat", x1, x2, out, axes, kw)


def einsum_path(subscripts: str, *operands: Any, optimize: Any = "greedy", **kwargs: Any) -> Any:
    """NumPy's contraction order for these operand shapes (it needs shapes only, so
    zero-stride stand-ins are passed; no data is read)."""
    from spartan.frontend.creation import asarray

    stand_ins = [
        np.broadcast_to(np.zeros((), asarray(o).dtype), asarray(o).shape) for o in operands
    ]
    return np.einsum_path(subscripts, *stand_ins, optimize=optimize, **kwargs)
