"""The master's own time per evaluation, by worker count and tiles.

    python bench/master.py --quick            # in-process 2..128 workers, Ray 2 and 8
    python bench/master.py                    # in-process 2..512 workers, Ray 2, 8, 16
    python bench/master.py --save             # bench/results/master.md
    python bench/master.py --json out.json    # rows as JSON too, for a later --before
    python bench/master.py --before old.json  # before/after columns (same workers)

One spartan driver plans and dispatches every tile, so its time per evaluation is what
stops it keeping up with many workers. For each workload (a k-means step, a logistic-
regression step, an element-wise chain, ``x + x.T``, a matmul) and worker count, with
``tiles_per_worker`` tiles per worker of a few rows each (so the workers' compute is
negligible), it times the driver's phases of one evaluation, median of ``--repeats``:

* ``plan``: choosing the tilings (``spartan.frontend.planning.choose``);
* ``lower``: building the per-tile tasks (the lowering, less the plan and the flushes;
  on in-process workers a task runs as it is submitted, so this includes the tiny tasks,
  shown apart as ``in-process tasks``);
* ``dispatch``: sending them (``Backend.flush``);
* ``wait``: the final wait, with its bookkeeping (``Backend.wait``);

and reports the tasks per evaluation, the pieces their regions list (what the driver
builds and hands on; a region many tasks share counted once per task, as the backend
handles it: a count, free of this machine's noise), the driver's microseconds per task,
the lineage log's size on Ray (records kept), and the exponent of a power-law fit against tiles per workload
(1.0: linear) of the driver's time and of its *own* time (plan + lower + dispatch, less
the in-process tasks: what one master does whatever the workers). The phases are
spartan's own counter, ``spartan.stats()["driver_seconds"]``; with a spartan that
predates it (a ``--before`` run in an older checkout) they are timed by wrapping those
functions in this process. The in-process tasks are timed by wrapping the in-process
backend's dispatch (``LocalBackend._dispatch``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.provenance import run_header, write_report  # noqa: E402

TILES_PER_WORKER = 2
ROWS_PER_TILE = 4


class Phases:
    """Seconds spent in each driver phase since :meth:`reset`, each exclusive of the
    phases called inside it (the lowering flushes each operator's tasks: that is
    dispatch, not lowering)."""

    def __init__(self) -> None:
        self.seconds = {"plan": 0.0, "lower": 0.0, "dispatch": 0.0, "wait": 0.0}
        self.active: list[str] = []

    def reset(self) -> None:
        self.seconds = dict.fromkeys(self.seconds, 0.0)

    def timed(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            self.active.append(phase)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                self.active.pop()
                self.seconds[phase] += spent
                if self.active:
                    self.seconds[self.active[-1]] -= spent

        run.timed_phase = True  # type: ignore[attr-defined]
        return run


#: the phases of this process's evaluations (the wrappers are installed once)
PHASES = Phases()


def instrument(backend: Any) -> None:
    """Time the planning and lowering of this process's evaluations (once), and
    ``backend``'s flush and wait, into :data:`PHASES` (a spartan without
    ``driver_seconds`` in its stats), and the in-process workers' tasks into
    :data:`TASKS`."""
    from spartan.frontend import evaluate, planning

    PIECES.wrap(backend)
    if backend.name == "local" and not getattr(type(backend)._dispatch, "timed_phase", False):
        type(backend)._dispatch = TASKS.timed("tasks", type(backend)._dispatch)
    if has_counter():
        return
    if not getattr(planning.choose, "timed_phase", False):
        planning.choose = PHASES.timed("plan", planning.choose)
        evaluate._lower = PHASES.timed("lower", evaluate._lower)
    backend.flush = PHASES.timed("dispatch", backend.flush)
    backend.wait = PHASES.timed("wait", backend.wait)


#: the in-process workers' time running tasks (inside the driver's lowering)
TASKS = Phases()
TASKS.seconds = {"tasks": 0.0}


class Pieces:
    """Pieces listed by the regions of the tasks submitted since :meth:`reset` (counted
    by wrapping the backend's ``submit``: any spartan version)."""

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        self.count = 0

    def wrap(self, backend: Any) -> None:
        from spartan.backend.base import Region

        if getattr(backend.submit, "counts_pieces", False):
            return
        submit = backend.submit

        def counted(worker: int, fn: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += sum(len(r.pieces) for r in inputs if isinstance(r, Region))
            return submit(worker, fn, inputs, *args, **kwargs)

        counted.counts_pieces = True  # type: ignore[attr-defined]
        backend.submit = counted


#: the pieces of this process's evaluations
PIECES = Pieces()


def has_counter() -> bool:
    """Whether this spartan counts the driver's time per phase itself."""
    from spartan.backend import base

    return hasattr(base, "driver_time")


def driver_phases() -> dict[str, float]:
    """The driver's seconds per phase since the last reset."""
    import spartan

    if has_counter():
        return dict(spartan.stats()["driver_seconds"])
    return dict(PHASES.seconds)


def workloads(n: int, d: int) -> dict[str, tuple[Callable[..., Any], Callable[[], tuple]]]:
    """name -> (program on spartan arrays, inputs), with ``n`` rows."""
    rng = numpy.random.default_rng(0)

    def kmeans_step(sp: Any, x: Any) -> Any:
        c = x[:4]
        dist = (c * c).sum(axis=1) - 2 * (x @ c.T)
        onehot = (dist.argmin(axis=1)[:, None] == sp.arange(4)).astype(x.dtype)
        return (onehot.T @ x) / sp.maximum(onehot.sum(axis=0), 1)[:, None]

    def logreg_step(sp: Any, x: Any, y: Any) -> Any:
        w = sp.zeros(x.shape[1])
        p = 1 / (1 + sp.exp(-(x @ w)))
        return w - 0.1 * (x.T @ (p - y)) / x.shape[0]

    def chain(sp: Any, x: Any) -> Any:
        for i in range(10):
            x = sp.sqrt(x * x + i)
        return x.sum()

    square = max(n // 4, 8)
    return {
        "kmeans step": (kmeans_step, lambda: (rng.standard_normal((n, d)),)),
        "logreg step": (
            logreg_step,
            lambda: (rng.standard_normal((n, d)), (rng.random(n) > 0.5).astype(float)),
        ),
        "elementwise chain": (chain, lambda: (rng.standard_normal((n, d)),)),
        "x + x.T": (lambda sp, x: x + x.T, lambda: (rng.standard_normal((square, square)),)),
        "matmul": (lambda sp, x: x @ x, lambda: (rng.standard_normal((square, square)),)),
    }


def measure(backend_kind: str, workers: int, repeats: int) -> list[dict[str, Any]]:
    """Each workload's driver phases at ``workers`` workers, one evaluation per repeat."""
    import spartan

    spartan.config.tiles_per_worker = TILES_PER_WORKER
    spartan.config.local_below_bytes = 0
    options = {}
    if backend_kind == "ray" and workers > (os.cpu_count() or 1):
        options["cpus_per_worker"] = 0  # (more workers than cores: they share them)
    be = spartan.init(backend=backend_kind, num_workers=workers, **options)
    phases = PHASES
    instrument(be)
    rows = []
    n = workers * TILES_PER_WORKER * ROWS_PER_TILE
    for name, (program, make) in workloads(n, 8).items():
        inputs = make()
        arrays = tuple(spartan.asarray(a) for a in inputs)
        spartan.evaluate(*arrays)
        runs = []
        for _ in range(repeats + 1):  # the first warms up
            spartan.reset_stats()
            phases.reset()
            TASKS.reset()
            PIECES.reset()
            t0 = time.perf_counter()
            out = program(spartan, *arrays)
            spartan.evaluate(out)
            total = time.perf_counter() - t0
            seconds = {**driver_phases(), **TASKS.seconds}
            runs.append((total, seconds, spartan.stats()["tasks"], PIECES.count))
        got = numpy.asarray(out)
        if not numpy.allclose(got, numpy.asarray(program(numpy, *inputs))):
            raise AssertionError(f"{name}: spartan's result differs from NumPy's")
        runs = runs[1:]
        lineage = getattr(getattr(be, "lineage", None), "made_by", None)
        rows.append(
            {
                "backend": backend_kind,
                "workers": workers,
                "workload": name,
                "tiles": workers * TILES_PER_WORKER,
                "total": statistics.median(r[0] for r in runs),
                **{p: statistics.median(r[1][p] for r in runs) for p in [*phases.seconds, "tasks"]},
                "own": statistics.median(
                    r[1]["plan"] + r[1]["lower"] + r[1]["dispatch"] - r[1]["tasks"] for r in runs
                ),
                "ntasks": statistics.median(r[2] for r in runs),
                "pieces": statistics.median(r[3] for r in runs),
                "lineage": None if lineage is None else len(lineage),
            }
        )
    spartan.shutdown()
    return rows


def growth(rows: list[dict[str, Any]], field: str = "total") -> dict[tuple[str, str], float]:
    """Per (backend, workload): the exponent b of ``field`` (driver time) ~ tiles**b
    (least squares on logs; 1.0 is linear)."""
    out = {}
    keys = {(r["backend"], r["workload"]) for r in rows}
    for key in sorted(keys):
        pts = [
            (math.log(r["tiles"]), math.log(max(r[field], 1e-7)))
            for r in rows
            if key == (r["backend"], r["workload"]) and r.get(field) is not None
        ]
        if len(pts) >= 2:
            xs, ys = zip(*pts)
            mx, my = statistics.fmean(xs), statistics.fmean(ys)
            sxx = sum((x - mx) ** 2 for x in xs)
            out[key] = sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else float("nan")
    return out


def table(columns: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *map(line, rows)])


def report(rows: list[dict[str, Any]], before: list[dict[str, Any]] | None = None) -> str:
    """The table by backend, workers and workload, then the fitted growth; with
    ``before`` (rows of an earlier run), its driver and own times next to these."""
    ms = lambda s: f"{1e3 * s:.1f}"  # noqa: E731
    old = {(r["backend"], r["workers"], r["workload"]): r for r in before or ()}

    def count(r: dict[str, Any] | None, field: str) -> str:
        return "-" if r is None or r.get(field) is None else f"{r[field]:.0f}"

    body = []
    for r in rows:
        b = old.get((r["backend"], r["workers"], r["workload"]))
        was = [ms(b["total"]), ms(b["own"])] if b else ["-", "-"]
        body.append(
            [r["backend"], str(r["workers"]), str(r["tiles"]), r["workload"],
             *(was if before is not None else []), ms(r["total"]), ms(r["own"]),
             ms(r["plan"]), ms(r["lower"]), ms(r["tasks"]), ms(r["dispatch"]), ms(r["wait"]),
             f"{r['ntasks']:.0f}", *([count(b, "pieces")] if before is not None else []),
             count(r, "pieces"),
             f"{1e6 * r['own'] / max(r['ntasks'], 1):.0f}",
             "-" if r["lineage"] is None else str(r["lineage"])]
        )  # fmt: skip
    columns = ["backend", "workers", "tiles", "workload",
               *(["before: driver ms", "before: own ms"] if before is not None else []),
               "driver ms", "own ms", "plan ms", "lower ms", "in-process tasks ms",
               "dispatch ms", "wait ms", "tasks",
               *(["before: pieces"] if before is not None else []), "pieces", "own µs / task",
               "lineage records"]  # fmt: skip
    fits = [growth(rows, "total"), growth(rows, "own"), growth(rows, "pieces")]
    fit_columns = ["backend", "workload", "b (driver)", "b (own)", "b (pieces)"]
    if before is not None:
        fits += [growth(before, "total"), growth(before, "own"), growth(before, "pieces")]
        fit_columns += ["before: b (driver)", "before: b (own)", "before: b (pieces)"]
    fit_rows = [
        [b, w, *(f"{f[(b, w)]:.2f}" if (b, w) in f else "-" for f in fits)] for (b, w) in fits[0]
    ]
    return "\n".join(
        [table(columns, body), "", "Time ~ tiles^b, least squares on logs:", "",
         table(fit_columns, fit_rows)]
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true")
    p.add_argument("--local", type=int, nargs="*", help="in-process worker counts (none: skip)")
    p.add_argument("--ray", type=int, nargs="*", help="Ray worker counts (none: skip Ray)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--save", action="store_true", help="write bench/results/master.md")
    p.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    p.add_argument(
        "--before", type=Path, nargs="+", help="rows of an earlier run (--json) to compare"
    )
    p.add_argument(
        "--rows", type=Path, nargs="+", help="report these runs' rows (--json), measure none"
    )
    p.add_argument("--note", default="", help="a line for the results file's header")
    args = p.parse_args(argv)
    local = args.local
    if local is None:
        local = [2, 8, 32, 128] if args.quick else [2, 8, 32, 128, 512]
    on_ray = args.ray if args.ray is not None else ([2, 8] if args.quick else [2, 8, 16])
    rows = [r for path in args.rows or () for r in json.loads(path.read_text(encoding="utf-8"))]
    for kind, counts in (("local", local), ("ray", on_ray)) if not args.rows else ():
        for w in counts:
            rows += measure(kind, w, args.repeats)
            print(f"{kind} {w} workers: done", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    before = None
    if args.before:
        before = [r for p in args.before for r in json.loads(p.read_text(encoding="utf-8"))]
    given = list(sys.argv[1:] if argv is None else argv)
    if "--note" in given:  # (the note is printed under the header, not in the command)
        at = given.index("--note")
        del given[at : at + 2]
    command = "python bench/master.py " + " ".join(given)
    notes = (
        f"{TILES_PER_WORKER} tiles per worker of {ROWS_PER_TILE} rows (x 8 columns): the "
        "workers' compute is negligible, so this is the driver's cost. Each result checked "
        "against NumPy. *own*: plan + lower + dispatch less the in-process tasks (what the "
        "master itself does); *driver*: the whole evaluation's wall time.\n"
    )
    header = run_header(command, f"median of {args.repeats} evaluations after a warm-up")
    if args.note:
        header += "\n\n" + args.note
    write_report(
        "master",
        "The master's time per evaluation",
        header,
        report(rows, before),
        notes,
        args.save,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
