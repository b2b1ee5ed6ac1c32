"""The NumPy-compatible namespace: everything ``import spartan as np`` code calls.

Each name is a distributed implementation written on spartan's operators; the list
is re-exported by :mod:`spartan`.
"""

from __future__ import annotations

from typing import Any as _Any

import numpy as _np

from spartan import fft, lib, linalg, special
from spartan.frontend import random
from spartan.frontend.alongaxis import apply_along_axis, apply_over_axes
from spartan.frontend.array import Array as _Array
from spartan.frontend.array_api import array_namespace_info, from_dlpack
from spartan.frontend.calculus import gradient, trapezoid
from spartan.frontend.convolution import convolve, correlate
from spartan.frontend.creation import (
    arange,
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    bartlett,
    blackman,
    diag,
    diagflat,
    empty,
    empty_like,
    eye,
    fromfunction,
    full,
    full_like,
    geomspace,
    hamming,
    hanning,
    identity,
    indices,
    kaiser,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    require,
    tri,
    tril,
    triu,
    zeros,
    zeros_like,
)
from spartan.frontend.elementwise import (
    allclose,
    angle,
    around,
    array_equal,
    array_equiv,
    clip,
    fix,
    i0,
    imag,
    isclose,
    iscomplex,
    iscomplexobj,
    isneginf,
    isposinf,
    isreal,
    isrealobj,
    nan_to_num,
    piecewise,
    real,
    real_if_close,
    round,
    sinc,
    unwrap,
)
from spartan.frontend.fancy import (
    argwhere,
    choose,
    compress,
    extract,
    flatnonzero,
    put,
    select,
    take,
    take_along_axis,
)
from spartan.frontend.hdf5_io import from_hdf5, to_hdf5
from spartan.frontend.index_tricks import (
    copyto,
    diag_indices,
    diag_indices_from,
    fill_diagonal,
    ix_,
    mask_indices,
    place,
    put_along_axis,
    putmask,
    ravel_multi_index,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
    unravel_index,
)
from spartan.frontend.indexing import nonzero
from spartan.frontend.inspection import (
    array2string,
    array_repr,
    array_str,
    asarray_chkfinite,
    isfortran,
    may_share_memory,
    shares_memory,
)
from spartan.frontend.interpolation import digitize, interp
from spartan.frontend.manipulation import (
    append,
    array_split,
    astype,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block,
    broadcast_arrays,
    broadcast_to,
    column_stack,
    concat,
    concatenate,
    copy,
    delete,
    dsplit,
    dstack,
    expand_dims,
    flatten,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    insert,
    matrix_transpose,
    moveaxis,
    ndim,
    pad,
    permute_dims,
    ravel,
    repeat,
    reshape,
    resize,
    retile,
    roll,
    rollaxis,
    rot90,
    row_stack,
    shape,
    size,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
    trim_zeros,
    unstack,
    vsplit,
    vstack,
    where,
)
from spartan.frontend.nanfuncs import (
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
)
from spartan.frontend.npyio import fromfile, load, save, savez, tofile
from spartan.frontend.operators import filter, fold, join_update, map, newarray, scan, slice
from spartan.frontend.polynomials import (
    poly,
    polyadd,
    polyder,
    polyfit,
    polyint,
    polymul,
    polysub,
    polyval,
    roots,
    vander,
)
from spartan.frontend.products import (
    cross,
    diagonal,
    dot,
    einsum,
    einsum_path,
    inner,
    kron,
    matmul,
    matvec,
    outer,
    tensordot,
    trace,
    vdot,
    vecdot,
    vecmat,
)
from spartan.frontend.reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    ptp,
    std,
    sum,
    var,
)
from spartan.frontend.scan import cumprod, cumsum, cumulative_prod, cumulative_sum, diff, ediff1d
from spartan.frontend.sets import (
    intersect1d,
    isin,
    setdiff1d,
    setxor1d,
    union1d,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from spartan.frontend.sorting import (
    argpartition,
    argsort,
    lexsort,
    partition,
    searchsorted,
    sort,
    sort_complex,
)
from spartan.frontend.statistics import (
    average,
    bincount,
    corrcoef,
    cov,
    histogram,
    histogram2d,
    histogram_bin_edges,
    histogramdd,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
)
from spartan.frontend.stored import StoreChangedError
from spartan.frontend.textio import genfromtxt, loadtxt, savetxt
from spartan.frontend.ufunc_objects import all_ufuncs as _all_ufuncs
from spartan.frontend.ufunc_objects import frompyfunc
from spartan.frontend.zarr_io import from_zarr, to_zarr

globals().update(_all_ufuncs())

# NumPy's scalar types and constants, so `import spartan as np` code keeps working.
# (None of these takes an array through ``__array_function__``: NumPy's own dispatchers,
# result_type, can_cast, min_scalar_type and common_type, have their versions below, as
# ``np.result_type(x)`` comes back to spartan for the implementation of that name.)
for _name in (
    "float16 float32 float64 complex64 complex128 int8 int16 int32 int64 uint8 uint16 uint32 "
    "uint64 bool_ intp uintp dtype finfo iinfo newaxis pi e inf nan euler_gamma "
    "promote_types issubdtype integer floating number generic "
    "complexfloating signedinteger unsignedinteger errstate isdtype broadcast_shapes "
    "isscalar iterable mintypecode typename geterr seterr "
    "geterrcall seterrcall get_printoptions set_printoptions printoptions getbufsize "
    "setbufsize base_repr binary_repr format_float_positional format_float_scientific"
).split():
    globals()[_name] = getattr(_np, _name)
bool = _np.bool_  # noqa: A001


def _stand_in(x: _Any) -> _Any:
    """``x`` as NumPy's type functions take it: a spartan array becomes a NumPy array of
    its dtype and shape that holds no data (one element, zero strides), so nothing is
    computed or fetched. NumPy 2's promotion (NEP 50) reads only the dtype of an array,
    0-d ones included; Python scalars stay as they are (they are "weak")."""
    if isinstance(x, _Array):
        return _np.broadcast_to(_np.zeros((), x.dtype), x.shape)
    return x


def result_type(*arrays_and_dtypes: _Any) -> _np.dtype:
    """The dtype NumPy's promotion gives these arrays, dtypes and scalars (see
    :func:`numpy.result_type`); spartan arrays count by their dtype, unevaluated.

    >>> sp.result_type(sp.arange(3, dtype=sp.uint8), 1.0)
    dtype('float64')
    """
    return _np.result_type(*(_stand_in(a) for a in arrays_and_dtypes))


def can_cast(from_: _Any, to: _Any, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype or an array, by its dtype) casts to ``to`` under
    ``casting`` (see :func:`numpy.can_cast`).

    >>> sp.can_cast(sp.arange(3, dtype=sp.int8), sp.float32)
    True
    """
    return _np.can_cast(_stand_in(from_), _stand_in(to), casting)


def min_scalar_type(a: _Any) -> _np.dtype:
    """The smallest dtype that holds ``a`` (see :func:`numpy.min_scalar_type`): an array
    of one or more dimensions keeps its dtype, as NumPy's does; a 0-d spartan array is
    judged by its value, like NumPy's (one element is fetched).

    >>> sp.min_scalar_type(sp.asarray(10))
    dtype('uint8')
    """
    if isinstance(a, _Array) and a.ndim == 0:
        return _np.min_scalar_type(_np.asarray(a.to_numpy()))
    return _np.min_scalar_type(_stand_in(a))


def common_type(*arrays: _Any) -> type:
    """The inexact scalar type common to the arrays (see :func:`numpy.common_type`).

    >>> sp.common_type(sp.arange(3), sp.ones(2, dtype=sp.float32))
    <class 'numpy.float64'>
    """
    return _np.common_type(*(_stand_in(a) for a in arrays))
