"""Differential fuzzing (issue 35): random NumPy programs run by NumPy and by spartan.

    python bench/fuzz.py                          # 5,000 cases on each backend, 2 Ray workers
    python bench/fuzz.py --cases 300 --seed 7     # a short run
    python bench/fuzz.py --backends local         # in-process workers only (fast)
    python bench/fuzz.py --kills 200              # Ray: 200 cases also re-run with a worker killed
    python bench/fuzz.py --show 1234              # print case 1234's program and run it
    python bench/fuzz.py --save                   # write bench/results/fuzz.md (default bench/out/)

A case is a short straight-line program (one to six statements) over two or three
random arrays: element-wise operators and ufuncs with broadcasting, reductions over
every axis (``sum``, ``prod``, ``min``, ``argmax``, ``mean``, ``std``, ``median``,
``count_nonzero``, ``any``...), scans, sorts, slices with steps, transposes, reshapes,
concatenation, matrix products, boolean filters, fancy indexing and in-place updates of
a copy. Everything about it -- the shapes, dtypes (float64, float32, int64, int32,
bool), values, each input's tiling (row, column, block, duplicated or the default) and
the tiles per worker -- is drawn from ``numpy.random.default_rng(seed)``, so a case is
its seed: ``--show SEED`` prints and re-runs it.

NumPy runs the program first; spartan then runs the same text with ``np`` bound to
spartan and the inputs made with ``spartan.array(x, tiling=...)``. A case *passes*
when spartan gives NumPy's shape and dtype and its values (exactly for integers and
booleans; floats within a tolerance scaled by the largest intermediate value), or, when
NumPy raises, raises the same exception type. ``--kills N`` runs N of the cases on Ray
once more with a worker SIGKILLed after the inputs are evaluated (and, every other case,
once more during the program, by a task of the other worker) and checks that the result
has the same bits as the run without a failure (issue 35, item 2).

Printed: the date, machine, HEAD and command; per backend the cases tried, passed and
failed; each failure with its seed and program. tests/test_fuzz.py runs a few hundred
cases of this harness in the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run by its path: bench.provenance

from bench.provenance import run_header  # noqa: E402

#: input dtypes, float64 most often
DTYPES = ("float64", "float64", "float64", "float32", "int64", "int32", "bool")
#: relative tolerance of float results, per result dtype kind and size
RTOL = {8: 1e-9, 4: 2e-4, 2: 1e-2}


# -- cases ----------------------------------------------------------------------------


@dataclass
class Case:
    """One program, its inputs and how spartan cuts them; NumPy's answer."""

    seed: int
    inputs: dict[str, numpy.ndarray]
    tilings: dict[str, str | None]
    tiles_per_worker: int
    lines: list[str]
    #: NumPy's result, or the exception it raised
    expected: Any
    #: the largest finite magnitude of any value the program computes, and the fewest
    #: bytes of a float among them (the float tolerance)
    scale: float = 1.0
    precision: int = 8

    @property
    def program(self) -> str:
        """The case as Python text (``np`` is NumPy or spartan)."""
        head = [
            f"{name} = np.array({x.tolist()!r}, dtype={x.dtype.name!r})"
            + (f"  # tiling={self.tilings[name]!r}" if self.tilings[name] else "")
            for name, x in self.inputs.items()
        ]
        return "\n".join(
            [f"# case {self.seed}: tiles_per_worker={self.tiles_per_worker}", *head, *self.lines]
        )


def _values(rng: numpy.random.Generator, shape: tuple[int, ...], dtype: str) -> numpy.ndarray:
    """Small values with ties (sorts, argmax and filters meet equal elements)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    halves = rng.integers(-8, 9, shape) / 2
    frac = rng.standard_normal(shape) * (rng.random(shape) < 0.3)
    return (halves + frac).astype(dtype)


def _shapes(rng: numpy.random.Generator) -> list[tuple[int, ...]]:
    """Two or three shapes that often combine: equal, broadcastable, or multiplicable."""
    n, m, k = (int(v) for v in rng.integers(1, 10, 3))
    first = [(n, m), (n, m), (n,), (n, m, k)][rng.integers(4)]
    out = [first]
    for _ in range(int(rng.integers(1, 3))):
        options = [first, first, (m,), (n, 1), (m, k), (1, m), (k,), (k, n)]
        if len(first) == 1:
            options += [(n,), (1,), (n, k), (k, n)]
        if len(first) == 3:
            options += [(m, k), (k,), (n, m, 1), (k, m)]
        out.append(tuple(options[rng.integers(len(options))]))
    return out


class _Builder:
    """Grows a program a statement at a time, each checked on NumPy as it is added."""

    def __init__(self, rng: numpy.random.Generator, inputs: dict[str, numpy.ndarray]) -> None:
        self.rng = rng
        self.env: dict[str, Any] = {"np": numpy, **inputs}
        self.names = list(inputs)
        self.lines: list[str] = []
        self.scale = max((_magnitude(x) for x in inputs.values()), default=1.0)
        self.precision = min((_precision(x) for x in inputs.values()), default=8)
        self.error: BaseException | None = None

    def pick(self, want: Callable[[numpy.ndarray], bool] = lambda v: True) -> str | None:
        names = [n for n in self.names if want(numpy.asarray(self.env[n]))]
        return names[self.rng.integers(len(names))] if names else None

    def add(self, lines: list[str], keep_error: bool = False) -> bool:
        """Run ``lines`` on NumPy; keep them if they work (or, with ``keep_error``, as
        the program's last statement when NumPy raises)."""
        env = dict(self.env)
        try:
            with numpy.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for line in lines:
                    exec(line, env)  # noqa: S102 -- the harness's own generated text
        except Exception as error:  # noqa: BLE001 -- NumPy's verdict on the program
            if keep_error:
                self.lines += lines
                self.error = error
                return True
            return False
        name = _target(lines[-1])
        value = numpy.asarray(env[name])
        if value.ndim > 3 or value.size > 4000 or value.dtype.kind not in "biuf":
            return False
        self.env = env
        self.lines += lines
        if name not in self.names:
            self.names.append(name)
        self.scale = max(self.scale, _magnitude(value))
        self.precision = min(self.precision, _precision(value))
        return True


def _magnitude(x: Any) -> float:
    a = numpy.asarray(x)
    if a.dtype.kind not in "fc" and a.dtype.kind not in "iu":
        return 1.0
    finite = numpy.abs(a[numpy.isfinite(a)]) if a.dtype.kind in "fc" else numpy.abs(a)
    return float(max(1.0, finite.max())) if finite.size else 1.0


def _precision(x: Any) -> int:
    """Bytes of a float (of a complex's part); 8 for other dtypes."""
    dt = numpy.asarray(x).dtype
    return dt.itemsize // (2 if dt.kind == "c" else 1) if dt.kind in "fc" else 8


def _axis(
    rng: numpy.random.Generator, ndim: int, allow_none: bool = True, tuples: bool = False
) -> Any:
    """A random axis argument for an array of ``ndim`` axes (None, negative, a pair)."""
    options: list[Any] = list(range(ndim)) + [-1] if ndim else []
    if allow_none or not options:
        options.append(None)
    if tuples and ndim >= 2:
        options.append((0, ndim - 1))
    return options[rng.integers(len(options))]


def _statement(b: _Builder, out: str) -> list[str] | None:
    """One random statement assigning ``out`` (None: nothing fits the operands)."""
    rng = b.rng
    kind = rng.choice(
        ["unary", "binary", "binary", "reduce", "reduce", "scan", "shape", "matmul", "filter",
         "fancy", "update", "sort"]
    )  # fmt: skip
    x = b.pick()
    v = numpy.asarray(b.env[x])
    nd = v.ndim
    if kind == "unary":
        num = v.dtype.kind != "b"
        ops = [f"np.abs({x})", f"{x} * 3", f"{x} + 1", f"{x} > 0", f"np.sqrt(np.abs({x}))",
               f"np.exp({x} * 0.1)", f"np.sin({x})", f"np.clip({x}, -2, 3)",
               f"np.where({x} > 0, {x}, 0)", f"{x}.astype(np.float32)",
               f"np.logical_not({x} > 1)", f"np.isnan({x} * 0.5)", f"np.maximum({x}, 1)",
               f"np.round({x} * 0.3, 1)", f"np.log1p(np.abs({x}))", f"np.expm1({x} * 0.2)",
               f"np.cbrt({x})", f"np.trunc({x} * 0.7)", f"np.nan_to_num({x} / 0)",
               f"np.tanh({x})", f"{x}.astype(bool)", f"np.cumsum({x} > 0)",
               f"np.argwhere({x} > 1)", f"np.flatnonzero({x})", f"np.ptp({x})",
               f"np.percentile({x}, 30)", f"np.average({x})", f"{x}.sum(dtype=np.int32)",
               f"np.mean({x}, dtype=np.float32)"]  # fmt: skip
        if num:
            ops += [f"-{x}", f"np.square({x})", f"np.sign({x})", f"{x} % 3", f"{x} // 2",
                    f"np.floor({x} / 2)", f"{x} ** 2", f"np.fmod({x}, 3)",
                    f"np.rint({x} * 0.5)"]  # fmt: skip
        if v.dtype.kind in "biu":
            ops += [f"{x}.astype(np.int64)", f"{x}.astype(np.float64)", f"{x} << 1",
                    f"np.bincount(np.abs({x}).ravel().astype(np.int64))", f"~{x}"]  # fmt: skip
        if nd >= 2:
            ops += [f"np.triu({x})", f"np.tril({x}, -1)", f"np.trace({x})"]
        if nd >= 1:
            ops += [f"np.repeat({x}, 2, axis=0)", f"np.tile({x}, 2)",
                    f"np.pad({x}, 1, mode='edge')"]  # fmt: skip
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "binary":
        y = b.pick(lambda w: _broadcastable(v.shape, w.shape)) if rng.random() > 0.04 else b.pick()
        ops = [f"{x} + {y}", f"{x} - {y}", f"{x} * {y}", f"np.maximum({x}, {y})",
               f"np.minimum({x}, {y})", f"{x} == {y}", f"{x} < {y}",
               f"np.where({x} > {y}, {x}, {y})", f"{x} / (np.abs({y}) + 1)",
               f"({x} > 0) & ({y} > 0)", f"np.add({x}, {y}, dtype=np.float64)",
               f"np.hypot({x}, {y})", f"np.arctan2({x}, {y})", f"np.logical_xor({x}, {y})",
               f"np.isclose({x}, {y})", f"np.isin({x}, {y})", f"{x} ** np.abs({y} % 3)",
               f"np.copysign({x}, {y})", f"np.heaviside({x}, {y})"]  # fmt: skip
        if v.ndim == 1 and rng.random() < 0.3:
            y = b.pick(lambda w: w.ndim == 1)
            ops = [f"np.outer({x}, {y})", f"{x}[:, None] * {y}[None, :]",
                   f"np.searchsorted(np.sort({x}), {y})"]  # fmt: skip
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "reduce":
        a = _axis(rng, nd, tuples=True)
        keep = ", keepdims=True" if rng.random() < 0.25 else ""
        ops = [f"{x}.sum(axis={a}{keep})", f"{x}.max(axis={a}{keep})",
               f"{x}.min(axis={a}{keep})", f"{x}.mean(axis={a}{keep})",
               f"np.count_nonzero({x}, axis={a})", f"np.any({x} > 0, axis={a}{keep})",
               f"np.all({x} > -3, axis={a}{keep})", f"{x}.std(axis={a}{keep})",
               f"{x}.var(axis={a}, ddof=1)", f"np.nansum({x}, axis={a})",
               f"({x} % 3).prod(axis={a})", f"np.median({x}, axis={a})",
               f"{x}.sum(axis={a}, dtype=np.float64)"]  # fmt: skip
        one = _axis(rng, nd)
        ops += [f"np.argmax({x}, axis={one})", f"np.argmin({x}, axis={one})"]
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "scan":
        a = _axis(rng, nd, allow_none=nd <= 1)
        ops = [f"np.cumsum({x}, axis={a})", f"np.cumprod({x} % 2 + 1, axis={a})",
               f"np.maximum.accumulate({x}, axis={a if a is not None else 0})",
               f"np.diff({x}, axis={a if a is not None else -1})"]  # fmt: skip
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "sort":
        a = _axis(rng, nd)
        ops = [f"np.sort({x}, axis={a})", f"np.argsort({x}, axis={a}, kind='stable')",
               f"np.unique({x})"]  # fmt: skip
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "shape":
        if nd == 0:
            return None
        n0 = v.shape[0]
        ops = [f"{x}.T", f"{x}[::2]", f"{x}[1:]", f"{x}[::-1]", f"{x}[..., ::2]",
               f"{x}[{int(rng.integers(-n0, n0))}]" if n0 else f"{x}[:0]", f"{x}.reshape(-1)",
               f"{x}[None]", f"np.flip({x}, axis={_axis(rng, nd)})",
               f"np.roll({x}, {int(rng.integers(-3, 4))}, axis={_axis(rng, nd)})",
               f"np.expand_dims({x}, -1)", f"np.squeeze({x})"]  # fmt: skip
        if v.size and v.size % 2 == 0:
            ops.append(f"{x}.reshape(2, -1)")
        if nd >= 2:
            ops += [f"np.swapaxes({x}, 0, {nd - 1})", f"{x}[1:, ::-2]"]
        y = b.pick(lambda w: w.ndim == nd and w.shape[1:] == v.shape[1:])
        ops.append(f"np.concatenate([{x}, {y}], axis=0)")
        if nd >= 2:
            y = b.pick(lambda w: w.ndim == nd and w.shape[0] == v.shape[0])
            ops.append(f"np.concatenate([{x}, {y}], axis=1)")
        y = b.pick(lambda w: w.shape == v.shape)
        ops.append(f"np.stack([{x}, {y}], axis={int(rng.integers(0, nd + 1))})")
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "matmul":
        if nd == 0:
            return None
        if nd <= 2 and rng.random() < 0.3:
            return [f"{out} = {x}.T @ {x}" if nd == 2 else f"{out} = {x} @ {x}"]
        y = b.pick(lambda w: 1 <= w.ndim <= 2 and w.shape[0] == v.shape[-1])
        if y is None:
            return None
        op = ["@", "np.dot", "np.matmul"][rng.integers(3)]
        return [f"{out} = {x} @ {y}" if op == "@" else f"{out} = {op}({x}, {y})"]
    if kind == "filter":
        y = b.pick(lambda w: w.shape == v.shape)
        ops = [f"{x}[{x} > 0]", f"{x}[{y} > 0.5]"]
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    if kind == "fancy":
        if nd == 0 or v.shape[0] == 0:
            return None
        idx = [int(i) for i in rng.integers(-v.shape[0], v.shape[0], int(rng.integers(1, 5)))]
        a = _axis(rng, nd, allow_none=False)
        n = v.shape[a]
        jdx = [int(i) for i in rng.integers(0, n, 3)] if n else []
        ops = [f"{x}[{idx}]", f"np.take({x}, {jdx}, axis={a})"]
        return [f"{out} = {ops[rng.integers(len(ops))]}"]
    # update: in place on a copy
    if nd == 0:
        return None
    n0 = v.shape[0]
    lo = int(rng.integers(0, n0 + 1))
    hi = int(rng.integers(lo, n0 + 1))
    y = b.pick(lambda w: _broadcastable(w.shape, (hi - lo, *v.shape[1:]), into=True))
    rhs = y if y is not None and rng.random() < 0.6 else str(int(rng.integers(-3, 4)))
    ops = [f"{out}[{lo}:{hi}] = {rhs}", f"{out}[{lo}:{hi}] += {rhs}",
           f"{out}[{out} > 1] = 0", f"{out} *= 2", f"{out}[..., 0] = 7"]  # fmt: skip
    return [f"{out} = {x}.copy()", ops[rng.integers(len(ops))]]


def _mistake(b: _Builder, out: str) -> str:
    """A statement that is usually wrong: operands that do not broadcast or multiply,
    an axis out of range or not an integer, an index past the end, a bad reshape."""
    rng = b.rng
    x, y = b.pick(), b.pick()
    v = numpy.asarray(b.env[x])
    nd = v.ndim
    ops = [f"{x} + {y}", f"{x} @ {y}", f"{x}.sum(axis={nd})", f"np.cumsum({x}, axis={-nd - 1})",
           f"{x}.sum(axis=1.5)", f"{x}.max(axis=(0, 0))", f"{x}[{v.shape[0] if nd else 0}]",
           f"{x}.reshape({v.size + 1})", f"np.concatenate([{x}, {y}], axis={nd})",
           f"np.sort({x}, axis={nd})", f"{x}.T[{nd}, ..., 0]", f"np.argmax({x}, axis=(0, 1))",
           f"np.take({x}, [{v.size + 3}])", f"{x}.astype('not a dtype')", f"{x}.min()[0]"]  # fmt: skip
    return f"{out} = {ops[rng.integers(len(ops))]}"


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...], into: bool = False) -> bool:
    """Whether ``a`` and ``b`` broadcast (``into``: ``a`` broadcasts to exactly ``b``)."""
    try:
        shape = numpy.broadcast_shapes(a, b)
    except ValueError:
        return False
    return not into or shape == tuple(b)


def make_case(seed: int) -> Case:
    """The case of ``seed`` (the same on every machine and run)."""
    rng = numpy.random.default_rng(seed)
    inputs = {}
    for name, shape in zip("abc", _shapes(rng)):
        inputs[name] = _values(rng, shape, DTYPES[rng.integers(len(DTYPES))])
    tilings = {}
    for name, x in inputs.items():
        options = [None, "row", "dup"] + (["column", "block"] if x.ndim >= 2 else [])
        tilings[name] = options[rng.integers(len(options))]
    b = _Builder(rng, inputs)
    want = int(rng.integers(1, 7))
    tries = 0
    while len(b.lines) < want and b.error is None and tries < 40:
        tries += 1
        lines = _statement(b, f"v{len(b.names) - len(inputs) + 1}")
        if lines is None or any(re.search(r"(?<!axis=)(?<!\[)None", ln) for ln in lines):
            continue  # (an operand that does not exist: pick() found none)
        # a statement NumPy rejects ends the program now and then (errors must match)
        b.add(lines, keep_error=rng.random() < 0.03)
    if not b.lines:
        b.add(["v1 = a + 0"])
    if b.error is None and rng.random() < 0.1:  # a mistake NumPy rejects, at the end
        for _ in range(5):
            if b.add([_mistake(b, f"v{len(b.names) - len(inputs) + 1}")], keep_error=True):
                if b.error is not None:
                    break
    expected = b.error if b.error is not None else b.env[_target(b.lines[-1])]
    tiles = int(rng.integers(1, 4))
    return Case(seed, inputs, tilings, tiles, b.lines, expected, b.scale, b.precision)


# -- running ----------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    passed: bool
    detail: str = ""
    #: a digest of the result's bytes (None: it raised)
    bits: str | None = None
    seconds: float = 0.0


def _target(line: str) -> str:
    """The variable a statement assigns (``v3`` of ``v3[1:2] += a``)."""
    return re.match(r"\s*(\w+)", line).group(1)


def run_spartan(
    case: Case,
    after_inputs: Callable[[], None] | None = None,
    names: dict[str, Any] | None = None,
) -> Any:
    """The case's result on spartan's current backend (as a NumPy array): the inputs
    are made and evaluated, ``after_inputs`` is called (a kill, say), then the program
    runs, with ``names`` defined too, and its result is fetched."""
    import spartan

    config = spartan.config
    old = config.tiles_per_worker
    config.tiles_per_worker = case.tiles_per_worker
    try:
        env: dict[str, Any] = {"np": spartan, **(names or {})}
        for name, x in case.inputs.items():
            env[name] = spartan.array(x, tiling=case.tilings[name])
        spartan.evaluate(*(env[name] for name in case.inputs))
        if after_inputs is not None:
            after_inputs()
        with numpy.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for line in case.lines:
                exec(line, env)  # noqa: S102 -- the harness's own generated text
            return numpy.asarray(env[_target(case.lines[-1])])
    finally:
        config.tiles_per_worker = old


def compare(case: Case, got: Any) -> str:
    """Why ``got`` is not NumPy's answer ("" when it is)."""
    want = numpy.asarray(case.expected)
    got = numpy.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, NumPy {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, NumPy {want.dtype}"
    if want.dtype.kind in "fc":
        rtol = RTOL[min(case.precision, _precision(want))]
        # values that cancel: the error is relative to the largest value computed
        close = numpy.isclose(got, want, rtol=rtol, atol=rtol * case.scale, equal_nan=True)
        smallest = min(case.precision, _precision(want))
        if case.scale > numpy.sqrt(numpy.finfo(f"f{smallest}").max):
            # sums of values near overflow: whether one overflows (to inf, or inf - inf
            # to NaN) depends on the order of the additions, which spartan does not share
            close |= ~numpy.isfinite(got) | ~numpy.isfinite(want)
        if not close.all():
            at = tuple(int(i) for i in numpy.argwhere(~close)[0])
            return f"values differ at {at}: {got[at]!r}, NumPy {want[at]!r}"
        return ""
    if not numpy.array_equal(got, want):
        at = tuple(int(i) for i in numpy.argwhere(got != want)[0]) if got.ndim else ()
        return f"values differ at {at}: {got[at]!r}, NumPy {want[at]!r}"
    return ""


def digest(x: Any) -> str:
    """The bits of a result: dtype, shape and bytes."""
    a = numpy.ascontiguousarray(x)
    return hashlib.sha1(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()[:16]


def check(
    case: Case,
    after_inputs: Callable[[], None] | None = None,
    names: dict[str, Any] | None = None,
) -> Outcome:
    """Run ``case`` on spartan (see :func:`run_spartan`) and judge it against NumPy."""
    start = time.perf_counter()
    try:
        got = run_spartan(case, after_inputs, names)
    except Exception as error:  # noqa: BLE001 -- the verdict
        took = time.perf_counter() - start
        if isinstance(case.expected, BaseException):
            if isinstance(error, type(case.expected)):
                return Outcome(case, True, seconds=took)
            why = f"raised {type(error).__name__}, NumPy {type(case.expected).__name__}"
        else:
            why = (
                f"raised {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            )
            why += "\n" + "".join(traceback.format_exception(error)[-6:])
        return Outcome(case, False, why, seconds=took)
    took = time.perf_counter() - start
    if isinstance(case.expected, BaseException):
        return Outcome(
            case, False, f"no error; NumPy raised {type(case.expected).__name__}", seconds=took
        )
    why = compare(case, got)
    return Outcome(case, not why, why, digest(got), took)


def run(seeds: Iterable[int], progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case of ``seeds`` on spartan's current backend."""
    out = []
    for seed in seeds:
        o = check(make_case(seed))
        out.append(o)
        if progress is not None:
            progress(o)
    return out


# -- kills (Ray) ------------------------------------------------------------------------


def worker_pid(backend: Any, worker: int) -> int:
    """The process id of Ray worker ``worker``, asked of the worker itself, after an
    evaluation on every worker (which replaces one killed since the last)."""
    import spartan

    n = backend.nworkers
    spartan.evaluate(spartan.array(numpy.arange(4.0 * n), tiling="row") + 1)
    return backend._get([backend.actors[worker].pid.remote()])[0]


def kill_worker(backend: Any, worker: int) -> None:
    """SIGKILL Ray worker ``worker``."""
    os.kill(worker_pid(backend, worker), signal.SIGKILL)


class KillOther:
    """A map function that, run on a worker other than ``pid``'s, SIGKILLs ``pid`` once
    (the first caller to create ``flag`` wins): a death in the middle of an evaluation,
    at a point the program fixes, not a timer. With ``flag`` there already it only
    copies its block (the same program without the death)."""

    def __init__(self, pid: int, flag: str) -> None:
        self.pid, self.flag, self.driver = pid, flag, os.getpid()

    def __call__(self, block: Any) -> Any:
        if os.getpid() not in (self.pid, self.driver):
            try:
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(self.pid, signal.SIGKILL)
        return block.copy()


def killed_run(case: Case, backend: Any, during: bool, worker: int = 1) -> tuple[Outcome, Outcome]:
    """``case`` on Ray without a failure, then with worker ``worker`` SIGKILLed: after
    the inputs are evaluated, or (``during``) by a task of another worker in the
    program's first evaluation (each input first passes through a :class:`KillOther`
    map, in both runs, so both run the same program). Compare the two outcomes' bits."""
    if not during:
        plain = check(case)
        return plain, check(case, lambda: kill_worker(backend, worker))
    pid = worker_pid(backend, worker)
    lines = [f"{n} = np.map(_kill, {n}, dtype={n}.dtype)" for n in case.inputs]
    twin = Case(
        case.seed,
        case.inputs,
        case.tilings,
        case.tiles_per_worker,
        lines + case.lines,
        case.expected,
        case.scale,
        case.precision,
    )
    with tempfile.TemporaryDirectory(prefix="spartan-fuzz-") as d:
        flag = os.path.join(d, "killed")
        os.close(os.open(flag, os.O_CREAT | os.O_WRONLY))
        plain = check(twin, names={"_kill": KillOther(pid, flag)})
        os.unlink(flag)
        return plain, check(twin, names={"_kill": KillOther(pid, flag)})


# -- reporting ----------------------------------------------------------------------------


@dataclass
class Tally:
    tried: int = 0
    passed: int = 0
    failed: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, o: Outcome) -> None:
        self.tried += 1
        self.passed += o.passed
        self.seconds += o.seconds
        if not o.passed:
            self.failed.append(o)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cases", type=int, default=5000, help="cases per backend")
    p.add_argument("--seed", type=int, default=0, help="the first case's seed")
    p.add_argument("--backends", nargs="+", choices=["local", "ray"], default=["local", "ray"])
    p.add_argument("--workers", type=int, default=2, help="workers of each backend")
    p.add_argument("--kills", type=int, default=0, help="Ray cases re-run with a worker killed")
    p.add_argument("--show", type=int, default=None, help="print and run one case")
    p.add_argument("--save", action="store_true", help="write bench/results/fuzz.md")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")

    import spartan
    from spartan.backend import session
    from spartan.backend.local import LocalBackend

    spartan.config.local_below_bytes = 0  # small arrays distributed, cut like big ones
    spartan.config.replicate_below_bytes = 0
    if args.show is not None:
        case = make_case(args.show)
        print(case.program)
        for name in args.backends:
            session.use(_backend(name, args.workers, LocalBackend))
            o = check(case)
            print(f"{name}: {'passed' if o.passed else 'FAILED: ' + o.detail}")
        return 0

    command = "python bench/fuzz.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = run_header(
        command,
        f"{args.workers} workers per backend; seeds {args.seed} to {args.seed + args.cases - 1}",
    )
    print(header, flush=True)
    seeds = range(args.seed, args.seed + args.cases)
    tallies: dict[str, Tally] = {}
    for name in args.backends:
        backend = _backend(name, args.workers, LocalBackend)
        session.use(backend)
        tally = tallies[name] = Tally()
        for seed in seeds:
            o = check(make_case(seed))
            tally.add(o)
            if not o.passed:
                print(f"{name} case {seed} FAILED: {o.detail.splitlines()[0]}", flush=True)
            if tally.tried % 500 == 0:
                print(f"{name}: {tally.tried} tried, {tally.passed} passed", flush=True)
    kills = Tally()
    if args.kills:
        backend = _backend("ray", args.workers, LocalBackend)
        session.use(backend)
        for i, seed in enumerate(seeds[: args.kills]):
            case = make_case(seed)
            if isinstance(case.expected, BaseException):
                continue
            plain, killed = killed_run(case, backend, during=bool(i % 2))
            if not plain.passed:
                continue  # (counted among the Ray cases' failures already)
            same = killed.passed and killed.bits == plain.bits
            kills.add(
                Outcome(case, same, killed.detail or "bits differ", killed.bits, killed.seconds)
            )
            if not same:
                print(f"kill case {seed} FAILED: {killed.detail or 'bits differ'}", flush=True)

    report = _report(tallies, kills)
    print("\n" + report)
    out = HERE / ("results" if args.save else "out") / "fuzz.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# Differential fuzzing (issue 35): `bench/fuzz.py`\n\n" + header + "\n\n" + report,
        encoding="utf-8",
    )
    print(f"written to {out.relative_to(ROOT)}")
    failed = sum(len(t.failed) for t in tallies.values()) + len(kills.failed)
    with contextlib.suppress(Exception):
        spartan.shutdown()
    return 1 if failed else 0


def _backend(name: str, workers: int, local: Any) -> Any:
    import spartan

    if name == "local":
        return local(num_workers=workers)
    return spartan.init(backend="ray", num_workers=workers)


def _report(tallies: dict[str, Tally], kills: Tally) -> str:
    rows = ["| backend | tried | passed | failed | seconds |", "|---|---:|---:|---:|---:|"]
    for name, t in tallies.items():
        rows.append(
            f"| {name} | {t.tried:,} | {t.passed:,} | {len(t.failed):,} | {t.seconds:.0f} |"
        )
    if kills.tried:
        rows.append(
            f"| ray, a worker killed (bits compared) | {kills.tried:,} | {kills.passed:,} | "
            f"{len(kills.failed):,} | {kills.seconds:.0f} |"
        )
    text = "\n".join(rows)
    failures = [o for t in [*tallies.values(), kills] for o in t.failed]
    if failures:
        text += "\n\nFailures (seed: why; `python bench/fuzz.py --show SEED` runs one):\n"
        for o in failures[:50]:
            text += f"\n- {o.case.seed}: {o.detail.splitlines()[0]}\n\n```python\n"
            text += o.case.program + "\n```\n"
    return text + "\n"


if __name__ == "__main__":
    sys.exit(main())
