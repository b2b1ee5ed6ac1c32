"""Zarr and HDF5 read + reduce + write (issue 37): spartan vs Dask distributed vs NumPy.

    python bench/io.py                       # 16384 x 16384 float64 (2 GiB), 2 workers
    python bench/io.py --quick               # 2048 x 2048, one timed run each
    python bench/io.py --only zarr --repeats 5
    python bench/io.py --save                # write bench/results/io.md, not bench/out/

The input, normal random numbers with a different mean and scale in every column, is
written once per run (not timed) with zarr and h5py directly into a temporary folder
(``--data-dir``; removed at the end): a Zarr store (zarr's default codecs: zstd) and an
HDF5 file (h5py's default: uncompressed), both chunked ``--chunk-rows`` full rows.

A run, the same for every system and timed end to end, from opening the input to
holding the results in NumPy::

    x = <read the stored array>
    m = x.mean(axis=0)                   # column means, fetched
    ss = ((x - m) ** 2).sum()            # centred sum of squares, fetched
    <write> x * 2 + 1                    # a new Zarr array / HDF5 dataset, same chunks

- spartan, ``--workers`` Ray workers: ``from_zarr``/``from_hdf5``, ``to_zarr``/``to_hdf5``
  of ``y`` (which reads ``x`` once and writes as ``y``'s tiles are made), then
  ``compute(m, ss)`` from ``x`` in memory.
- Dask distributed, ``LocalCluster(n_workers=--workers, threads_per_worker=1,
  processes=True)``, one ``client.compute`` of the two results and the write. Zarr:
  ``da.from_zarr``, ``da.to_zarr``. HDF5: ``da.from_array(h5py dataset)`` and
  ``da.to_hdf5`` fail on worker processes (the graph is pickled whole, and h5py
  objects cannot be: dask/distributed#9013, dask/dask#6522), so the read is
  ``da.from_array`` of a reader and the write ``da.store`` into a target, each opening
  the file on the worker for each block, the writes under a ``distributed.Lock`` (one
  writer at a time, as HDF5 needs and as spartan's ``to_hdf5`` does).
- NumPy, this process: read the whole array with zarr/h5py, NumPy, write with
  zarr/h5py.

Each system's means and sum of squares are compared with NumPy's (``allclose``), and
sampled rows of every written array with ``x * 2 + 1`` of the input (exact), after
one untimed warm-up run each. Then the systems alternate, ``--repeats`` runs each,
and the medians are reported with the time ratios (lower: the first is faster). After
each run its output is deleted and ``os.sync()`` flushes the page cache's dirty pages
(not timed), so one run's writeback does not land in the next. Reads come from the
page cache (the input is smaller than memory), writes end in it: this measures
decoding, computing and encoding, not the disk. Peak driver RSS: the largest resident
memory of this process during a system's runs (sampled every 20 ms; before the
runs of spartan and Dask, the freed memory NumPy's run left is handed back). Dask's workers
are stopped (SIGSTOP) while the other systems run (idle, they take CPU), and every
process keeps up to 1 GiB of freed memory for reuse, as spartan's workers do.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run by its path, this file's folder leads sys.path, and bench/sklearn.py would be
# imported for scikit-learn (dask imports it where installed)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from bench.provenance import run_header, seconds, write_report  # noqa: E402

FORMATS = ["zarr", "hdf5"]
SYSTEMS = ["numpy", "spartan", "dask"]
DATASET = "x"  # the input's name in the HDF5 file
OUT_DATASET = "y"
SAMPLE_ROWS = 24


@dataclass
class Result:
    """What a run returns: the reduced values and how long each phase took."""

    mean: numpy.ndarray
    ss: float
    phases: dict[str, float] = field(default_factory=dict)


class Phases:
    """Times of the consecutive phases of one run."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.last = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name] = now - self.last
        self.last = now


# -- the input -----------------------------------------------------------------------------


def make_data(shape: tuple[int, int], chunk_rows: int, folder: Path) -> tuple[Path, Path]:
    """``x.zarr`` and ``x.h5`` with the same values, written a chunk row at a time."""
    import h5py
    import zarr

    rng = numpy.random.default_rng(0)
    rows, cols = shape
    chunks = (chunk_rows, cols)
    scale = rng.uniform(0.5, 2.0, cols)
    offset = rng.uniform(-10.0, 10.0, cols)
    zpath, hpath = folder / "x.zarr", folder / "x.h5"
    z = zarr.create_array(str(zpath), shape=shape, chunks=chunks, dtype="float64")
    with h5py.File(hpath, "w") as f:
        h = f.create_dataset(DATASET, shape=shape, chunks=chunks, dtype="float64")
        for lo in range(0, rows, chunk_rows):
            block = rng.standard_normal((min(chunk_rows, rows - lo), cols)) * scale + offset
            z[lo : lo + len(block)] = block
            h[lo : lo + len(block)] = block
    return zpath, hpath


def sample_rows(rows: int) -> numpy.ndarray:
    """Rows checked in every written array: the first, the last and random ones."""
    rng = numpy.random.default_rng(1)
    picked = rng.choice(rows, size=min(rows, SAMPLE_ROWS), replace=False)
    return numpy.unique(numpy.concatenate([[0, rows - 1], picked]))


def read_rows(fmt: str, path: Path, name: str, rows: numpy.ndarray) -> numpy.ndarray:
    import h5py
    import zarr

    if fmt == "zarr":
        z = zarr.open_array(str(path), mode="r")
        return numpy.stack([z[int(r)] for r in rows])
    with h5py.File(path, "r") as f:
        return f[name][rows.tolist()]


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


# -- the three systems ---------------------------------------------------------------------


class NumpySystem:
    name = "numpy"
    label = "NumPy (1 process)"

    def run(self, fmt: str, src: Path, out: Path, chunks: tuple[int, int]) -> Result:
        import h5py
        import zarr

        t = Phases()
        if fmt == "zarr":
            x = zarr.open_array(str(src), mode="r")[...]
        else:
            with h5py.File(src, "r") as f:
                x = f[DATASET][...]
        t.done("read")
        m = x.mean(axis=0)
        ss = float(((x - m) ** 2).sum())
        y = x * 2 + 1
        t.done("compute")
        if fmt == "zarr":
            z = zarr.create_array(str(out), shape=y.shape, chunks=chunks, dtype=y.dtype)
            z[...] = y
        else:
            with h5py.File(out, "w") as f:
                f.create_dataset(OUT_DATASET, data=y, chunks=chunks)
        t.done("write")
        return Result(m, ss, t.times)

    def processes(self) -> list[psutil.Process]:
        return [psutil.Process()]

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def close(self) -> None:
        pass


class SpartanSystem:
    name = "spartan"

    def __init__(self, workers: int) -> None:
        import spartan

        spartan.init(backend="ray", num_workers=workers)
        self.sp = spartan
        # a local Ray's worker processes descend from this one (through its raylet)
        self.workers = [
            p
            for p in psutil.Process().children(recursive=True)
            if p.name().startswith("ray::RayWorker")
        ]
        self.label = f"spartan ({workers} Ray workers)"

    def run(self, fmt: str, src: Path, out: Path, chunks: tuple[int, int]) -> Result:
        sp = self.sp
        t = Phases()
        x = sp.from_zarr(str(src)) if fmt == "zarr" else sp.from_hdf5(str(src), DATASET)
        m = x.mean(axis=0)
        ss = ((x - m) ** 2).sum()
        y = x * 2 + 1
        # the write evaluates y (reading x once, kept for m and ss) and writes each
        # part as soon as it is made; m and ss then come from x in memory
        if fmt == "zarr":
            sp.to_zarr(y, str(out), chunks=chunks)
        else:
            sp.to_hdf5(str(out), OUT_DATASET, y, chunks=chunks)
        t.done("read+compute+write")
        m_np, ss_np = sp.compute(m, ss)
        t.done("reduce+fetch")
        return Result(numpy.asarray(m_np), float(ss_np), t.times)

    def processes(self) -> list[psutil.Process]:
        return [psutil.Process(), *self.workers]

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def close(self) -> None:
        gc.collect()
        self.sp.shutdown()


class Hdf5BlockReader:
    """A ``da.from_array`` source that opens the HDF5 file on the worker for each block:
    with distributed, the graph is pickled whole and an h5py dataset in it cannot be
    (dask/distributed#9013)."""

    def __init__(self, path: str, name: str) -> None:
        import h5py

        self.path, self.name = path, name
        with h5py.File(path, "r") as f:
            self.shape, self.dtype = f[name].shape, f[name].dtype
        self.ndim = len(self.shape)

    def __getitem__(self, index: Any) -> numpy.ndarray:
        import h5py

        with h5py.File(self.path, "r") as f:
            return f[self.name][index]


class Hdf5BlockWriter:
    """A ``da.store`` target that opens the HDF5 file on the worker for each block
    (an open writable h5py file cannot be sent to a Dask worker process)."""

    def __init__(self, path: str, name: str) -> None:
        self.path, self.name = path, name

    def __setitem__(self, index: Any, block: numpy.ndarray) -> None:
        import h5py

        with h5py.File(self.path, "r+") as f:
            f[self.name][index] = block


class DaskSystem:
    name = "dask"

    def __init__(self, workers: int) -> None:
        import dask
        import dask.array
        from dask.distributed import Client, LocalCluster

        from spartan.backend.heap import DEFAULT_KEEP_MAX, keep_freed_memory

        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        self.client = Client(cluster)
        self.client.run(keep_freed_memory, DEFAULT_KEEP_MAX)
        self.da = dask.array
        self.label = f"Dask distributed ({workers} worker processes, 1 thread each)"
        self.version = dask.__version__
        self._stopped: list[psutil.Process] = []
        self.workers = [psutil.Process(p) for p in self.client.run(os.getpid).values()]

    def processes(self) -> list[psutil.Process]:
        return [psutil.Process(), *self.workers]

    def run(self, fmt: str, src: Path, out: Path, chunks: tuple[int, int]) -> Result:
        import h5py
        from dask.distributed import Lock

        da = self.da
        t = Phases()
        if fmt == "zarr":
            x = da.from_zarr(str(src))
        else:
            x = da.from_array(Hdf5BlockReader(str(src), DATASET), chunks=chunks, lock=False)
        m = x.mean(axis=0)
        ss = ((x - m) ** 2).sum()
        y = x * 2 + 1
        if fmt == "zarr":
            write = da.to_zarr(y, str(out), compute=False)
        else:
            with h5py.File(out, "w") as g:
                g.create_dataset(OUT_DATASET, shape=y.shape, dtype=y.dtype, chunks=chunks)
            target = Hdf5BlockWriter(str(out), OUT_DATASET)
            write = da.store(y, target, lock=Lock("bench-io-hdf5"), compute=False)
        m_np, ss_np, _ = self.client.gather(self.client.compute([m, ss, write]))
        t.done("all")
        return Result(numpy.asarray(m_np), float(ss_np), t.times)

    def pause(self) -> None:
        """Dask's idle workers use CPU (heartbeats, memory monitors): stopped while the
        other systems run, far shorter than the scheduler's worker time-to-live."""
        if not self._stopped:
            self._stopped = list(self.workers)
            for p in self._stopped:
                p.suspend()

    def resume(self) -> None:
        for p in self._stopped:
            p.resume()
        self._stopped = []

    def close(self) -> None:
        self.resume()
        self.client.cluster.close()
        self.client.close()


# -- measuring -----------------------------------------------------------------------------


@contextmanager
def peak_rss(into: list[int], every: float = 0.02) -> Iterator[None]:
    """Append the largest RSS of this process seen while inside to ``into``."""
    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(every):
            peak[0] = max(peak[0], proc.memory_info().rss)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        into.append(max(peak[0], proc.memory_info().rss))


def quiesce(limit: float = 1.0) -> None:
    """Wait until this process stops using the CPU (at most ``limit`` seconds): BLAS and
    codec threads may still spin after a call and would share a core with the next run."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        used = time.process_time()
        time.sleep(0.01)
        if time.process_time() - used < 0.001:
            return


@dataclass
class Row:
    fmt: str
    seconds: dict[str, float] = field(default_factory=dict)
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    rss: dict[str, int] = field(default_factory=dict)
    moved: int | None = None
    problems: list[str] = field(default_factory=list)

    def ratio(self, a: str, b: str) -> str:
        if a in self.seconds and b in self.seconds and self.seconds[b]:
            return f"{self.seconds[a] / self.seconds[b]:.2f}x"
        return "-"


def check(
    fmt: str, system: Any, got: Result, want: Result, out: Path, x_rows: numpy.ndarray, rows: Any
) -> list[str]:
    """Where ``got`` (and the array just written to ``out``) differ from the reference."""
    problems = []
    if not numpy.allclose(got.mean, want.mean, rtol=1e-10, atol=1e-12):
        problems.append(f"{system.name}'s column means differ from NumPy's")
    if not numpy.isclose(got.ss, want.ss, rtol=1e-9):
        problems.append(f"{system.name}'s sum of squares {got.ss!r} is not NumPy's {want.ss!r}")
    written = read_rows(fmt, out, OUT_DATASET, rows)
    if not numpy.array_equal(written, x_rows * 2 + 1):
        problems.append(f"{system.name}'s written array differs from x * 2 + 1")
    return problems


def trim_heap() -> None:
    """Hand this process's kept freed memory back (glibc), so the next system's peak
    driver RSS does not include what NumPy's run left for reuse."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def cpuseconds(procs: list[psutil.Process]) -> tuple[float, float]:
    """User and system CPU seconds these processes (all their threads) have used."""
    times = [p.cpu_times() for p in procs]
    return sum(t.user for t in times), sum(t.system for t in times)


def one_run(
    system: Any, fmt: str, src: Path, out: Path, chunks: tuple[int, int], rss: list[int]
) -> tuple[float, Result]:
    """One run; its result's phases get ``cpu user``/``cpu sys``: the CPU seconds of
    the driver and the system's workers over the run."""
    gc.collect()  # a collection in the timed region would land on whichever runs next
    if system.name != "numpy":
        trim_heap()
    quiesce()
    procs = system.processes()
    user, sys_ = cpuseconds(procs)
    with peak_rss(rss):
        start = time.perf_counter()
        result = system.run(fmt, src, out, chunks)
        elapsed = time.perf_counter() - start
    user_after, sys_after = cpuseconds(procs)
    result.phases["cpu user"] = user_after - user
    result.phases["cpu sys"] = sys_after - sys_
    return elapsed, result


def measure(
    fmt: str,
    src: Path,
    folder: Path,
    systems: list[Any],
    chunks: tuple[int, int],
    repeats: int,
    rows_checked: numpy.ndarray,
) -> Row:
    row = Row(fmt)
    x_rows = read_rows(fmt, src, DATASET, rows_checked)
    out = folder / ("out.zarr" if fmt == "zarr" else "out.h5")
    active, want = [], None
    times: dict[str, list[float]] = {}
    phases: dict[str, list[dict[str, float]]] = {}
    rss: dict[str, list[int]] = {}

    def alone(s: Any) -> None:
        for other in systems:
            if other is not s:
                other.pause()
        s.resume()

    def after_run() -> None:
        remove(out)
        os.sync()  # this run's dirty pages written back now, not in the next run

    for s in systems:  # warm-up and check; NumPy's first: the reference
        alone(s)
        rss[s.name] = []
        try:
            seconds, got = one_run(s, fmt, src, out, chunks, rss[s.name])
            print(f"  {fmt} {s.name} warm-up: {seconds:.2f} s {_phases(got.phases)}", flush=True)
            want = want or got
            problems = check(fmt, s, got, want, out, x_rows, rows_checked)
        except Exception as e:  # noqa: BLE001 -- reported in the table, the rest still run
            print(f"  {fmt} {s.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            problems = [f"{s.name} failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"]
        finally:
            after_run()
        row.problems += problems
        if not problems:
            active.append(s)
            times[s.name], phases[s.name] = [], []
    for i in range(repeats):
        for s in list(active):
            alone(s)
            if s.name == "spartan":
                s.sp.reset_stats()
            try:
                seconds, got = one_run(s, fmt, src, out, chunks, rss[s.name])
            except Exception as e:  # noqa: BLE001 -- e.g. a MemoryError: in the table
                print(f"  {fmt} {s.name} failed: {type(e).__name__}: {e}", file=sys.stderr)
                row.problems.append(f"{s.name} failed in a timed run: {type(e).__name__}")
                active.remove(s)
                del times[s.name]
                continue
            finally:
                after_run()
            times[s.name].append(seconds)
            phases[s.name].append(got.phases)
            print(
                f"  {fmt} {s.name} run {i + 1}/{repeats}: {seconds:.2f} s {_phases(got.phases)}",
                flush=True,
            )
            if s.name == "spartan":
                row.moved = s.sp.stats()["bytes_moved"]
    row.seconds = {name: statistics.median(t) for name, t in times.items()}
    row.phases = {
        name: {k: statistics.median(p[k] for p in ps) for k in ps[0]}
        for name, ps in phases.items()
        if ps
    }
    row.rss = {name: max(r) for name, r in rss.items() if r}
    return row


# -- reporting -----------------------------------------------------------------------------


def _phases(p: dict[str, float]) -> str:
    return "(" + ", ".join(f"{k} {v:.2f} s" for k, v in p.items()) + ")" if len(p) > 1 else ""


def _gb(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f}"


def table(rows: list[Row], shape: tuple[int, int], chunk_rows: int, workers: int) -> str:
    gib = shape[0] * shape[1] * 8 / 2**30
    lines = [
        f"| format ({shape[0]:,} x {shape[1]:,} float64, {gib:.2f} GiB; chunks {chunk_rows:,} rows) "
        f"| NumPy | spartan, {workers} workers | Dask distributed, {workers} workers "
        "| spartan / NumPy | Dask / NumPy | spartan / Dask "
        "| peak driver RSS, GiB (NumPy / spartan / Dask) | spartan moved between workers "
        "| phases and CPU of driver + workers (medians) | notes |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for r in rows:
        what = "Zarr (zstd)" if r.fmt == "zarr" else "HDF5 (uncompressed)"
        rss = " / ".join(_gb(r.rss.get(s)) for s in SYSTEMS)
        moved = "-" if r.moved is None else f"{r.moved / 1e6:,.1f} MB"
        phases = "; ".join(
            f"{s}: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.phases[s].items())
            for s in SYSTEMS
            if s in r.phases
        )
        lines.append(
            f"| {what} | {seconds(r.seconds.get('numpy'))} | {seconds(r.seconds.get('spartan'))} "
            f"| {seconds(r.seconds.get('dask'))} | {r.ratio('spartan', 'numpy')} "
            f"| {r.ratio('dask', 'numpy')} | {r.ratio('spartan', 'dask')} | {rss} | {moved} "
            f"| {phases or '-'} | {'; '.join(r.problems) or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--size", type=int, default=None, help="rows = columns (default 16384)")
    p.add_argument("--chunk-rows", type=int, default=None, help="rows per chunk (default n/16)")
    p.add_argument("--quick", action="store_true", help="2048 x 2048, one timed run")
    p.add_argument("--workers", type=int, default=2, help="spartan's and Dask's workers")
    p.add_argument("--repeats", type=int, default=None, help="timed runs (default 3; 1 quick)")
    p.add_argument("--only", nargs="+", choices=FORMATS, default=FORMATS, help="these formats")
    p.add_argument(
        "--systems",
        nargs="+",
        choices=SYSTEMS,
        default=SYSTEMS,
        help="these systems (NumPy always)",
    )
    p.add_argument("--data-dir", default=None, help="where the files go (default: a temp folder)")
    p.add_argument(
        "--save", action="store_true", help="write bench/results/io.md (default: bench/out/)"
    )
    args = p.parse_args(argv)
    n = args.size or (2048 if args.quick else 16384)
    chunk_rows = args.chunk_rows or max(1, n // 16)
    repeats = args.repeats or (1 if args.quick else 3)
    shape, chunks = (n, n), (chunk_rows, n)

    import dask
    import h5py
    import zarr

    from spartan.backend.heap import DEFAULT_KEEP_MAX, keep_freed_memory

    command = "python bench/io.py " + " ".join(sys.argv[1:] if argv is None else argv)
    header = run_header(
        command,
        f"median of {repeats} after a warm-up; zarr {zarr.__version__}, h5py "
        f"{h5py.__version__} (HDF5 {h5py.version.hdf5_version}), Dask {dask.__version__}, "
        f"NumPy {numpy.__version__}",
    )
    print(header, flush=True)
    keep_freed_memory(DEFAULT_KEEP_MAX)  # as spartan's workers (and Dask's, below) do

    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="spartan-bench-io-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    systems: list[Any] = []
    try:
        start = time.perf_counter()
        zpath, hpath = make_data(shape, chunk_rows, folder)
        print(f"input written in {time.perf_counter() - start:.1f} s to {folder}", flush=True)
        os.sync()
        systems.append(NumpySystem())
        if "spartan" in args.systems:
            systems.append(SpartanSystem(args.workers))
        if "dask" in args.systems:
            systems.append(DaskSystem(args.workers))
        checked = sample_rows(n)
        for fmt in args.only:
            src = zpath if fmt == "zarr" else hpath
            row = measure(fmt, src, folder, systems, chunks, repeats, checked)
            rows.append(row)
            print(
                f"{fmt}: NumPy {seconds(row.seconds.get('numpy'))}, spartan "
                f"{seconds(row.seconds.get('spartan'))}, Dask {seconds(row.seconds.get('dask'))}; "
                f"spartan/NumPy {row.ratio('spartan', 'numpy')}, Dask/NumPy "
                f"{row.ratio('dask', 'numpy')}, spartan/Dask {row.ratio('spartan', 'dask')}"
                + (f"; {'; '.join(row.problems)}" if row.problems else ""),
                flush=True,
            )
    finally:
        for s in reversed(systems):
            s.close()
        if not args.data_dir:
            shutil.rmtree(folder, ignore_errors=True)

    report = table(rows, shape, chunk_rows, args.workers)
    notes = (
        "A run: open, read, `m = x.mean(axis=0)`, `ss = ((x - m) ** 2).sum()`, write "
        "`x * 2 + 1` (same chunks) and hold `m`, `ss` in NumPy; timed end to end. Ratios "
        "are of times (lower: the first is faster). Input and output in the page cache "
        "(dirty pages flushed between runs, not timed). Dask's HDF5: `da.from_array` of a "
        "reader and `da.store` under a `distributed.Lock`, each opening the file per block "
        "(h5py objects cannot be pickled into a distributed graph: dask/distributed#9013). "
        "Bytes moved: spartan's last run. CPU: user and system seconds of the driver and "
        "the system's worker processes, all threads.\n"
    )
    write_report(
        "io",
        "Zarr and HDF5 read + reduce + write (issue 37): `bench/io.py`",
        header,
        report,
        notes,
        args.save,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
