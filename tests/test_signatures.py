"""NumPy's signatures on spartan: every parameter NumPy's function accepts, spartan's
accepts too, by the same name and (where it matters to a caller) the same kind; and
the keywords this audit found missing behave as NumPy's (differential tests on small
arrays, distributed under row and column tilings).

Spartan may accept more than NumPy (a keyword-only NumPy parameter that spartan also
takes positionally, spartan's own ``tiling=``): a caller of NumPy's signature never
notices. The other way round is a gap, unless listed in :data:`EXCEPTIONS` with its
reason (documented in docs/array-api.md, "NumPy keywords not supported").
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import spartan as sp
import spartan.fft
import spartan.linalg

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)

#: (namespace, function) -> {NumPy parameter: why spartan differs}. "**kwargs" stands
#: for NumPy's catch-all keywords.
EXCEPTIONS: dict[tuple[str, str], dict[str, str]] = {
    ("spartan", "clip"): {
        # positions agree (a, min, max, out); the array API's names are the positional
        # ones, NumPy's a_min/a_max are keywords (both spellings work)
        "a_min": "positional by the standard's name min",
        "a_max": "positional by the standard's name max",
        "min": "positional as well as keyword",
        "max": "positional as well as keyword",
        "**kwargs": "np.clip's ufunc keywords (where=, casting=, dtype=...) not supported",
    },
    ("spartan", "einsum"): {
        # NumPy's **kwargs are exactly these, which spartan names explicitly
        "**kwargs": "spartan names them: dtype=, order=, casting=",
    },
    ("spartan", "frompyfunc"): {
        "**kwargs": "NumPy's only keyword, identity=, is not supported",
    },
}

#: functions whose signature NumPy does not expose (C functions) or which spartan takes
#: from NumPy unchanged are not audited; neither are these, whose NumPy signature says
#: nothing a spartan caller uses
SKIP = {
    ("spartan", "array"),  # (also checked below: object= and ndmax=)
}


def _params(f: Any) -> dict[str, P] | None:
    try:
        return dict(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        return None


def _gaps(label: str, name: str, ours: Any, theirs: Any) -> list[str]:
    """What a caller of NumPy's ``theirs`` could pass that spartan's ``ours`` rejects."""
    mine, numpy_params = _params(ours), _params(theirs)
    if numpy_params is None:
        return []
    assert mine is not None, f"{label}.{name}: no signature (functools.wraps lost it?)"
    allowed = EXCEPTIONS.get((label, name), {})
    order = [n for n, p in mine.items() if p.kind in POSITIONAL]
    var_pos = any(p.kind == P.VAR_POSITIONAL for p in mine.values())
    var_kw = any(p.kind == P.VAR_KEYWORD for p in mine.values())
    gaps = []
    position = 0
    for n, p in numpy_params.items():
        if n == "self":
            continue
        problem = None
        if p.kind == P.VAR_POSITIONAL:
            problem = None if var_pos else "*" + n
        elif p.kind == P.VAR_KEYWORD:
            problem = None if var_kw else "**kwargs"
            n = "**kwargs"
        elif p.kind == P.POSITIONAL_ONLY:
            # (the name is NumPy's business; the place must take a positional)
            if position >= len(order) and not var_pos:
                problem = f"positional #{position} ({n})"
        elif n not in mine:
            problem = None if var_kw else n
        elif p.kind == P.POSITIONAL_OR_KEYWORD:
            q = mine[n]
            if q.kind != P.POSITIONAL_OR_KEYWORD or order.index(n) != position:
                problem = f"{n} (positional #{position} and keyword)"
        elif mine[n].kind not in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
            problem = f"{n} (keyword)"
        if p.kind in POSITIONAL:
            position += 1
        if problem is not None and n not in allowed:
            gaps.append(problem)
    return gaps


def _pairs() -> list[tuple[str, str, Any, Any]]:
    """(namespace, name, spartan's, NumPy's) for every public callable of spartan,
    spartan.linalg and spartan.fft with a NumPy counterpart of its own."""
    out = []
    spaces = (("spartan", sp, np), ("linalg", sp.linalg, np.linalg), ("fft", sp.fft, np.fft))
    for label, space, ref in spaces:
        for name in sorted(dir(space)):
            ours, theirs = getattr(space, name, None), getattr(ref, name, None)
            if name.startswith("_") or (label, name) in SKIP:
                continue
            if not callable(ours) or not callable(theirs) or ours is theirs:
                continue
            if isinstance(ours, type) or isinstance(theirs, type):
                continue
            if (getattr(ours, "__module__", None) or "").startswith("numpy"):
                continue  # NumPy's own function, re-exported
            out.append((label, name, ours, theirs))
    return out


def test_numpy_parameters_accepted() -> None:
    """One test for the whole namespace (fast: signatures only, no arrays)."""
    pairs = _pairs()
    assert len(pairs) > 300  # (the audit really covers the namespace)
    gaps = {f"{label}.{name}": g for label, name, a, b in pairs if (g := _gaps(label, name, a, b))}
    assert not gaps, f"NumPy parameters spartan does not accept: {gaps}"


def test_generator_methods_accept_numpy_parameters() -> None:
    ours, theirs = sp.random.default_rng(0), np.random.default_rng(0)
    names = [n for n in dir(theirs) if not n.startswith("_") and callable(getattr(theirs, n))]
    checked, gaps = 0, {}
    for name in names:
        if not hasattr(ours, name):
            continue
        checked += 1
        if g := _gaps("Generator", name, getattr(ours, name), getattr(theirs, name)):
            gaps[name] = g
    assert checked > 20
    assert not gaps, f"Generator parameters spartan does not accept: {gaps}"


def test_signatures_surface_through_the_wrappers() -> None:
    """spartan's functions are wrapped (NumPy-first for small arrays, device checks):
    inspect must still see spartan's own parameters, not ``*args, **kwargs``."""
    for f in (sp.concatenate, sp.einsum, sp.linalg.solve, sp.zeros, sp.geomspace):
        params = inspect.signature(f).parameters
        assert not any(p.kind == P.VAR_KEYWORD for p in params.values()), f
    assert "casting" in inspect.signature(sp.concatenate).parameters
    assert "tiling" in inspect.signature(sp.zeros).parameters  # (spartan's own keyword)
    array_params = inspect.signature(sp.array).parameters
    assert list(array_params)[0] == "object" and "ndmax" in array_params


def test_audit_finds_a_gap() -> None:
    """The audit itself: a function missing NumPy keywords is reported."""

    def concatenate(arrays: Any, /, axis: int = 0) -> None: ...

    def clip(a: Any, a_max: Any = None, a_min: Any = None) -> None: ...

    assert _gaps("x", "concatenate", concatenate, np.concatenate) == ["out", "dtype", "casting"]
    assert "a_min (positional #1 and keyword)" in _gaps("x", "clip", clip, np.clip)


# -- spartan.Array's methods against numpy.ndarray's -------------------------------

#: Array methods numpy.ndarray lacks: checked against NumPy's function (less its array
#: argument), or (None) spartan's own, which only must not hide behind ``*args``
ARRAY_ONLY: dict[str, Any] = {
    "ptp": np.ptp,  # (ndarray.ptp was removed in NumPy 2)
    "fill_diagonal": np.fill_diagonal,
    "evaluate": None,
    "to_numpy": None,
    "glom": None,
    "retile": None,
}
#: Array method -> {NumPy parameter: why spartan differs} (stated in its docstring)
ARRAY_EXCEPTIONS: dict[str, dict[str, str]] = {
    "clip": {"**kwargs": "np.clip's ufunc keywords (where=, casting=...) not supported"},
}
#: Array method -> keyword-only parameters spartan adds to NumPy's
ARRAY_EXTRAS: dict[str, set[str]] = {
    "std": {"correction"},  # (numpy.std's keyword)
    "var": {"correction"},
    "astype": {"device"},  # (the array API's keyword)
}
#: Array method -> a phrase of the difference its help() states
ARRAY_NOTES = {
    "std": "correction=",
    "var": "correction=",
    "clip": "ufunc keywords",
    "ptp": "NumPy 2 removed",
    "fill_diagonal": "Not a method of",
    "sort": "stable",
    "argsort": "stable",
    "astype": "device=",
    "copy": "order=",
}


def _numpy_method_params(name: str) -> list[P] | None:
    """numpy.ndarray.name's parameters (less ``self``), NumPy's ``**kwargs`` spelled
    out as the keywords of the Python function behind the method
    (numpy._core._methods), or None where NumPy exposes no signature."""
    try:
        params = [p for p in inspect.signature(getattr(np.ndarray, name)).parameters.values()]
    except (TypeError, ValueError):
        return None
    params = params[1:]  # (self)
    if params and params[-1].kind == P.VAR_KEYWORD:
        from numpy._core import _methods

        behind = getattr(_methods, "_" + {"min": "amin", "max": "amax"}.get(name, name), None)
        if behind is not None:
            known = {p.name for p in params}
            more = list(inspect.signature(behind).parameters.values())[1:]
            params = params[:-1] + [p for p in more if p.name not in known]
    return params


def _method_gaps(name: str, ours: Any, theirs: list[P]) -> list[str]:
    """Where Array.name's parameters differ from NumPy's ``theirs``: names and order,
    positional or keyword, defaults (where NumPy gives one), ``*args``/``**kwargs``."""
    allowed = ARRAY_EXCEPTIONS.get(name, {})
    extras = ARRAY_EXTRAS.get(name, set())
    mine = [p for p in inspect.signature(ours).parameters.values()][1:]
    gaps = []
    if any(p.kind == P.VAR_KEYWORD for p in mine):
        gaps.append("takes **kwargs")
    for p in theirs:
        if p.kind == P.VAR_KEYWORD and "**kwargs" not in allowed:
            gaps.append(f"NumPy's **{p.name}")
    theirs = [p for p in theirs if p.kind != P.VAR_KEYWORD]
    for p in mine:
        if p.name in extras and p.kind != P.KEYWORD_ONLY:
            gaps.append(f"{p.name}: spartan's extra must be keyword-only")
    mine = [p for p in mine if p.name not in extras and p.kind != P.VAR_KEYWORD]
    names_mine, names_theirs = [p.name for p in mine], [p.name for p in theirs]
    if names_mine != names_theirs:
        return gaps + [f"parameters {names_mine} != NumPy's {names_theirs}"]
    for a, b in zip(mine, theirs):
        if (b.kind in POSITIONAL) != (a.kind in POSITIONAL) and b.kind != P.KEYWORD_ONLY:
            gaps.append(f"{a.name}: {a.kind.description} (NumPy: {b.kind.description})")
        if (a.kind == P.VAR_POSITIONAL) != (b.kind == P.VAR_POSITIONAL):
            gaps.append(f"{a.name}: *{b.name} in NumPy")
        numpy_default = b.default
        if numpy_default is not P.empty and numpy_default is not np._NoValue:
            if a.default is P.empty or not (
                a.default is numpy_default
                or (type(a.default) is type(numpy_default) and a.default == numpy_default)
            ):
                gaps.append(f"{a.name}={a.default!r} (NumPy: {numpy_default!r})")
        elif numpy_default is np._NoValue and a.default is P.empty:
            gaps.append(f"{a.name}: NumPy's is optional")
    return gaps


def _array_methods() -> list[str]:
    return sorted(
        n
        for n in dir(sp.Array)
        if not n.startswith("_")
        and callable(getattr(sp.Array, n))
        and not isinstance(inspect.getattr_static(sp.Array, n), property)
    )


def test_array_methods_have_numpys_signatures() -> None:
    """Every public method of spartan.Array takes numpy.ndarray's parameters: the same
    names in the same order, positional where NumPy's are, NumPy's defaults; no
    ``*args, **kwargs`` standing in for them (IDEs and type checkers read these)."""
    checked, gaps = 0, {}
    for name in _array_methods():
        ours = getattr(sp.Array, name)
        params = inspect.signature(ours).parameters
        if name in ARRAY_ONLY and ARRAY_ONLY[name] is None:
            assert not any(p.kind == P.VAR_KEYWORD for p in params.values()), name
            continue
        if name in ARRAY_ONLY:
            theirs = list(inspect.signature(ARRAY_ONLY[name]).parameters.values())[1:]
        else:
            assert hasattr(np.ndarray, name), f"Array.{name}: not NumPy's; list it in ARRAY_ONLY"
            theirs = _numpy_method_params(name)
            if theirs is None:
                continue
        checked += 1
        if g := _method_gaps(name, ours, theirs):
            gaps[name] = g
    assert checked >= 40, checked
    assert not gaps, f"Array methods whose parameters differ from numpy.ndarray's: {gaps}"
    sum_params = list(inspect.signature(sp.Array.sum).parameters)
    assert sum_params == ["self", "axis", "dtype", "out", "keepdims", "initial", "where"]


def test_method_audit_finds_a_gap() -> None:
    def sum(self: Any, *args: Any, **kwargs: Any) -> None: ...

    def take(self: Any, indices: Any, mode: str = "clip", axis: Any = None) -> None: ...

    def std(self: Any, axis: Any = None, correction: Any = None) -> None: ...

    assert "takes **kwargs" in _method_gaps("sum", sum, _numpy_method_params("sum"))
    gaps = _method_gaps("take", take, _numpy_method_params("take"))
    assert gaps == [
        "parameters ['indices', 'mode', 'axis'] != NumPy's ['indices', 'axis', 'out', 'mode']"
    ]
    assert _method_gaps("std", std, _numpy_method_params("std"))


def test_array_method_docstrings_are_numpys_with_spartans_differences() -> None:
    import pydoc

    for name in _array_methods():
        if name in ("evaluate", "to_numpy", "glom", "retile"):  # (spartan's own)
            continue
        text = pydoc.render_doc(getattr(sp.Array, name), renderer=pydoc.plaintext)
        assert "This docstring was copied from ``numpy." in text, name
        if name in ARRAY_NOTES:
            assert "Spartan's differences:" in text, name
            assert ARRAY_NOTES[name] in text, name
    summary = inspect.getdoc(sp.Array.sum).splitlines()[0]
    assert summary == "Return the sum of the array elements over the given axis."
    # NumPy's examples run NumPy: doctest skips them
    assert "# doctest: +SKIP" in (sp.Array.fill.__doc__ or "")


@pytest.mark.parametrize("small", [True, False], ids=["small", "distributed"])
def test_array_methods_match_numpy(local: Any, small: bool, monkeypatch: Any) -> None:
    """The methods give NumPy's results for arguments by position and by keyword, on a
    small array held in the driver and on a distributed one."""
    if small:
        monkeypatch.setattr(sp.config, "local_below_bytes", 1 << 20)
    a = RNG.random((6, 4))
    x = sp.array(a)
    assert (x._np is not None) is small
    calls = [
        ("sum", (0,), {}),
        ("sum", (), {"axis": 1, "keepdims": True}),
        ("sum", (), {"initial": 2.0, "where": a > 0.5}),
        ("prod", (None, np.float32), {}),
        ("mean", (1,), {"dtype": np.float32}),
        ("std", (0, None, None, 1), {}),
        ("var", (), {"ddof": 1, "keepdims": True}),
        ("max", (), {"axis": 0, "initial": 0.9}),
        ("argmin", (1,), {"keepdims": True}),
        ("all", (), {"axis": 0}),
        ("cumsum", (1,), {}),
        ("trace", (1,), {}),
        ("ravel", ("C",), {}),
        ("swapaxes", (0, 1), {}),
        ("repeat", (2,), {"axis": 0}),
        ("diagonal", (), {"offset": 1}),
        ("clip", (0.2, 0.7), {}),
        ("clip", (), {"max": 0.5}),
        ("round", (2,), {}),
        ("dot", (a.T,), {}),
        ("take", ([0, 2],), {"axis": 1}),
        ("compress", ([True, False, True, False, False, True],), {"axis": 0}),
        ("argsort", (), {"axis": 0}),
        ("argpartition", (2,), {"axis": 1}),
        ("copy", (), {"order": "F"}),
    ]
    for name, args, kwargs in calls:
        got = getattr(x, name)(*args, **kwargs)
        want = getattr(a, name)(*args, **kwargs)
        if name == "argpartition":  # (any partition will do: compare the 2nd smallest)
            got = np.take_along_axis(a, got.to_numpy(), 1)[:, 2]
            want = np.take_along_axis(a, want, 1)[:, 2]
        same(got, np.asarray(want))
    s = sp.array(np.sort(a[0]))
    same(s.searchsorted(0.5, side="right"), np.asarray(np.sort(a[0]).searchsorted(0.5, "right")))
    y = sp.array(a)
    y.sort(axis=0)
    same(y, np.sort(a, axis=0))
    y.fill(3.0)
    same(y, np.full_like(a, 3.0))
    assert x.conj() is x
    assert x.std(correction=1) == pytest.approx(a.std(ddof=1))


# -- the keywords the audit found missing, against NumPy ---------------------------

TILINGS = ["row", "column"]
RNG = np.random.default_rng(7)
A = RNG.random((6, 4))
B = RNG.integers(-3, 4, (5, 4))


def same(got: Any, want: Any) -> None:
    got = got.to_numpy() if isinstance(got, sp.Array) else np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def raises_like(call_numpy: Any, call_spartan: Any) -> None:
    """Both raise, with the same exception type."""
    with pytest.raises(Exception) as theirs:
        call_numpy()
    with pytest.raises(theirs.type):
        call_spartan()


@pytest.mark.parametrize("tiling", TILINGS)
def test_concatenate_family_out_dtype_casting(local: Any, tiling: str) -> None:
    a, b = sp.array(A, tiling=tiling), sp.array(B, tiling=tiling)
    same(sp.concatenate([a, b], dtype=np.float32), np.concatenate([A, B], dtype=np.float32))
    same(
        sp.concat([a, b], casting="unsafe", dtype=int),
        np.concat([A, B], dtype=int, casting="unsafe"),
    )
    out = sp.zeros((11, 4), dtype=np.float32)
    assert sp.concatenate([a, b], 0, out) is out
    same(out, np.concatenate([A, B], 0, np.zeros((11, 4), np.float32)))
    same(sp.stack([a, a], 1, dtype=np.float32), np.stack([A, A], 1, dtype=np.float32))
    out = sp.zeros((6, 2, 4))
    assert sp.stack([a, a], axis=1, out=out) is out
    same(out, np.stack([A, A], axis=1))
    for f in ("hstack", "vstack", "row_stack"):
        kw = {"dtype": np.int8, "casting": "unsafe"}
        with np.testing.suppress_warnings() as s:
            s.filter(DeprecationWarning)  # (row_stack)
            same(getattr(sp, f)([a, a], **kw), getattr(np, f)([A, A], **kw))
    raises_like(
        lambda: np.concatenate([A, B], dtype=int), lambda: sp.concatenate([a, b], dtype=int)
    )
    raises_like(
        lambda: np.stack([A, A], out=np.zeros((2, 6, 4), int)),
        lambda: sp.stack([a, a], out=sp.zeros((2, 6, 4), dtype=int)),
    )
    raises_like(
        lambda: np.concatenate([A], out=np.zeros((6, 4)), dtype=float),
        lambda: sp.concatenate([a], out=sp.zeros((6, 4)), dtype=float),
    )
    raises_like(
        lambda: np.concatenate([A], out=np.zeros((7, 4))),
        lambda: sp.concatenate([a], out=sp.zeros((7, 4))),
    )
    raises_like(lambda: np.hstack([A], casting="no!"), lambda: sp.hstack([a], casting="no!"))


@pytest.mark.parametrize("tiling", TILINGS)
def test_einsum_out_dtype_casting_and_sublists(local: Any, tiling: str) -> None:
    i8 = B.astype(np.int8)
    a, b = sp.array(A, tiling=tiling), sp.array(i8, tiling=tiling)
    for spec in ("ij,ij->", "ij->j", "ij,ik->jk", "ij->"):
        same(sp.einsum(spec, b, b), np.einsum(spec, i8, i8)) if "," in spec else same(
            sp.einsum(spec, b), np.einsum(spec, i8)
        )
    same(sp.einsum("ii", b[:4]), np.einsum("ii", i8[:4]))  # (int8 stays int8)
    same(sp.einsum("ij->", b.astype(bool)), np.einsum("ij->", i8.astype(bool)))
    same(sp.einsum(a[:5], [0, 1], b, [0, 2], [1, 2]), np.einsum(A[:5], [0, 1], i8, [0, 2], [1, 2]))
    same(sp.einsum(a, [Ellipsis, 1]), np.einsum(A, [Ellipsis, 1]))
    same(sp.einsum("ij,ij->j", b, b, dtype=np.int32), np.einsum("ij,ij->j", i8, i8, dtype=np.int32))
    kw = {"dtype": np.float32, "casting": "same_kind"}
    same(sp.einsum("ij,ik->jk", a, a, **kw), np.einsum("ij,ik->jk", A, A, **kw))
    out = sp.zeros(4, dtype=np.float64)
    assert sp.einsum("ij->j", b, out=out) is out
    same(out, np.einsum("ij->j", i8, out=np.zeros(4)))
    raises_like(
        lambda: np.einsum("ij->", A, dtype=np.float32),
        lambda: sp.einsum("ij->", a, dtype=np.float32),
    )
    raises_like(
        lambda: np.einsum("ij->j", A, out=np.zeros(4, int)),
        lambda: sp.einsum("ij->j", a, out=sp.zeros(4, dtype=int)),
    )
    raises_like(lambda: np.einsum("ij", A, order="X"), lambda: sp.einsum("ij", a, order="X"))


def test_spaced_axis_and_array_ends(local: Any) -> None:
    cases = [
        ("linspace", ([0.0, 1.0], 2.0, 5), {}),
        ("linspace", ([0.0, 1.0], [[2.0], [3.0]], 5), {"axis": -1}),
        ("linspace", ([0, 1], 2, 5), {"endpoint": False, "dtype": int}),
        ("logspace", ([0.0, 1.0], 2.0, 5), {"axis": 1}),
        ("logspace", (0, 2, 5), {"axis": -1}),
        ("logspace", ([0, 1], 2.0, 4), {"base": [2.0, 3.0], "axis": 1}),
        ("geomspace", (1, 1000, 4), {"axis": -1}),
        ("geomspace", ([1.0, 2.0], 8.0, 4), {"axis": 1}),
        ("geomspace", ([1j, -2], [-8j, -1], 5), {"axis": 1}),
        ("geomspace", (-1, -256, 9), {"dtype": int}),
    ]
    for name, args, kw in cases:
        got = getattr(sp, name)(*args, **kw)
        want = getattr(np, name)(*args, **kw)
        np.testing.assert_array_equal(got.to_numpy(), want)  # (NumPy's own formula)
        assert got.dtype == want.dtype
    raises_like(lambda: np.geomspace(1, 2, 3, axis=1), lambda: sp.geomspace(1, 2, 3, axis=1))


@pytest.mark.parametrize("tiling", TILINGS)
def test_trim_zeros_axis(local: Any, tiling: str) -> None:
    z = np.zeros((6, 7), int)
    z[2, 3], z[4, 1] = 1, 2
    x = sp.array(z, tiling=tiling)
    for trim in ("fb", "f", "b"):
        for axis in (None, 0, -1, (0, 1), ()):
            same(sp.trim_zeros(x, trim, axis), np.trim_zeros(z, trim, axis))
    same(sp.trim_zeros(sp.zeros((3, 3)), axis=0), np.trim_zeros(np.zeros((3, 3)), axis=0))
    same(sp.trim_zeros(sp.asarray([0, 0, 1, 2, 0])), np.trim_zeros(np.array([0, 0, 1, 2, 0])))
    raises_like(lambda: np.trim_zeros(z, "x"), lambda: sp.trim_zeros(x, "x"))


@pytest.mark.parametrize("tiling", TILINGS)
def test_vecdot_matvec_vecmat_ufunc_keywords(local: Any, tiling: str) -> None:
    a3 = RNG.random((2, 3, 4))
    c3 = (a3 + 1j * a3[::-1]).astype(np.complex64)
    u8 = RNG.integers(0, 9, (2, 3, 4)).astype(np.uint8)
    a, c, u = (sp.array(v, tiling=tiling) for v in (a3, c3, u8))
    v4, v3 = RNG.random(4), RNG.random(3)
    checks = [
        ("vecdot", (a, a), (a3, a3), {"axis": 1, "keepdims": True}),
        ("vecdot", (a, a), (a3, a3), {"axes": [(1,), (1,), (0,)], "keepdims": True}),
        ("vecdot", (a, a), (a3, a3), {"axes": [(0,), (0,)]}),
        ("vecdot", (c, c), (c3, c3), {"dtype": np.complex128}),
        ("vecdot", (u, u), (u8, u8), {}),
        ("vecdot", (u, a), (u8, a3), {"signature": "dd->d"}),
        ("matvec", (a, sp.asarray(v4)), (a3, v4), {}),
        ("matvec", (c, sp.asarray(v4)), (c3, v4), {"dtype": np.complex128}),
        ("matvec", (a, sp.asarray(v4)), (a3, v4), {"axes": [(1, 2), (0,), (0,)]}),
        ("matvec", (a, sp.asarray(v3)), (a3, v3), {"axes": [(2, 1), (0,), (0,)]}),
        ("vecmat", (sp.asarray(v3), a), (v3, a3), {"axes": [(0,), (1, 2), (0,)]}),
        ("vecmat", (c[0, :, 0], c), (c3[0, :, 0], c3), {}),
    ]
    for name, ours, theirs, kw in checks:
        same(getattr(sp, name)(*ours, **kw), getattr(np, name)(*theirs, **kw))
    out = sp.zeros((2, 3))
    assert sp.vecdot(a, a, out=out) is out
    same(out, np.vecdot(a3, a3))
    raises_like(lambda: np.vecdot(a3, a3, dtype=int), lambda: sp.vecdot(a, a, dtype=int))
    raises_like(lambda: np.matvec(a3, v4, axis=1), lambda: sp.matvec(a, v4, axis=1))
    raises_like(lambda: np.matvec(a3, v4, keepdims=True), lambda: sp.matvec(a, v4, keepdims=True))


def test_small_keywords(local: Any) -> None:
    a = sp.array(A, tiling="row")
    same(sp.copy(a, order="F", subok=True), np.copy(A, order="F"))
    raises_like(lambda: np.copy(A, order="X"), lambda: sp.copy(a, order="X"))
    same(sp.broadcast_to(array=a[0], shape=(2, 4), subok=True), np.broadcast_to(A[0], (2, 4)))
    x, y = sp.broadcast_arrays(a, a[0], subok=True)
    same(y, np.broadcast_arrays(A, A[0])[1])
    same(sp.array(object=[[1, 2], [3, 4]], ndmax=2), np.array([[1, 2], [3, 4]], ndmax=2))
    same(sp.fft.fftfreq(8, 0.5, "cpu"), np.fft.fftfreq(8, 0.5, "cpu"))


# -- result dtypes of spartan.linalg and the products, against NumPy ----------------

DTYPES = [np.float32, np.float64, np.complex64, np.int32, np.uint8, np.bool_]


def _sample(dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    base = RNG.random(shape) + (3 * np.eye(*shape[-2:]) if len(shape) > 1 else 0)
    if np.dtype(dtype).kind == "c":
        return (base + 0.5j * RNG.random(shape)).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return np.eye(*shape[-2:], dtype=bool) if len(shape) > 1 else RNG.random(shape) > 0.5
    return (base * 3).astype(dtype)


PRODUCTS = {
    "solve": (lambda m, x, y: m.linalg.solve(x, y), (4, 4), (4,)),
    "solve-stack": (lambda m, x, y: m.linalg.solve(x, y), (2, 4, 4), (2, 4, 3)),
    "inv-stack": (lambda m, x, y: m.linalg.inv(x), (2, 4, 4), (1,)),
    "lstsq": (lambda m, x, y: m.linalg.lstsq(x, y)[0], (6, 4), (6,)),
    "lstsq-rank": (lambda m, x, y: np.asarray(m.linalg.lstsq(x, y)[2]), (6, 4), (6,)),
    "vdot": (lambda m, x, y: m.vdot(x, y), (4, 3), (4, 3)),
    "dot": (lambda m, x, y: m.dot(x, y), (4, 3), (3, 2)),
    "inner": (lambda m, x, y: m.inner(x, y), (4, 3), (2, 3)),
    "outer": (lambda m, x, y: m.outer(x, y), (4,), (3,)),
    "kron": (lambda m, x, y: m.kron(x, y), (2, 3), (3, 2)),
    "tensordot": (lambda m, x, y: m.tensordot(x, y, 1), (4, 3), (3, 2)),
    "einsum-trace": (lambda m, x, y: m.einsum("ii", x), (4, 4), (1,)),
    "trace": (lambda m, x, y: m.trace(x), (4, 4), (1,)),
    "conj-matmul": (lambda m, x, y: x @ x.T.conj(), (4, 3), (1,)),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_result_dtypes_match_numpy(local: Any, name: str) -> None:
    f, sx, sy = PRODUCTS[name]
    for dtype in DTYPES:
        x, y = _sample(dtype, sx), _sample(dtype, sy)
        try:
            want = f(np, x, y)
        except (TypeError, np.linalg.LinAlgError) as e:
            with pytest.raises(type(e)):
                np.asarray(sp.compute(f(sp, sp.array(x), sp.array(y)))[0])
            continue
        got = f(sp, sp.array(x, tiling="row"), sp.array(y))
        same(got, np.asarray(want))


def test_lstsq_complex_through_tsqr(local: Any, monkeypatch: Any) -> None:
    """A tall complex least squares through TSQR solves with Q^H, not Q^T."""
    monkeypatch.setattr(sp.config, "tsqr_min_bytes", 0)
    x = (RNG.random((40, 4)) + 1j * RNG.random((40, 4))).astype(np.complex64)
    y = x[:, 0] * (1 + 2j) + 0.1
    got, residuals, rank, _ = sp.linalg.lstsq(sp.array(x), sp.array(y))
    want = np.linalg.lstsq(x, y)
    same(got, want[0])
    same(residuals, want[1])
    assert rank == want[2] and type(rank) is type(want[2])
