"""Fault injection (issue 35): seeded worker kills at reproducible points of workloads.

    python bench/faults.py                       # 200 trials, 3 Ray workers
    python bench/faults.py --trials 20 --seed 7  # a short run
    python bench/faults.py --save                # write bench/results/faults.md

Each trial runs one small workload (a reduction, matmul, cumsum, sort, k-means,
logistic regression, a loop of slice updates, a checkpoint save and load) on Ray
workers with tiny tiles while a :class:`Killer` SIGKILLs workers at a point drawn
from the trial's seed. Points are counted in the driver's own, deterministic events,
not in time: the k-th task or put logged, the k-th wait (an evaluation's end, a fetch),
and the j-th task a recovery re-sends (a kill during recovery). Kinds of fault:

- ``task``: one worker, when the k-th task is logged (its earlier tasks are running);
- ``two``: two workers at once; ``all``: every worker at once;
- ``recovery``: one worker at the k-th task, then, while the recovery re-runs its
  tasks, the j-th re-sent task's worker (often the replacement itself);
- ``wait``: one worker as the k-th wait starts (between evaluations, before a fetch);
- ``burst``: each recovery's first re-sent task kills its worker, more times than
  ``spartan.config.recovery_attempts``; the deaths a recovery finds together are
  replaced together, so the evaluation ends with its result or
  :class:`spartan.WorkerLostError`, and the session goes on either way.

A trial is *survived* when it ends with the result of the same program run without
faults (or, for ``burst``, with ``WorkerLostError`` instead), and the session works afterwards:
a fresh evaluation is right and the trial's inputs, made before the kills, are still
readable and equal. *Data lost* counts trials after which an input was unreadable or
wrong, or a checkpoint that reported success did not load. *Bit-identical* compares
the bytes of the result with the fault-free run's. Recovery time is the trial's wall
time minus the fault-free run's. Results go to bench/out/ (``--save``:
bench/results/faults.md).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import spartan as sp

HERE = Path(__file__).resolve().parent
KINDS = ("task", "two", "all", "recovery", "wait", "burst")


# -- workloads: (name, make inputs, program) ------------------------------------------


def _inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "a": rng.standard_normal((96, 12)),
        "b": rng.standard_normal((12, 10)),
        "y": (rng.random(96) > 0.5).astype(float),
    }


def _reduce(d: dict[str, Any]) -> Any:
    return (sp.exp(d["a"] * 0.5) - d["a"]).sum(axis=0)


def _matmul(d: dict[str, Any]) -> Any:
    return d["a"] @ d["b"]


def _cumsum(d: dict[str, Any]) -> Any:
    return sp.cumsum(d["a"], axis=0)


def _sort(d: dict[str, Any]) -> Any:
    return sp.sort(d["a"], axis=0)


def _kmeans(d: dict[str, Any]) -> Any:
    x, k = d["a"], 3
    centers = x[:k]
    for _ in range(3):
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        onehot = (dist.argmin(axis=1)[:, None] == sp.arange(k)).astype(x.dtype)
        counts = onehot.sum(axis=0)
        centers = sp.where(
            counts[:, None] > 0, (onehot.T @ x) / sp.maximum(counts, 1)[:, None], centers
        )
    return centers


def _logreg(d: dict[str, Any]) -> Any:
    x, y = d["a"], d["y"]
    w = sp.zeros(x.shape[1])
    for _ in range(4):
        p = 1 / (1 + sp.exp(-(x @ w)))
        w = w - 0.1 * (x.T @ (p - y)) / x.shape[0]
    return w


def _updates(d: dict[str, Any]) -> Any:
    x = sp.zeros((96, 12))
    for i in range(4):
        x[8 * i : 8 * i + 40] += d["a"][8 * i : 8 * i + 40]
        x[:, i] *= 2
    return x


def _checkpoint(d: dict[str, Any]) -> Any:
    path = tempfile.mkdtemp(prefix="spartan-faults-")
    try:
        sp.save_checkpoint(path, a=d["a"] * 2, b=d["b"])
        back = sp.load_checkpoint(path)
        return (back["a"].sum(axis=0) + back["b"].sum()).to_numpy()  # (before the files go)
    finally:
        shutil.rmtree(path, ignore_errors=True)


WORKLOADS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "reduce": _reduce,
    "matmul": _matmul,
    "cumsum": _cumsum,
    "sort": _sort,
    "kmeans": _kmeans,
    "logreg": _logreg,
    "updates": _updates,
    "checkpoint": _checkpoint,
}


# -- the killer ------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Where a trial's kills happen (see the module docstring)."""

    kind: str
    at: int  # the event count (task logged, or wait) that triggers the first kill
    workers: tuple[int, ...]  # whom the first kill takes
    then: int = 0  # ``recovery``: the re-sent task whose worker dies next
    burst: int = 0  # ``burst``: deaths in a row (each replacement dies at its first task)


@dataclass
class Killer:
    """Counts the driver's events on ``backend`` and SIGKILLs workers per ``plan``
    (None: only counts). Patches the backend instance, never its class."""

    backend: Any
    plan: Plan | None = None
    tasks: int = 0
    waits: int = 0
    kills: int = 0
    _resent: int = 0
    _recoveries0: int = 0
    _left: int = 0
    _patched: list[str] = field(default_factory=list)

    def kill(self, worker: int) -> bool:
        """SIGKILL ``worker``'s process; False if it was dead already."""
        try:
            os.kill(self.backend.pids[worker], signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.kills += 1
        return True

    def _on_log(self) -> None:
        self.tasks += 1
        p = self.plan
        if p is not None and p.kind != "wait" and self.tasks == p.at:
            for w in p.workers:
                self.kill(w)
            self._left = p.burst

    def _on_send(self, worker: int) -> None:
        p = self.plan
        if p is None or self.backend.recoveries == self._recoveries0:
            return
        self._resent += 1
        if p.kind == "recovery" and self._resent == p.then:
            self.kill(worker)
        elif p.kind == "burst" and self._left > 0 and self.kill(worker):
            self._left -= 1

    def _on_wait(self) -> None:
        self.waits += 1
        p = self.plan
        if p is not None and p.kind == "wait" and self.waits == p.at:
            for w in p.workers:
                self.kill(w)

    @contextmanager
    def armed(self) -> Iterator[Killer]:
        be = self.backend
        self._recoveries0 = be.recoveries
        log, send, wait = be.lineage.log, be._send, be.wait

        def logged(*args: Any, **kwargs: Any) -> Any:
            rec = log(*args, **kwargs)
            self._on_log()
            return rec

        def sent(rec: Any, *args: Any, **kwargs: Any) -> Any:
            self._on_send(rec.worker)
            return send(rec, *args, **kwargs)

        def waited(*args: Any, **kwargs: Any) -> Any:
            self._on_wait()
            return wait(*args, **kwargs)

        lineage = be.lineage
        lineage.log, be._send, be.wait = logged, sent, waited
        try:
            yield self
        finally:
            del be._send, be.wait
            if lineage is be.lineage:
                del lineage.log


# -- trials ----------------------------------------------------------------------------


@dataclass
class Outcome:
    workload: str
    plan: Plan
    kills: int
    ended: str  # "result", "WorkerLostError", or the unexpected exception's type
    survived: bool
    correct: bool
    bit_identical: bool
    data_lost: bool
    seconds: float
    baseline_s: float
    detail: str = ""


def _as_numpy(result: Any) -> np.ndarray:
    return np.asarray(result.to_numpy() if hasattr(result, "to_numpy") else result)


def _equal_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@dataclass
class Reference:
    """A workload's fault-free run: its result, event counts and time."""

    result: np.ndarray
    tasks: int
    waits: int
    seconds: float


def reference(backend: Any, name: str, data: dict[str, np.ndarray]) -> Reference:
    inputs = {k: sp.asarray(v) for k, v in data.items()}
    sp.evaluate(*inputs.values())
    killer = Killer(backend)
    t0 = time.perf_counter()
    with killer.armed():
        result = _as_numpy(WORKLOADS[name](inputs))
    return Reference(result, killer.tasks, killer.waits, time.perf_counter() - t0)


def draw(rng: np.random.Generator, kind: str, ref: Reference, nworkers: int) -> Plan:
    """A plan of ``kind`` against ``ref``'s events, from ``rng`` alone."""
    if kind == "wait":
        return Plan(kind, int(rng.integers(1, ref.waits + 1)), (int(rng.integers(nworkers)),))
    at = int(rng.integers(1, max(ref.tasks, 1) + 1))
    if kind == "all":
        workers = tuple(range(nworkers))
    elif kind == "two":
        workers = tuple(int(w) for w in rng.choice(nworkers, min(2, nworkers), replace=False))
    else:
        workers = (int(rng.integers(nworkers)),)
    then = int(rng.integers(1, 4)) if kind == "recovery" else 0
    burst = sp.config.recovery_attempts + 1 if kind == "burst" else 0
    return Plan(kind, at, workers, then, burst)


def trial(
    backend: Any, name: str, data: dict[str, np.ndarray], ref: Reference, plan: Plan
) -> Outcome:
    """Run workload ``name`` under ``plan`` and judge it (see the module docstring)."""
    lost_error = sp.WorkerLostError
    inputs = {k: sp.asarray(v) for k, v in data.items()}
    sp.evaluate(*inputs.values())
    killer = Killer(backend, plan)
    ended, detail, got = "result", "", None
    t0 = time.perf_counter()
    try:
        with killer.armed():
            got = _as_numpy(WORKLOADS[name](inputs))
    except lost_error as error:
        ended, detail = "WorkerLostError", str(error)[:200]
    except Exception as error:  # noqa: BLE001 -- every other ending is a finding
        ended, detail = type(error).__name__, str(error)[:200]
    seconds = time.perf_counter() - t0
    correct = got is not None and np.allclose(got, ref.result, equal_nan=True)
    bits = got is not None and _equal_bits(got, ref.result)
    data_lost, usable = False, True
    try:
        for k, v in data.items():
            if not np.array_equal(inputs[k].to_numpy(), v):
                data_lost = True
                detail += f" input {k} changed"
    except Exception as error:  # noqa: BLE001
        data_lost, detail = (
            True,
            f"{detail} input unreadable: {type(error).__name__}: {error}"[:300],
        )
    try:
        usable = float(sp.asarray(np.arange(40.0)).sum()) == 780.0
    except Exception as error:  # noqa: BLE001
        usable, detail = False, f"{detail} session unusable: {type(error).__name__}"
    # only a burst may end in WorkerLostError; a result must be the fault-free one
    allowed = ("result", "WorkerLostError") if plan.kind == "burst" else ("result",)
    survived = usable and ended in allowed and (ended != "result" or correct)
    return Outcome(
        name,
        plan,
        killer.kills,
        ended,
        survived,
        correct,
        bits,
        data_lost,
        seconds,
        ref.seconds,
        detail,
    )


def run(
    backend: Any,
    trials: int,
    seed: int,
    kinds: tuple[str, ...] = KINDS,
    workloads: tuple[str, ...] = tuple(WORKLOADS),
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """``trials`` seeded trials on ``backend`` (current session backend), cycling through
    ``workloads`` and ``kinds``; the same seed gives the same plans."""
    data = _inputs(np.random.default_rng(seed))
    refs = {name: reference(backend, name, data) for name in workloads}
    rng = np.random.default_rng([seed, 35])
    out = []
    for i in range(trials):
        # every workload meets every kind: kinds shift by one each round of workloads
        name = workloads[i % len(workloads)]
        kind = kinds[(i + i // len(workloads)) % len(kinds)]
        plan = draw(rng, kind, refs[name], backend.nworkers)
        outcome = trial(backend, name, data, refs[name], plan)
        out.append(outcome)
        if progress is not None:
            progress(outcome)
    return out


def table(outcomes: list[Outcome]) -> str:
    """Markdown: one row per kind of fault, and a total."""
    rows = [
        "| faults | trials | kills | survived | correct | bit-identical | data lost | extra time (median) |"
    ]
    rows.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.plan.kind, []).append(o)
    groups["all kinds"] = outcomes
    for kind, os_ in groups.items():
        with_result = [o for o in os_ if o.ended == "result"]
        extra = statistics.median(o.seconds - o.baseline_s for o in os_) if os_ else 0.0
        rows.append(
            f"| {kind} | {len(os_)} | {sum(o.kills for o in os_)} "
            f"| {sum(o.survived for o in os_)}/{len(os_)} "
            f"| {sum(o.correct for o in with_result)}/{len(with_result)} "
            f"| {sum(o.bit_identical for o in with_result)}/{len(with_result)} "
            f"| {sum(o.data_lost for o in os_)} | {extra:.2f} s |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--save", action="store_true", help="write bench/results/faults.md")
    args = ap.parse_args(argv)
    os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")
    # more workers than cores share them (a local Ray instance has one CPU per core)
    share = min(1.0, (os.cpu_count() or 1) / args.workers)
    backend = sp.init(backend="ray", num_workers=args.workers, cpus_per_worker=share)
    sp.config.tiles_per_worker = 2
    sp.config.local_below_bytes = 0
    sp.config.replicate_below_bytes = 0
    started = time.time()

    def progress(o: Outcome) -> None:
        mark = "ok " if o.survived and not o.data_lost else "BAD"
        print(
            f"{mark} {o.workload:10s} {o.plan.kind:8s} at={o.plan.at:<4d} kills={o.kills} "
            f"ended={o.ended} correct={o.correct} bits={o.bit_identical} "
            f"{o.seconds:.2f}s {o.detail}",
            flush=True,
        )

    outcomes = run(backend, args.trials, args.seed, tuple(args.kinds), progress=progress)
    command = "python bench/faults.py " + " ".join(argv if argv is not None else sys.argv[1:])
    header = (
        f"# Fault injection ({datetime.date.today()})\n\n"
        f"`{command.strip()}` on {platform.node()} ({os.cpu_count()} cores, "
        f"{platform.machine()}), {backend.nworkers} Ray workers, seed {args.seed}, "
        f"{time.time() - started:.0f} s in all.\n\n"
    )
    text = header + table(outcomes) + "\n"
    bad = [o for o in outcomes if not o.survived or o.data_lost]
    if bad:
        text += (
            "\nNot survived:\n\n"
            + "\n".join(f"- {o.workload} {o.plan}: ended {o.ended}; {o.detail}" for o in bad)
            + "\n"
        )
    print(text)
    where = HERE / ("results" if args.save else "out")
    where.mkdir(exist_ok=True)
    (where / "faults.md").write_text(text)
    sp.shutdown()
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
