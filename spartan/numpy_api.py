"""The NumPy-compatible namespace: everything ``import spartan as np`` code calls.

Each name is a distributed implementation written on spartan's operators; the list
is re-exported by :mod:`spartan`.
"""

from __future__ import annotations

import numpy as _np

from spartan import linalg
from spartan.frontend import random
from spartan.frontend.creation import (
    arange,
    array,
    asarray,
    diag,
    diagflat,
    empty,
    empty_like,
    eye,
    fromfunction,
    full,
    full_like,
    geomspace,
    identity,
    indices,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
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
    imag,
    isclose,
    iscomplex,
    iscomplexobj,
    isneginf,
    isposinf,
    isreal,
    isrealobj,
    nan_to_num,
    real,
    real_if_close,
    round,
    sinc,
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
from spartan.frontend.indexing import nonzero
from spartan.frontend.linalg import (
    diagonal,
    dot,
    einsum,
    inner,
    matmul,
    outer,
    tensordot,
    trace,
    vdot,
)
from spartan.frontend.manipulation import (
    astype,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    copy,
    expand_dims,
    flatten,
    hstack,
    matrix_transpose,
    moveaxis,
    ravel,
    reshape,
    retile,
    squeeze,
    stack,
    swapaxes,
    transpose,
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
from spartan.frontend.operators import filter, fold, join_update, map, newarray, scan, slice
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
from spartan.frontend.scan import cumprod, cumsum
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
    partition,
    searchsorted,
    sort,
)
from spartan.frontend.ufunc_objects import all_ufuncs as _all_ufuncs

from spartan.frontend.manipulation import (
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block,
    column_stack,
    concat,
    delete,
    dsplit,
    dstack,
    flip,
    fliplr,
    flipud,
    hsplit,
    insert,
    pad,
    permute_dims,
    repeat,
    resize,
    roll,
    rot90,
    split,
    tile,
    unstack,
    vsplit,
)
from spartan.frontend.scan import cumulative_prod, cumulative_sum, diff, ediff1d

globals().update(_all_ufuncs())

# NumPy's scalar types and constants, so `import spartan as np` code keeps working
for _name in (
    "float16 float32 float64 complex64 complex128 int8 int16 int32 int64 uint8 uint16 uint32 "
    "uint64 bool_ intp uintp dtype finfo iinfo newaxis pi e inf nan euler_gamma "
    "result_type can_cast promote_types issubdtype integer floating number generic "
    "complexfloating signedinteger unsignedinteger errstate isdtype"
).split():
    globals()[_name] = getattr(_np, _name)
bool = _np.bool_  # noqa: A001
from spartan.frontend.statistics import (
    average,
    bincount,
    corrcoef,
    cov,
    histogram,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
)
