"""scikit-learn on spartan arrays vs on NumPy arrays (issue 36), side by side in one run.

    python bench/sklearn.py                   # 8,000,000 x 32 float64 (2 GB), 2 workers
    python bench/sklearn.py --rows 200000     # a quick run
    python bench/sklearn.py --only pca-full --repeats 5
    python bench/sklearn.py --save            # write bench/results/sklearn.md, not bench/out/

Three workloads, each the same scikit-learn code on both: ``PCA(n_components=8,
svd_solver="full")``, ``PCA(n_components=8, svd_solver="randomized",
power_iteration_normalizer="QR", random_state=0)`` (QR: the normalizer scikit-learn's
array API path uses; NumPy runs it too, so both run the same algorithm), and
``make_pipeline(StandardScaler(), Ridge(solver="svd"))`` fitted on (X, y). spartan's
runs are under ``sklearn.config_context(array_api_dispatch=True)`` on Ray workers
(``--workers``, default 2); NumPy's under scikit-learn's defaults, in this process.

A run is ``fit`` plus fetching the fitted arrays (components, explained variance and
mean; the scaler's and Ridge's coefficients) as NumPy arrays; the inputs are loaded
before. They are written once to ``.npy`` files (``--data-dir``, a temporary folder
by default, removed at the end): NumPy reads them into this process before each of its
runs and drops them after (so spartan's runs have that memory), spartan's workers read
their tiles from them once (``spartan.load`` + ``evaluate``: no copy in Ray's object
store). Each system's
fitted arrays are compared with NumPy's (``allclose``) before any time counts. The
systems alternate, after one warm-up run each, and the median of ``--repeats`` runs is
reported with the ratio spartan / NumPy (lower is better), and spartan's bytes moved
between workers and fetched into the driver in its last run (``spartan.stats()``).
Each workload gets fresh spartan workers (``spartan.init`` again), as if run alone.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# SciPy reads this when it is first imported; scikit-learn's array API dispatch needs it
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run by its path (or by ``python -m bench``), this file's folder leads sys.path, and
# ``import sklearn`` would import this file: scikit-learn must come from site-packages.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

from bench.provenance import run_header, seconds, write_report  # noqa: E402

COMPONENTS = 8


# -- the workloads: scikit-learn code, the same for both array types -----------------------


def pca_full(X: Any, y: Any) -> dict[str, Any]:
    from sklearn.decomposition import PCA

    pca = PCA(n_components=COMPONENTS, svd_solver="full").fit(X)
    return {"components_": pca.components_, "variance": pca.explained_variance_}


def pca_randomized(X: Any, y: Any) -> dict[str, Any]:
    from sklearn.decomposition import PCA

    pca = PCA(
        n_components=COMPONENTS,
        svd_solver="randomized",
        power_iteration_normalizer="QR",
        random_state=0,
    ).fit(X)
    return {"components_": pca.components_, "variance": pca.explained_variance_}


def scaler_ridge(X: Any, y: Any) -> dict[str, Any]:
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), Ridge(alpha=1.0, solver="svd")).fit(X, y)
    scaler, ridge = pipe[0], pipe[-1]
    return {
        "mean_": scaler.mean_,
        "scale_": scaler.scale_,
        "coef_": ridge.coef_,
        "intercept_": ridge.intercept_,
    }


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    run: Callable[[Any, Any], dict[str, Any]]


WORKLOADS = [
    Workload("pca-full", f'`PCA({COMPONENTS}, svd_solver="full").fit(X)`', pca_full),
    Workload(
        "pca-randomized",
        f'`PCA({COMPONENTS}, svd_solver="randomized", power_iteration_normalizer="QR").fit(X)`',
        pca_randomized,
    ),
    Workload(
        "scaler-ridge",
        '`make_pipeline(StandardScaler(), Ridge(solver="svd")).fit(X, y)`',
        scaler_ridge,
    ),
]
NAMES = [w.name for w in WORKLOADS]


# -- the two systems -----------------------------------------------------------------------


class NumpySystem:
    name = "numpy"

    def load(self, X_path: Path, y_path: Path) -> None:
        self.paths = X_path, y_path

    def run(self, w: Workload) -> dict[str, numpy.ndarray]:
        return {k: numpy.asarray(v) for k, v in w.run(self.X, self.y).items()}

    def __enter__(self) -> NumpySystem:
        """X and y read into this process for the runs inside (not timed), and dropped
        after, so spartan's runs have the memory: its memory check is of the machine's
        available memory (an in-memory copy, as scikit-learn's copy of a memory map ran
        PCA 40% slower)."""
        self.X, self.y = (numpy.load(p) for p in self.paths)
        return self

    def __exit__(self, *exc: object) -> None:
        self.X = self.y = None
        gc.collect()


class SpartanSystem:
    name = "spartan"

    def __init__(self, workers: int) -> None:
        import sklearn

        import spartan

        spartan.init(backend="ray", num_workers=workers)  # (again after a shutdown)
        self.sp, self.sklearn = spartan, sklearn

    def load(self, X_path: Path, y_path: Path) -> None:
        self.X, self.y = self.sp.load(X_path), self.sp.load(y_path)
        self.sp.evaluate(self.X, self.y)

    def run(self, w: Workload) -> dict[str, numpy.ndarray]:
        with self.sklearn.config_context(array_api_dispatch=True):
            out = w.run(self.X, self.y)
        lazy = [k for k, v in out.items() if isinstance(v, self.sp.Array)]
        # one evaluation computes what the fitted arrays share once; one wait fetches all
        fetched = dict(zip(lazy, self.sp.compute(*(out[k] for k in lazy))))
        return {k: numpy.asarray(fetched.get(k, v)) for k, v in out.items()}

    def __enter__(self) -> SpartanSystem:
        return self  # its inputs stay on the workers between runs

    def __exit__(self, *exc: object) -> None:
        pass

    def unload(self) -> None:
        self.X = self.y = None
        gc.collect()  # frees the tiles on the workers

    def close(self) -> None:
        self.unload()
        self.sp.shutdown()


# -- measuring -----------------------------------------------------------------------------


def make_data(rows: int, cols: int, folder: Path) -> tuple[Path, Path]:
    """``X.npy``: correlated features of different scales and offsets; ``y.npy``: a noisy
    linear target. Written in pieces: no full-size array in memory."""
    rng = numpy.random.default_rng(0)
    mix = rng.standard_normal((cols, cols)) / numpy.sqrt(cols)
    w = rng.standard_normal(cols)
    X_path, y_path = folder / "X.npy", folder / "y.npy"
    X = numpy.lib.format.open_memmap(X_path, "w+", numpy.float64, (rows, cols))
    y = numpy.lib.format.open_memmap(y_path, "w+", numpy.float64, (rows,))
    step = 1 << 18
    for lo in range(0, rows, step):
        part = rng.standard_normal((min(step, rows - lo), cols)) @ mix + numpy.arange(cols) * 0.5
        X[lo : lo + step] = part
        y[lo : lo + step] = part @ w + 0.1 * rng.standard_normal(len(part))
    X.flush()
    y.flush()
    del X, y
    return X_path, y_path


def differences(got: dict[str, numpy.ndarray], want: dict[str, numpy.ndarray]) -> list[str]:
    """Fitted arrays that differ from NumPy's (components up to their sign)."""
    out = []
    for k, w in want.items():
        g = got[k]
        if k == "components_":
            g, w = numpy.abs(g), numpy.abs(w)
        if g.shape != w.shape or not numpy.allclose(g, w, rtol=1e-6, atol=1e-9):
            out.append(k)
    return out


def quiesce(limit: float = 1.0) -> None:
    """Wait until this process stops using the CPU (at most ``limit`` seconds): BLAS
    threads spin for a while after a NumPy call and would share a core with the next
    system's workers."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        used = time.process_time()
        time.sleep(0.01)
        if time.process_time() - used < 0.001:
            return


@dataclass
class Row:
    name: str
    what: str
    seconds: dict[str, float] = field(default_factory=dict)
    moved: int | None = None
    to_driver: int | None = None
    problem: str = ""

    @property
    def ratio(self) -> float | None:
        s, n = self.seconds.get("spartan"), self.seconds.get("numpy")
        return s / n if s is not None and n else None


def timed(system: Any, w: Workload) -> float:
    with system:
        gc.collect()  # a collection in the timed region would land on whichever runs next
        quiesce()
        start = time.perf_counter()
        system.run(w)
        return time.perf_counter() - start


def checked(system: Any, w: Workload) -> dict[str, numpy.ndarray]:
    """An untimed run: the warm-up, and the fitted arrays to compare."""
    with system:
        return system.run(w)


def measure(w: Workload, systems: list[Any], repeats: int) -> Row:
    row = Row(w.name, w.what)
    want = checked(systems[0], w)  # NumPy's: the warm-up and the reference
    active = [systems[0]]
    for s in systems[1:]:
        try:
            problems = differences(checked(s, w), want)  # its warm-up
        except Exception as e:  # noqa: BLE001 -- reported in the table, the rest still run
            print(f"{w.name}: {s.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            row.problem = f"{s.name} failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
            continue
        if problems:
            row.problem = f"{s.name}'s {', '.join(problems)} differ from NumPy's: not timed"
            continue
        active.append(s)
    times: dict[str, list[float]] = {s.name: [] for s in active}
    for _ in range(repeats):
        for s in list(active):
            if s.name == "spartan":
                s.sp.reset_stats()  # a round trip to each worker, outside the timed run
            try:
                times[s.name].append(timed(s, w))
            except Exception as e:  # noqa: BLE001 -- e.g. a MemoryError: in the table
                print(f"{w.name}: {s.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
                row.problem = (
                    f"{s.name} failed in a timed run: {type(e).__name__}: "
                    + str(e).splitlines()[0][:160]
                )
                active.remove(s)
                del times[s.name]
    row.seconds = {name: statistics.median(t) for name, t in times.items()}
    spartan = next((s for s in active if s.name == "spartan"), None)
    if spartan is not None:
        stats = spartan.sp.stats()
        row.moved, row.to_driver = stats["bytes_moved"], stats["bytes_to_driver"]
    return row


# -- reporting -----------------------------------------------------------------------------


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS unknown"
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return "BLAS unknown"
    return f"{pools[0]['internal_api']} with {pools[0]['num_threads']} threads"


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:,.1f} MB"


def table(rows: list[Row], shape: tuple[int, int], workers: int) -> str:
    mb = shape[0] * shape[1] * 8 / 1e6
    lines = [
        f"| workload ({shape[0]:,} x {shape[1]} float64, {mb:,.0f} MB) | NumPy "
        f"| spartan, {workers} workers | spartan / NumPy | moved between workers "
        "| fetched into the driver | notes |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        lines.append(
            f"| {r.name}: {r.what} | {seconds(r.seconds.get('numpy'))} "
            f"| {seconds(r.seconds.get('spartan'))} | {ratio} | {_mb(r.moved)} "
            f"| {_mb(r.to_driver)} | {r.problem or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--rows", type=int, default=8_000_000, help="rows of X (default 8M)")
    p.add_argument("--cols", type=int, default=32, help="columns of X (default 32)")
    p.add_argument("--workers", type=int, default=2, help="spartan's Ray workers (default 2)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs (default 3)")
    p.add_argument("--only", nargs="+", choices=NAMES, default=None, help="these workloads")
    p.add_argument(
        "--data-dir", default=None, help="where X.npy and y.npy go (default: a temporary folder)"
    )
    p.add_argument(
        "--save", action="store_true", help="write bench/results/sklearn.md (default: bench/out/)"
    )
    args = p.parse_args(argv)
    if args.cols < COMPONENTS:
        p.error(f"--cols must be at least {COMPONENTS} (the PCA components)")
    try:
        import sklearn
    except ImportError:
        p.error("scikit-learn is not installed (pip install '.[bench]')")
    if Path(sklearn.__file__).resolve() == Path(__file__).resolve():
        p.error("this script was imported as scikit-learn: run it by its path")

    command = "python bench/sklearn.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = run_header(
        command,
        f"median of {args.repeats}; scikit-learn {sklearn.__version__}, NumPy "
        f"{numpy.__version__} ({_blas()})",
    )
    print(header, flush=True)

    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="spartan-bench-sklearn-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        X_path, y_path = make_data(args.rows, args.cols, folder)
        numpy_system = NumpySystem()
        numpy_system.load(X_path, y_path)
        for w in WORKLOADS:
            if args.only and w.name not in args.only:
                continue
            # fresh workers for each workload: memory a worker keeps for reuse after one
            # (spartan.config.worker_keep_freed_bytes) is not counted as available by
            # the next one's memory check
            spartan_system = SpartanSystem(args.workers)
            try:
                spartan_system.load(X_path, y_path)
                row = measure(w, [numpy_system, spartan_system], args.repeats)
            finally:
                spartan_system.close()
            rows.append(row)
            ratio = f"{row.ratio:.2f}x" if row.ratio is not None else row.problem
            print(
                f"{w.name}: NumPy {seconds(row.seconds.get('numpy'))}, spartan "
                f"{seconds(row.seconds.get('spartan'))} ({ratio})",
                flush=True,
            )
    finally:
        if not args.data_dir:
            shutil.rmtree(folder, ignore_errors=True)

    report = table(rows, (args.rows, args.cols), args.workers)
    notes = (
        "A run: `fit` and fetching the fitted arrays into NumPy; inputs loaded before. "
        "spartan runs under `sklearn.config_context(array_api_dispatch=True)`, NumPy under "
        "scikit-learn's defaults. Bytes: spartan's last timed run (`spartan.stats()`).\n"
    )
    write_report(
        "sklearn",
        "scikit-learn on spartan arrays (issue 36): `bench/sklearn.py`",
        header,
        report,
        notes,
        args.save,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
