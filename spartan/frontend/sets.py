"""Set routines on the distributed sample sort: ``unique`` (with first indices,
inverse and counts), ``isin``, ``intersect1d``, ``union1d``, ``setdiff1d``,
``setxor1d`` and the array API ``unique_*`` functions.

``unique`` sorts once (:class:`~spartan.frontend.sorting.SampleSort`), marks the first
element of every run with a map over two shifted views, and filters; the inverse is a
scan of the marks scattered back through the sort permutation.

>>> vals, counts = sp.unique(sp.asarray([2, 0, 2, 1, 2]), return_counts=True)
>>> vals, counts
(array([0, 1, 2]), array([1, 1, 3]))
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, ones, zeros
from spartan.frontend.fancy import Scatter, flatnonzero, take
from spartan.frontend.indexing import compress_mask
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.manipulation import concatenate
from spartan.frontend.scan import cumsum
from spartan.frontend.sorting import _records_field, sort, sorted_records, sorted_values
from spartan.frontend.ufuncs import elementwise


def _differs(equal_nan: bool, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ne = a != b
    if equal_nan and a.dtype.kind in "fc":
        ne &= ~(np.isnan(a) & np.isnan(b))
    return ne


def _run_starts(s: Array, equal_nan: bool = True) -> Array:
    """True where a sorted 1-d array starts a run of equal values."""
    n = s.shape[0]
    if n == 0:
        return zeros((0,), dtype=bool)
    tail = elementwise(functools.partial(_differs, equal_nan), s[1:], s[:-1], name="run_start")
    return concatenate([ones((1,), dtype=bool), tail])


def unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Any:
    """The sorted unique elements, optionally with first indices, inverse and counts.

    Building it forces the number of unique values (a filter's per-tile counts).
    """
    x = asarray(ar)
    if axis is not None:
        return _unique_slices(x, axis, return_index, return_inverse, return_counts, equal_nan)
    flat = x.ravel()
    n = flat.shape[0]
    if return_index or return_inverse:
        rec = sorted_records(flat)
        s = _records_field(rec, "v", flat.dtype)
    else:
        s = sorted_values(flat)
    starts = _run_starts(s, equal_nan)
    values = compress_mask(s, starts)
    extra: list[Array] = []
    if return_index:
        perm = _records_field(rec, "i", np.intp)
        extra.append(compress_mask(perm, starts))
    if return_inverse:
        perm = _records_field(rec, "i", np.intp)
        rank = cumsum(starts, dtype=np.intp) - 1
        inv = Array(Scatter(zeros((n,), dtype=np.intp)._expr, perm._expr, rank._expr))
        # NumPy 2: the inverse has the input's shape (0-d included) when axis is None
        extra.append(inv.reshape(x.shape) if x.ndim != 1 else inv)
    if return_counts:
        first = flatnonzero(starts)
        ends = concatenate([first[1:], asarray(np.array([n], dtype=np.intp))])
        extra.append(ends - first)
    return (values, *extra) if extra else values


class _RowsToRecords:
    """``f_join``: each row of a group becomes one record with a field per column."""

    def __init__(self, record: np.dtype):
        self.record = record

    def __call__(self, extents, block: np.ndarray):
        return [(extents[0].rows, np.ascontiguousarray(block).view(self.record).reshape(-1))]


class _RecordsToRows:
    def __init__(self, dtype: np.dtype, k: int):
        self.dtype, self.k = dtype, k

    def __call__(self, extents, block: np.ndarray):
        return [(extents[0].rows, np.ascontiguousarray(block).view(self.dtype).reshape(-1, self.k))]


def _unique_slices(
    x: Array,
    axis: Any,
    return_index: bool,
    return_inverse: bool,
    return_counts: bool,
    equal_nan: bool,
) -> Any:
    """``unique`` of the slices along ``axis``: each slice becomes one record (fields
    compare in order, like NumPy's lexicographic slice order), the records go through
    the 1-d ``unique``, and the unique records turn back into slices."""
    import math

    from spartan.frontend.manipulation import moveaxis
    from spartan.frontend.reductions import normalize_axes

    (ax,) = normalize_axes(axis, x.ndim)
    y = moveaxis(x, ax, 0)
    n, rest = y.shape[0], y.shape[1:]
    k = math.prod(rest)
    rows = y.reshape(n, k)
    record = np.dtype([(f"f{i}", x.dtype) for i in range(k)])
    recs = Array(
        JoinUpdate(
            _RowsToRecords(record), None, [rows._expr], [0], (n,), record, name="rows_to_records"
        )
    )
    out = unique(recs, return_index, return_inverse, return_counts, equal_nan=equal_nan)
    values, extra = (out[0], list(out[1:])) if isinstance(out, tuple) else (out, [])
    u = values.shape[0]
    back = Array(
        JoinUpdate(
            _RecordsToRows(x.dtype, k),
            None,
            [values._expr],
            [0],
            (u, k),
            x.dtype,
            name="records_to_rows",
        )
    )
    slices = moveaxis(back.reshape((u,) + rest), 0, ax)
    return (slices, *extra) if extra else slices


class UniqueAll(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCounts(NamedTuple):
    values: Array
    counts: Array


class UniqueInverse(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_values(x: Any) -> Array:
    """The array API ``unique_values`` (NaNs are all distinct, as the standard says)."""
    return unique(x, equal_nan=False)


def unique_counts(x: Any) -> UniqueCounts:
    return UniqueCounts(*unique(x, return_counts=True, equal_nan=False))


def unique_inverse(x: Any) -> UniqueInverse:
    return UniqueInverse(*unique(x, return_inverse=True, equal_nan=False))


def unique_all(x: Any) -> UniqueAll:
    return UniqueAll(
        *unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    )


class _IsIn:
    """``f_join``: membership of a group of rows in the whole of the test set."""

    def __init__(self, invert: bool):
        self.invert = invert

    def __call__(self, extents, block: np.ndarray, test: np.ndarray):
        return [(extents[0].rows, np.isin(block, test, invert=self.invert))]


def isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    kind: Any = None,
) -> Array:
    """Whether each element is in ``test_elements``.

    Communication: the test set goes to each group of ``element`` (one ``join_update``);
    ``element`` stays where it is.
    """
    x = asarray(element)
    test = asarray(test_elements).ravel()
    src = x.reshape(1) if x.ndim == 0 else x
    expr = JoinUpdate(
        _IsIn(invert), None, [src._expr, test._expr], [0, -1], src.shape, bool, name="isin"
    )
    out = Array(expr)
    return out.reshape(()) if x.ndim == 0 else out


def intersect1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False
) -> Any:
    """Sorted values in both arrays (with their first indices in each, if asked)."""
    a, b = asarray(ar1).ravel(), asarray(ar2).ravel()
    if return_indices:
        u1, i1 = unique(a, return_index=True)
        u2, i2 = unique(b, return_index=True)
    else:
        u1, u2 = (a, b) if assume_unique else (unique(a), unique(b))
    aux = sort(concatenate([u1, u2]))
    if aux.shape[0] < 2:
        common = aux[:0]
    else:
        common = compress_mask(aux[:-1], aux[1:] == aux[:-1])
    if not return_indices:
        return common
    from spartan.frontend.sorting import searchsorted

    return common, take(i1, searchsorted(u1, common)), take(i2, searchsorted(u2, common))


def union1d(ar1: Any, ar2: Any) -> Array:
    """Sorted values in either array."""
    return unique(concatenate([asarray(ar1).ravel(), asarray(ar2).ravel()]))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """Sorted unique values of ``ar1`` not in ``ar2``."""
    a = asarray(ar1).ravel() if assume_unique else unique(ar1)
    return compress_mask(a, isin(a, ar2, invert=True))


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """Sorted values in exactly one of the arrays."""
    a, b = (asarray(ar1).ravel(), asarray(ar2).ravel())
    if not assume_unique:
        a, b = unique(a), unique(b)
    aux = sort(concatenate([a, b]))
    if aux.shape[0] == 0:
        return aux
    t = ones((1,), dtype=bool)
    flag = concatenate([t, aux[1:] != aux[:-1], t])
    return compress_mask(aux, flag[1:] & flag[:-1])
