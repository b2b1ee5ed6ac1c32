"""NumPy's aliasing rules: views share their base, writes through any view are seen by
every other view, copies share nothing. A random sequence of views and writes is run
on NumPy and on spartan side by side and compared after every step."""

from __future__ import annotations

import math

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
from spartan.config import Config

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _basic_key(draw, shape):
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "all"]))
        if kind == "int" and n:
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            step = draw(st.sampled_from([1, 2, -1, -2]))
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            key.append(slice(start, stop, step))
        else:
            key.append(slice(None))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def _factor(draw, size):
    """A random shape of ``size`` elements, 1 to 3 axes."""
    if size == 0:
        return (0,)
    shape = []
    rest = size
    for _ in range(draw(st.integers(0, 2))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divisors))
        shape.append(d)
        rest //= d
    shape.append(rest)
    return tuple(shape)


def _view(draw, a):
    """A view (or, where NumPy copies, a copy) of ``a``: the function applying it."""
    kind = draw(st.sampled_from(["index", "index", "T", "transpose", "reshape", "ravel", "swap"]))
    if kind == "index" or a.ndim == 0:
        key = _basic_key(draw, a.shape)
        return f"[{key}]", lambda x: x[key]
    if kind == "T":
        return ".T", lambda x: x.T
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(a.ndim))))
        return f".transpose({perm})", lambda x: x.transpose(perm)
    if kind == "reshape":
        shape = _factor(draw, a.size)
        return f".reshape({shape})", lambda x: x.reshape(shape)
    if kind == "ravel":
        return ".ravel()", lambda x: x.ravel()
    i, j = draw(st.integers(0, a.ndim - 1)), draw(st.integers(0, a.ndim - 1))
    return f".swapaxes({i}, {j})", lambda x: x.swapaxes(i, j)


def _write(draw, a):
    """A write into ``a``: the function applying it (to NumPy and spartan alike)."""
    kind = draw(st.sampled_from(["key", "key", "all", "iadd", "imul", "fill"]))
    value = draw(st.integers(-9, 9))
    if kind == "key" and a.ndim:
        key = _basic_key(draw, a.shape)
        if draw(st.booleans()):
            shape = numpy.empty(a.shape)[key].shape
            data = numpy.arange(math.prod(shape), dtype=float).reshape(shape) + value
            return f"[{key}] = arange", lambda x: x.__setitem__(key, data)
        return f"[{key}] = {value}", lambda x: x.__setitem__(key, value)
    if kind == "iadd":
        return f"+= {value}", lambda x: x.__iadd__(value)
    if kind == "imul":
        return f"*= {value}", lambda x: x.__imul__(value)
    if kind == "fill":
        return f".fill({value})", lambda x: x.fill(value)
    return f"[...] = {value}", lambda x: x.__setitem__(Ellipsis, value)


def _run(data, make):
    base = numpy.arange(24, dtype=float).reshape(4, 6)
    handles = [("Y", base, make(base))]
    log = []
    for _ in range(data.draw(st.integers(3, 7), label="steps")):
        i = data.draw(st.integers(0, len(handles) - 1), label="handle")
        name, a, x = handles[i]
        action = data.draw(st.sampled_from(["view", "view", "write", "write", "copy"]))
        if action == "view" and len(handles) < 5:
            text, f = _view(data.draw, a)
            log.append(f"{name}{text}")
            # NumPy's scalar (an integer for every axis) is a copy: a 0-d array here
            got, mine = f(a), f(x)
            # an integer for every axis gives NumPy's scalar (a copy; spartan's too, for an
            # array in the driver): go on with a 0-d array of it on both sides
            got = numpy.array(got) if isinstance(got, numpy.generic) else got
            mine = sp.array(mine) if isinstance(mine, numpy.generic) else mine
            handles.append((f"{name}{text}", got, mine))
        elif action == "copy":
            log.append(f"{name}.copy()")
            handles.append((f"{name}.copy()", a.copy(), x.copy()))
        else:
            text, f = _write(data.draw, a)
            log.append(f"{name} {text}")
            f(a)
            f(x)
        for hname, ha, hx in handles:
            got = numpy.asarray(hx)
            assert got.shape == ha.shape, (log, hname)
            numpy.testing.assert_array_equal(got, ha, err_msg=f"{hname} after {log}")
        for (na, a1, x1), (nb, a2, x2) in zip(handles, handles[1:]):
            assert sp.shares_memory(x1, x2) == numpy.shares_memory(a1, a2), (log, na, nb)


@pytest.mark.parametrize("mode", ["row", "column", "block", "dup", "driver"])
@SETTINGS
@given(data=st.data())
def test_views_and_writes_match_numpy(backend, mode, data):
    if mode == "driver":
        sp.config.local_below_bytes = Config.local_below_bytes  # the default: in the driver
        make = sp.array
    else:

        def make(a):
            return sp.array(a, tiling=mode)

    _run(data, make)


# ---- the newcomer cases, by name -----------------------------------------------------------


@pytest.fixture(params=["row", "driver"])
def make(request, backend):
    if request.param == "driver":
        sp.config.local_below_bytes = Config.local_below_bytes
        return sp.array
    return lambda a: sp.array(a, tiling=request.param)


def test_write_through_a_row_view(make):
    y = make(numpy.zeros((3, 3)))
    v = y[1]
    v[:] = 7
    numpy.testing.assert_array_equal(numpy.asarray(y), [[0, 0, 0], [7, 7, 7], [0, 0, 0]])


def test_chained_index_assignment(make):
    y = make(numpy.zeros((3, 3)))
    y[1][2] = 5
    assert float(y[1, 2]) == 5 and float(y.sum()) == 5


def test_write_into_a_reshape(make):
    y = make(numpy.zeros((3, 3)))
    r = y.reshape(9)
    r[4] = 3
    assert float(y[1, 1]) == 3


def test_transpose_sees_later_writes(make):
    y = make(numpy.arange(9.0).reshape(3, 3))
    t = y.T
    y[0, 2] = -1
    assert float(t[2, 0]) == -1


def test_in_place_operator_on_a_row(make):
    a = make(numpy.ones((3, 4)))
    row = a[1]
    row *= 2
    numpy.testing.assert_array_equal(numpy.asarray(a).sum(axis=1), [4, 8, 4])


def test_another_name_sees_in_place_update(make):
    x = make(numpy.zeros(5))
    y = x
    x += 1
    assert float(y.sum()) == 5


def test_copies_do_not_alias(make):
    y = make(numpy.zeros((3, 3)))
    c = y.copy()
    f = y.flatten()
    g = y[[0, 2]]
    y[...] = 1
    assert float(c.sum()) == float(f.sum()) == float(g.sum()) == 0
    assert not sp.shares_memory(y, c) and not sp.shares_memory(y, g)


def test_reshape_of_non_contiguous_view_copies(make):
    y = make(numpy.zeros((4, 4)))
    r = y.T.reshape(16)  # NumPy copies here
    r[0] = 1
    assert float(y.sum()) == 0
    assert not sp.shares_memory(y, r)


def test_in_place_casting_error_matches_numpy(make):
    x = make(numpy.zeros(4, dtype=numpy.int64))
    with pytest.raises(numpy._core._exceptions._UFuncOutputCastingError):
        x += 1.5


def test_read_only_results_refuse_writes(make):
    x = make(numpy.arange(9.0).reshape(3, 3))
    for result in (x.diagonal(), sp.broadcast_to(x[0], (2, 3))):
        with pytest.raises(ValueError, match="read-only"):
            result[0] = 1
    assert float(x.sum()) == 36


def test_real_part_of_a_real_array_is_the_array(make):
    x = make(numpy.zeros(4))
    r = x.real
    r[1] = 2
    assert float(x[1]) == 2
