"""Small arrays (issue 34): 1,000-step loops of small-array NumPy code, spartan vs NumPy.

    python bench/small.py                  # 1,000 steps a workload, median of 5
    python bench/small.py --quick          # 20 steps (Jacobi 5), median of 3: a smoke run
    python bench/small.py --only jacobi --steps 100
    python bench/small.py --save           # write bench/results/small.md, not bench/out/

Each workload is one function taking the array module (``numpy`` or ``spartan``), so
both run the same program text: (a) scalar updates of a 1,000-element vector and a
running ``s += float(x[i])``, (b) element-by-element fills of a 20x20 array, (c)
per-group means through boolean masks over 10,000 elements, (d) Jacobi sweeps on
500x500 (``u[1:-1, 1:-1] = 0.25 * (...)``), each step one loop iteration, and (e) the
first small result after ``import spartan`` (``float(spartan.arange(10).sum())``),
timed in fresh interpreters. Results are compared with NumPy's (``allclose``) before
any time counts; a run includes forcing its result to NumPy. The two modules
alternate, after one warm-up run each, and the median of ``--repeats`` is reported
with the ratio spartan / NumPy (lower is better) and the targets: within 3x of NumPy
for arrays under ``spartan.config.local_below_bytes`` (the small-array threshold, where
spartan has one), and a first small result within 0.1 s of ``import spartan``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run by its path: bench.provenance

from bench.provenance import run_header  # noqa: E402

#: slowdown against NumPy the small-array path is held to, and the first-result latency
TARGET_RATIO = 3.0
TARGET_FIRST_S = 0.1
GROUPS = 10


# -- the workloads: the same code for both modules ------------------------------------


def scalar_updates(np: types.ModuleType, data: dict[str, numpy.ndarray], steps: int) -> Any:
    """(a) One element of a 1,000-element vector updated, one read summed, per step."""
    a = np.array(data["a"])
    x = np.array(data["x"])
    n = a.shape[0]
    s = 0.0
    for i in range(steps):
        a[i % n] = a[i % n] * 0.5 + i
        s += float(x[i % n])
    return a, s


def fills(np: types.ModuleType, data: dict[str, numpy.ndarray], steps: int) -> Any:
    """(b) ``for i in range(20): for j in range(20): a[i, j] = i * j`` (plus the pass
    number), repeated: one element per step."""
    a = np.zeros((20, 20))
    for step in range(steps):
        i, j = divmod(step % 400, 20)
        a[i, j] = i * j + step // 400
    return a


def group_means(np: types.ModuleType, data: dict[str, numpy.ndarray], steps: int) -> Any:
    """(c) ``for g in range(k): means[g] = x[labels == g].mean()``: one group per step."""
    x = np.array(data["x"])
    labels = np.array(data["labels"])
    means = np.zeros(GROUPS)
    for step in range(steps):
        g = step % GROUPS
        means[g] = x[labels == g].mean()
    return means


def jacobi(np: types.ModuleType, data: dict[str, numpy.ndarray], steps: int) -> Any:
    """(d) Jacobi sweeps of Laplace's equation on 500x500, the top edge held at 1."""
    u = np.array(data["u"])
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    run: Callable[[types.ModuleType, dict[str, numpy.ndarray], int], Any]
    make: Callable[[numpy.random.Generator], dict[str, numpy.ndarray]]
    quick_steps: int


def _plate(rng: numpy.random.Generator) -> dict[str, numpy.ndarray]:
    u = numpy.zeros((500, 500))
    u[0, :] = 1.0
    return {"u": u}


WORKLOADS = [
    Workload(
        "scalar",
        "`a[i % n] = a[i % n] * 0.5 + i; s += float(x[i % n])`, n = 1,000",
        scalar_updates,
        lambda rng: {"a": rng.random(1000), "x": rng.random(1000)},
        20,
    ),
    Workload("fill", "`a[i, j] = i * j` over 20x20", fills, lambda rng: {}, 20),
    Workload(
        "groups",
        f"`means[g] = x[labels == g].mean()`, 10,000 elements, k = {GROUPS}",
        group_means,
        lambda rng: {"x": rng.random(10_000), "labels": rng.integers(0, GROUPS, 10_000)},
        20,
    ),
    Workload("jacobi", "`u[1:-1, 1:-1] = 0.25 * (...)`, 500x500", jacobi, _plate, 5),
]
NAMES = [w.name for w in WORKLOADS] + ["first"]


# -- measuring -------------------------------------------------------------------------


def _largest_bytes(data: dict[str, numpy.ndarray], result: Any) -> int:
    """The largest array a workload holds: one of its inputs, or one it returns."""
    arrays = [*data.values(), *(result if isinstance(result, tuple) else (result,))]
    return max(numpy.asarray(a).nbytes for a in arrays)


def _to_numpy(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(_to_numpy(r) for r in result)
    return numpy.asarray(result)


def _agrees(got: Any, want: Any) -> bool:
    if isinstance(want, tuple):
        return len(got) == len(want) and all(_agrees(g, w) for g, w in zip(got, want))
    return got.shape == want.shape and numpy.allclose(got, want, rtol=1e-9, atol=1e-12)


def _run(module: types.ModuleType, w: Workload, data: dict, steps: int) -> tuple[float, Any]:
    """One run's seconds (its result forced into NumPy included) and that result."""
    gc.collect()  # a collection in the timed region would land on whichever runs next
    start = time.perf_counter()
    result = _to_numpy(w.run(module, data, steps))
    return time.perf_counter() - start, result


def _tasks() -> int | None:
    """Tasks spartan's workers ran so far, without starting any (None: none started)."""
    from spartan.backend import session

    backend = session._current
    return None if backend is None else backend.stats().tasks


@dataclass
class Row:
    name: str
    what: str
    steps: int
    nbytes: int
    numpy_s: float | None = None
    spartan_s: float | None = None
    tasks: int | None = None
    problem: str = ""

    @property
    def ratio(self) -> float | None:
        if self.numpy_s and self.spartan_s is not None:
            return self.spartan_s / self.numpy_s
        return None


def measure(w: Workload, steps: int, repeats: int) -> Row:
    """Warm up and check each module once, then ``repeats`` alternating timed runs."""
    import spartan

    data = w.make(numpy.random.default_rng(0))
    _, want = _run(numpy, w, data, steps)
    row = Row(w.name, w.what, steps, _largest_bytes(data, want))
    tasks_before = _tasks()
    try:
        _, got = _run(spartan, w, data, steps)
    except Exception as e:  # noqa: BLE001 -- reported in the table, the next workload runs
        row.problem = f"spartan failed: {type(e).__name__}: {str(e)[:120]}"
        return row
    after = _tasks()
    row.tasks = None if after is None else after - (tasks_before or 0)
    if not _agrees(got, want):
        row.problem = "spartan's result differs from NumPy's: not timed"
        return row
    times: dict[str, list[float]] = {"numpy": [], "spartan": []}
    for _ in range(repeats):
        for module in (numpy, spartan):
            times[module.__name__].append(_run(module, w, data, steps)[0])
    row.numpy_s = statistics.median(times["numpy"])
    row.spartan_s = statistics.median(times["spartan"])
    return row


FIRST = """
import time
start = time.perf_counter()
import {module}
imported = time.perf_counter()
value = float({module}.arange(10).sum())
done = time.perf_counter()
assert value == 45.0, value
print(imported - start, done - imported)
"""


def first_result(module: str, repeats: int) -> tuple[float, float]:
    """Median seconds of ``import module`` and of the first small result after it, each
    run in a fresh interpreter importing the spartan this script imports."""
    import spartan

    env = dict(os.environ)
    source = str(Path(spartan.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    imports, firsts = [], []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", FIRST.format(module=module)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"first result with {module} failed:\n{out.stderr[-2000:]}")
        imported, first = map(float, out.stdout.split()[-2:])
        imports.append(imported)
        firsts.append(first)
    return statistics.median(imports), statistics.median(firsts)


# -- reporting -------------------------------------------------------------------------


def _seconds(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.3f} s"


def _threshold() -> int | None:
    import spartan

    return getattr(spartan.config, "local_below_bytes", None)


def _target(row: Row, threshold: int | None) -> str:
    if row.ratio is None:
        return row.problem or "-"
    if threshold is not None and row.nbytes >= threshold:
        return f"n/a: above the threshold ({row.ratio:.1f}x)"
    verdict = "met" if row.ratio <= TARGET_RATIO else "**missed**"
    return f"within {TARGET_RATIO:g}x: {verdict}"


def table(rows: list[Row], first: tuple[tuple[float, float], tuple[float, float]] | None) -> str:
    threshold = _threshold()
    lines = [
        "| workload | steps | largest array | NumPy | spartan | spartan / NumPy "
        "| per step, NumPy / spartan | spartan tasks a run | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        per_step = "-"
        if r.numpy_s is not None and r.spartan_s is not None:
            per_step = f"{r.numpy_s / r.steps * 1e6:.1f} / {r.spartan_s / r.steps * 1e6:.1f} us"
        ratio = "-" if r.ratio is None else f"{r.ratio:.1f}x"
        tasks = "-" if r.tasks is None else str(r.tasks)
        lines.append(
            f"| {r.name}: {r.what} | {r.steps:,} | {r.nbytes:,} B | {_seconds(r.numpy_s)} "
            f"| {_seconds(r.spartan_s)} | {ratio} | {per_step} | {tasks} | {_target(r, threshold)} |"
        )
    if first is not None:
        (np_import, np_first), (sp_import, sp_first) = first
        verdict = "met" if sp_first < TARGET_FIRST_S else "**missed**"
        lines.append(
            f"| first: `float(arange(10).sum())` after the import (import: NumPy "
            f"{_seconds(np_import)}, spartan {_seconds(sp_import)}) | 1 | 80 B "
            f"| {_seconds(np_first)} | {_seconds(sp_first)} | {sp_first / np_first:.0f}x | - | - "
            f"| under {TARGET_FIRST_S:g} s: {verdict} |"
        )
    notes = [
        "Threshold (`spartan.config.local_below_bytes`): "
        + ("not defined (no small-array path)" if threshold is None else f"{threshold:,} B")
        + f"; target: within {TARGET_RATIO:g}x of NumPy under it, first result under "
        f"{TARGET_FIRST_S:g} s. 'spartan tasks a run': tasks the workers ran in spartan's "
        "warm-up run ('-': no workers were started).",
    ]
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="few steps and repeats: a smoke run")
    p.add_argument("--steps", type=int, default=None, help="loop steps (default 1,000)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs (default 5; quick 3)")
    p.add_argument("--only", nargs="+", choices=NAMES, default=None, help="these workloads")
    p.add_argument(
        "--save", action="store_true", help="write bench/results/small.md (default: bench/out/)"
    )
    args = p.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    chosen = args.only or NAMES
    command = "python bench/small.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = run_header(command, f"median of {repeats}")
    print(header, flush=True)

    first = None
    if "first" in chosen:
        # first, in fresh interpreters, before this process starts any workers
        runs = 1 if args.quick else 3
        first = (first_result("numpy", runs), first_result("spartan", runs))
        print(f"first small result after the import: spartan {_seconds(first[1][1])}", flush=True)
    rows = []
    for w in WORKLOADS:
        if w.name not in chosen:
            continue
        steps = args.steps or (w.quick_steps if args.quick else 1000)
        row = measure(w, steps, repeats)
        rows.append(row)
        ratio = f"{row.ratio:.1f}x" if row.ratio is not None else row.problem
        print(
            f"{w.name}: NumPy {_seconds(row.numpy_s)}, spartan {_seconds(row.spartan_s)} ({ratio})",
            flush=True,
        )

    report = table(rows, first)
    print("\n" + report)
    out = HERE / "results" / "small.md" if args.save else HERE / "out" / "small.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# Small arrays (issue 34): `bench/small.py`\n\n" + header + "\n\n" + report,
        encoding="utf-8",
    )
    print(f"written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
