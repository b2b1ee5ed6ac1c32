"""What every example shares: command line, worker start-up, timing and ``--check``.

An example is ordinary NumPy code written against ``import spartan as np``. It gives
the harness two functions: ``make_data(args)`` builds the inputs and ``program(*data,
args)`` is the computation. ``--check`` runs the very same code a second time with the
module-level name ``np`` bound to real NumPy (on small data built by NumPy and handed
to spartan with ``np.asarray``) and compares the results.

>>> run_example(program, make_data, summary, sizes={"n": 10**6}, check_sizes={"n": 500},
...             what="k-means", argv=["--check"])          # doctest: +SKIP
0
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy
import psutil

import spartan

#: tolerance of --check (float64 results computed in a different order)
RTOL = 1e-6
RTOL_FLOAT32 = 1e-4
ATOL = 1e-8


def with_module(fn: Callable[..., Any], module: types.ModuleType) -> Callable[..., Any]:
    """``fn`` with the global ``np`` of its module bound to ``module`` (NumPy, dask.array...).

    Every function of that module is rebound the same way, so helpers the example
    calls run on ``module`` too.

    >>> with_module(kmeans, dask.array)(X_dask, 8, 10)       # doctest: +SKIP
    """
    shared = fn.__globals__
    twin_globals = dict(shared, np=module)
    for name, value in shared.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is shared:
            twin_globals[name] = types.FunctionType(
                value.__code__, twin_globals, value.__name__, value.__defaults__, value.__closure__
            )
    return twin_globals[fn.__name__]


def with_numpy(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` running on NumPy instead of spartan (see :func:`with_module`).

    >>> with_numpy(program)(x_numpy, args)               # doctest: +SKIP
    """
    return with_module(fn, numpy)


def to_numpy(result: Any) -> Any:
    """A result (array, scalar, or a tuple/list/dict of them) with every array in NumPy."""
    if isinstance(result, dict):
        return {k: to_numpy(v) for k, v in result.items()}
    if isinstance(result, (tuple, list)):
        return type(result)(to_numpy(v) for v in result)
    return numpy.asarray(result)


def mismatches(got: Any, want: Any, path: str = "result") -> list[str]:
    """Where ``got`` (spartan) and ``want`` (NumPy) differ beyond ``RTOL``/``ATOL``."""
    if isinstance(want, dict):
        return [m for k in want for m in mismatches(got[k], want[k], f"{path}[{k!r}]")]
    if isinstance(want, (tuple, list)) and len(got) != len(want):
        return [f"{path}: {len(got)} results != NumPy's {len(want)}"]
    if isinstance(want, (tuple, list)):
        return [
            m for i, (g, w) in enumerate(zip(got, want)) for m in mismatches(g, w, f"{path}[{i}]")
        ]
    got, want = numpy.asarray(got), numpy.asarray(want)
    if got.shape != want.shape:
        return [f"{path}: shape {got.shape} != NumPy's {want.shape}"]
    # float32 sums taken in another order differ in about the 6th digit
    rtol = RTOL_FLOAT32 if want.dtype == numpy.float32 else RTOL
    if want.dtype.kind in "biu":
        ok = numpy.array_equal(got, want)
    else:
        ok = numpy.allclose(got, want, rtol=rtol, atol=ATOL, equal_nan=True)
    if ok:
        return []
    err = numpy.max(numpy.abs(got.astype(float) - want.astype(float)))
    return [f"{path}: max abs difference {err:.3g} (rtol={rtol}, atol={ATOL})"]


def _parser(what: str, sizes: dict[str, Any], doc: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=what, epilog=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name, default in sizes.items():
        p.add_argument(f"--{name}", type=type(default), default=None, help=f"(default {default})")
    p.add_argument("--workers", type=int, default=None, help="spartan workers (default: cores)")
    p.add_argument(
        "--backend",
        choices=["ray", "local"],
        default=os.environ.get("SPARTAN_BACKEND", "ray"),
        help="ray workers, or in-process workers for debugging (default: ray)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--check",
        action="store_true",
        help="run on small data with spartan and with NumPy and compare (exit 1 on mismatch)",
    )
    return p


def _start(args: argparse.Namespace) -> None:
    if args.backend == "ray":
        import ray

        # inside `ray job submit` (RAY_ADDRESS set) spartan.init joins the job's cluster
        if not ray.is_initialized() and not os.environ.get("RAY_ADDRESS"):
            ray.init(
                address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False
            )
    spartan.init(backend=args.backend, num_workers=args.workers)
    if args.check:
        spartan.config.tiles_per_worker = 2  # several tiles per worker even on small data


def _force(result: Any) -> Any:
    """Evaluate every spartan array in ``result`` (one graph) and return it as NumPy."""
    arrays = [r for r in _leaves(result) if isinstance(r, spartan.Array)]
    if arrays:
        spartan.evaluate(*arrays)
    return to_numpy(result)


def _leaves(result: Any) -> list[Any]:
    if isinstance(result, dict):
        return [x for v in result.values() for x in _leaves(v)]
    if isinstance(result, (tuple, list)):
        return [x for v in result for x in _leaves(v)]
    return [result]


def run_example(
    program: Callable[..., Any],
    make_data: Callable[[argparse.Namespace], tuple[Any, ...]],
    summary: Callable[[Any, argparse.Namespace], str],
    sizes: dict[str, Any],
    check_sizes: dict[str, Any],
    what: str,
    argv: Sequence[str] | None = None,
    doc: str | None = None,
) -> int:
    """Parse ``argv``, run ``program(*make_data(args), args)`` on spartan and report.

    Returns the exit status: 0, or 1 when ``--check`` finds a mismatch with NumPy.
    """
    args = _parser(what, sizes, doc).parse_args(argv)
    for name, default in (check_sizes if args.check else sizes).items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    _start(args)
    described = ", ".join(f"{n}={getattr(args, n)}" for n in sizes)
    workers = spartan.backend.current().nworkers

    if args.check:
        data = with_numpy(make_data)(args)
        want = to_numpy(with_numpy(program)(*data, args))
        got_data = tuple(spartan.asarray(d) if isinstance(d, numpy.ndarray) else d for d in data)
        got = _force(program(*got_data, args))
        problems = mismatches(got, want)
        print(f"{what} ({described}) on {workers} {args.backend} workers vs NumPy: ", end="")
        if problems:
            print("MISMATCH\n  " + "\n  ".join(problems))
            return 1
        print(f"results agree; {summary(got, args)}")
        return 0

    t0 = time.perf_counter()
    data = make_data(args)
    spartan.evaluate(*[d for d in data if isinstance(d, spartan.Array)])
    t1 = time.perf_counter()
    got = _force(program(*data, args))
    t2 = time.perf_counter()
    # the wall time a user waits counts Python's and Ray's start-up too
    born = psutil.Process().create_time()
    wall, start_up = time.time() - born, (time.time() - (t2 - t0)) - born
    print(f"{what} ({described}) on {workers} {args.backend} workers")
    print(
        f"  wall time {wall:.2f} s since the process started: start-up {start_up:.2f} s "
        f"(Python, imports, starting the workers), inputs generated in {t1 - t0:.2f} s, "
        f"computed in {t2 - t1:.2f} s"
    )
    print(f"  {summary(got, args)}")
    return 0


if __name__ == "__main__":
    sys.exit("harness.py is imported by the examples; run e.g. python examples/kmeans.py")
