"""A corpus of real spartan programs: measured bytes against the optimizer's prediction.

    python bench/corpus.py --programs 50                # 50 random programs, 2/3/8 workers
    python bench/corpus.py --show 17                    # print program 17 and its nodes
    python bench/corpus.py --examples                   # every example in examples/
    python bench/corpus.py --pinned 40                  # chosen plan vs every pinned tiling

Issue 39 asks the cost model to be the truth: on every node of every program the bytes
the workers measure moving equal (within 10%) the bytes the plan predicted. The programs
here are written with spartan's *public API* (``np`` is ``spartan``), not the optimizer's
program IR: random chains of element-wise operators with broadcasting, reductions over
axes, transposes, slices and strided views, ``cumsum``, products, ``concatenate``,
boolean filters, ``where`` and small loops (a k-means or logistic-regression step) over
1-3-D arrays of small shapes, each input arriving in a drawn tiling. A program is its
seed: :func:`random_program` draws it (checking each statement on NumPy, which also gives
every shape), :meth:`Case.source` is a runnable repro snippet.

:func:`measure` runs a program on the in-process backend and collects, for every plan
the evaluations made (a filter's count or a loop makes several), each node's predicted
bytes (``plan.predicted``) and the bytes its tasks moved (the backend's per-tag
counters, the difference over that evaluation, so an input re-tiled in two evaluations
is not counted twice). :func:`run_examples` does the same for ``examples/*.py`` (their
``--check`` sizes or smaller). :func:`pinned_check` pins every tiling combination of a
small program's operators (``expr.tiling_hint``) and asks whether the optimizer's own
plan moves the fewest bytes of all. ``bench/optimizer.py --corpus`` reports the whole
corpus; ``tests/test_optimizer_corpus.py`` runs a slice in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import random
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: a node is within the model when |measured - predicted| <= REL * predicted
REL = 0.10

#: the example programs (those run through the harness) and sizes small enough for a
#: corpus run; the others take their ``--check`` sizes
EXAMPLE_SIZES: dict[str, dict[str, Any]] = {
    "kmeans": {"n": 240, "d": 4, "k": 3, "iters": 2},
    "fuzzy_kmeans": {"n": 240, "d": 4, "k": 3, "iters": 2},
    "logistic_regression": {"n": 240, "d": 5, "iters": 3},
    "linear_regression": {"n": 240, "d": 5},
    "linear_svm": {"n": 240, "d": 5, "iters": 3},
}


# ---- programs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A program over random inputs: ``inputs`` (name, shape, tiling or None for the
    default), the statements (``np`` is spartan), the names of its results."""

    seed: int
    inputs: tuple[tuple[str, tuple[int, ...], str | None], ...]
    lines: tuple[str, ...]
    results: tuple[str, ...]
    name: str = ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def source(self, workers: int = 3) -> str:
        """A runnable repro: start in-process workers, make the inputs, run, explain."""
        head = [
            "import numpy",
            "import spartan as np",
            "np.config.local_below_bytes = 0; np.config.replicate_below_bytes = 0",
            "np.config.tiles_per_worker = 2",
            f'np.init(backend="local", num_workers={workers})',
            f"rng = numpy.random.default_rng({self.seed})",
        ]
        for name, shape, tiling in self.inputs:
            kw = f", tiling={tiling!r}" if tiling else ""
            head.append(f"{name} = np.array(rng.random({shape}){kw}); np.evaluate({name})")
        tail = [f"np.evaluate({', '.join(self.results)})"]
        tail += [f"print(np.explain({r}))" for r in self.results]
        return "\n".join([*head, *self.lines, *tail])

    def make_inputs(self, module: Any) -> dict[str, Any]:
        """The inputs, as NumPy arrays (``module`` numpy) or evaluated spartan arrays."""
        rng = numpy.random.default_rng(self.seed)
        out = {}
        for name, shape, tiling in self.inputs:
            data = rng.random(shape)
            if module is numpy:
                out[name] = data
            else:
                out[name] = module.array(data, tiling=tiling) if tiling else module.array(data)
                module.evaluate(out[name])
        return out

    def run(self, module: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        """Execute the statements with ``np`` bound to ``module``; the namespace."""
        ns: dict[str, Any] = {"np": module, **inputs}
        exec(compile(self.text, f"<corpus {self.name or self.seed}>", "exec"), ns)  # noqa: S102
        return ns


_UNARY = [
    "np.exp({a})",
    "np.sqrt({a} + 1)",
    "{a} * 2 + 1",
    "np.sin({a})",
    "-{a}",
    "np.abs({a} - 0.5)",
]
_BINARY = ["{a} + {b}", "{a} * {b}", "np.maximum({a}, {b})", "{a} - {b}", "{a} / ({b} + 1)"]


def _templates(rng: random.Random, pool: dict[str, numpy.ndarray]) -> list[str]:
    """Candidate right-hand sides over the variables of ``pool`` (some will not fit)."""
    names = list(pool)
    a = rng.choice(names)
    b = rng.choice(names)
    nd = pool[a].ndim
    ax = rng.randrange(nd) if nd else 0
    red = rng.choice(["sum", "max", "min", "mean"])
    out = [
        rng.choice(_UNARY).format(a=a),
        rng.choice(_BINARY).format(a=a, b=b),
        f"{a}.{red}(axis={ax})",
        f"{a}.{red}()",
        f"{a}.T",
        f"{a}[1:]",
        f"{a}[::2]",
        f"np.cumsum({a}, axis={ax})",
        f"{a} @ {b}",
        f"{a}.T @ {a}",
        f"np.dot({a}, {b})",
        f"np.concatenate([{a}, {b}], axis={ax})",
        f"np.concatenate([{a}, {a} * 2], axis={ax})",
        f"{a}[{a} > 0.5]",
        f"np.where({a} > 0.5, {a}, 0)",
        f"np.where({a} > {b}, {a}, {b})",
        f"{a} - {a}.mean(axis=0)",
        f"{a}.argmin(axis={ax})",
        f"{a}[1:].sum(axis=0)",
        f"np.cumsum({a}[::2], axis=0)",
        f"{a}.reshape(-1)",
    ]
    if nd >= 2:
        out += [f"{a}[:, 1:-1]", f"{a}[1:, ::2]", f"{a}[2]", f"{a} / {a}.sum(axis=1)[:, None]"]
    if nd == 3:
        out += [f"np.transpose({a}, (1, 0, 2))", f"{a}.sum(axis=(0, 2))", f"{a}[:, 1:, ::2]"]
    return out


def _loop(rng: random.Random, pool: dict[str, numpy.ndarray], out: str) -> list[str] | None:
    """A small loop over a 2-D variable: a k-means or logistic-regression step."""
    mats = [n for n, v in pool.items() if v.ndim == 2 and v.shape[0] >= 6]
    if not mats:
        return None
    X = rng.choice(mats)
    n, d = pool[X].shape
    if rng.random() < 0.5:
        k = rng.randint(2, 3)
        return [
            f"{out} = {X}[:{k}]",
            f"for _ in range({rng.randint(1, 2)}):",
            f"    dist = ({out} * {out}).sum(axis=1) - 2 * ({X} @ {out}.T)",
            "    labels = dist.argmin(axis=1)",
            f"    onehot = (labels[:, None] == np.arange({k})).astype({X}.dtype)",
            f"    {out} = (onehot.T @ {X}) / np.maximum(onehot.sum(axis=0), 1)[:, None]",
        ]
    return [
        f"{out} = np.zeros({d})",
        f"for _ in range({rng.randint(1, 2)}):",
        f"    p = 1 / (1 + np.exp(-({X} @ {out})))",
        f"    {out} = {out} - 0.1 * ({X}.T @ (p - {X}[:, 0]))",
    ]


def random_program(seed: int, statements: int | None = None) -> Case:
    """Program ``seed``: 1-3 inputs of 1-3 dimensions, then 2-6 statements, each checked
    on NumPy (a statement NumPy rejects is drawn again)."""
    rng = random.Random(seed)
    inputs = []
    base = rng.randint(6, 24)
    for i in range(rng.randint(1, 3)):
        nd = rng.choices([1, 2, 3], weights=[2, 5, 1])[0]
        dims = [base] + [rng.randint(3, 12) for _ in range(nd - 1)]
        if rng.random() < 0.3:
            dims = dims[::-1]
        tiling = rng.choice([None, None, "row", "column", "block", "dup"])
        if nd == 1 and tiling in ("column", "block"):
            tiling = None
        inputs.append((f"x{i}", tuple(dims), tiling))
    # (the same values as Case.make_inputs makes, in the same order)
    rng_in = numpy.random.default_rng(seed)
    pool = {name: rng_in.random(shape) for name, shape, _ in inputs}
    lines: list[str] = []
    made: list[str] = []
    for s in range(statements if statements is not None else rng.randint(2, 6)):
        out = f"t{s}"
        for _ in range(50):
            if rng.random() < 0.08:
                stmt = _loop(rng, pool, out)
                if stmt is None:
                    continue
            else:
                stmt = [f"{out} = {rng.choice(_templates(rng, pool))}"]
            ns = {"np": numpy, **pool}
            try:
                with numpy.errstate(all="ignore"):
                    exec("\n".join(stmt), ns)  # noqa: S102
            except Exception:  # noqa: BLE001 -- NumPy rejects it: draw another
                continue
            value = numpy.asarray(ns[out])
            if value.size == 0 or value.ndim == 0 and len(made) == 0 and s < 1:
                continue
            if not numpy.isfinite(value).all():
                continue
            if value.ndim:  # (a 0-d result is a result: NumPy's scalars take axis=0)
                pool[out] = value
            lines += stmt
            made.append(out)
            break
    # the results: what no later statement reads (at least the last)
    text = "\n".join(ln.split("=", 1)[-1] for ln in lines)
    results = [m for m in made if not re.search(rf"\b{m}\b", text)] or made[-1:]
    return Case(seed, tuple(inputs), tuple(lines), tuple(results), name=f"random {seed}")


# ---- measuring -----------------------------------------------------------------------


@dataclass
class NodeRecord:
    """One node of one plan: predicted and measured bytes."""

    case: str
    workers: int
    plan: int
    node: int
    op: str
    label: str
    shape: tuple[int, ...]
    tiling: str
    predicted: int
    measured: int

    @property
    def ok(self) -> bool:
        return within(self.predicted, self.measured)

    @property
    def ratio(self) -> float:
        if self.predicted == 0:
            return 1.0 if self.measured == 0 else float("inf")
        return self.measured / self.predicted

    @property
    def kind(self) -> str:
        """A class of mismatch, for grouping: the operator and the direction."""
        side = "over" if self.measured > self.predicted else "under"
        zero = " (predicted 0)" if self.predicted == 0 else " (measured 0)" * (self.measured == 0)
        return f"{self.op}: measured {side} predicted{zero}"


def within(predicted: int, measured: int, rel: float = REL, floor: int = 0) -> bool:
    """Whether ``measured`` is within ``rel`` of ``predicted`` (or ``floor`` bytes)."""
    return abs(measured - predicted) <= max(rel * predicted, floor)


@dataclass
class Measured:
    """Every node of every plan of one run, the results' values, and the total bytes."""

    nodes: list[NodeRecord] = field(default_factory=list)
    total_moved: int = 0
    values: list[numpy.ndarray] = field(default_factory=list)
    plans: int = 0
    #: per plan: the predicted and the measured total (a wrong total, not only bytes
    #: counted under another node)
    totals: list[tuple[int, int]] = field(default_factory=list)

    @property
    def off(self) -> list[NodeRecord]:
        return [n for n in self.nodes if not n.ok]


@contextlib.contextmanager
def local_workers(workers: int, **settings: Any) -> Iterator[Any]:
    """In-process workers, current for the block, with the test suite's settings: small
    arrays distributed and cut like big ones, two tiles per worker."""
    import spartan
    from spartan.backend import session
    from spartan.backend.local import LocalBackend

    cfg = {
        "local_below_bytes": 0,
        "replicate_below_bytes": 0,
        "tiles_per_worker": 2,
        "strict_optimizer": True,
    }
    cfg.update(settings)
    previous = session._current
    be = LocalBackend(num_workers=workers)
    session.use(be)
    try:
        with spartan.config.set(**cfg):
            yield be
    finally:
        session.use(previous)
        be.shutdown()


@contextlib.contextmanager
def plans_recorded(backend: Any, out: Measured, case: str) -> Iterator[None]:
    """Record each plan made in the block, with its nodes' bytes measured over the
    evaluation it was made for (the tags' counters before it and before the next)."""
    from spartan.frontend import planning

    real = planning.choose
    pending: list[tuple[Any, dict[Any, int]]] = []

    def settle() -> None:
        while pending:
            planned, before = pending.pop(0)
            after = backend.stats(planned.tags).bytes_by_tag
            plan = planned.plan
            measured: dict[int, int] = {}
            # (as Planned.record maps them: a re-tiled input's copy may have a tag of its own)
            tags = getattr(planned, "node_of_tag", planned.node_of)
            for tag, nid in tags.items():
                if nid in plan.predicted:
                    got = after.get(tag, 0) - before.get(tag, 0)
                    measured[nid] = measured.get(nid, 0) + got
            for node in plan.program:
                out.nodes.append(
                    NodeRecord(
                        case,
                        backend.nworkers,
                        out.plans,
                        node.id,
                        node.op,
                        node.label,
                        tuple(node.shape),
                        str(plan.choice.get(node.id, plan.tiling[node.id])),
                        plan.predicted[node.id],
                        measured.get(node.id, 0),
                    )
                )
            out.plans += 1
            out.totals.append((plan.total, sum(measured.values())))

    def choose(order, nworkers):
        settle()
        tilings, planned = real(order, nworkers)
        if planned is not None:
            pending.append((planned, backend.stats(planned.tags).bytes_by_tag))
        return tilings, planned

    planning.choose = choose
    try:
        yield
        settle()
    finally:
        planning.choose = real


def measure(case: Case, workers: int, **settings: Any) -> Measured:
    """Run ``case`` on ``workers`` in-process workers; every plan's nodes measured."""
    import spartan

    out = Measured()
    with local_workers(workers, **settings) as be:
        inputs = case.make_inputs(spartan)
        be.reset_stats()
        with plans_recorded(be, out, case.name or str(case.seed)):
            ns = case.run(spartan, inputs)
            results = [ns[r] for r in case.results]
            arrays = [r for r in results if isinstance(r, spartan.Array)]
            if arrays:
                spartan.evaluate(*arrays)
            out.values = [numpy.asarray(r) for r in results]
        out.total_moved = be.stats().bytes_moved
    return out


def check_values(case: Case, got: Sequence[numpy.ndarray]) -> None:
    """``got`` equals NumPy's results of the same program (AssertionError if not)."""
    ns = case.run(numpy, case.make_inputs(numpy))
    for name, value in zip(case.results, got):
        numpy.testing.assert_allclose(value, ns[name], rtol=1e-9, atol=1e-9, err_msg=name)


# ---- examples ------------------------------------------------------------------------


def example_names() -> list[str]:
    """The examples that run through the harness (as tests/test_examples.py finds them)."""
    return sorted(
        p.stem
        for p in EXAMPLES.glob("*.py")
        if p.stem != "harness" and "run_example(" in p.read_text()
    )


def _example(name: str) -> Any:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # (the examples import their harness)
    return importlib.import_module(name)


def example_case(name: str) -> tuple[Any, argparse.Namespace]:
    """``examples/NAME.py`` (the module) and its arguments at corpus sizes."""
    module = _example(name)
    sizes = dict(getattr(module, "CHECK_SIZES", {}))
    sizes.update(EXAMPLE_SIZES.get(name, {}))
    args = argparse.Namespace(seed=0, check=True, backend="local", workers=None, **sizes)
    return module, args


def measure_example(name: str, workers: int, **settings: Any) -> Measured:
    """Run ``examples/NAME.py``'s program as its ``--check`` does (NumPy-made inputs
    handed to spartan), measured node by node."""
    import spartan

    harness = _example("harness")
    module, args = example_case(name)
    out = Measured()
    with local_workers(workers, **settings) as be:
        data = harness.with_numpy(module.make_data)(args)
        got = tuple(spartan.asarray(d) if isinstance(d, numpy.ndarray) else d for d in data)
        arrays = [d for d in got if isinstance(d, spartan.Array)]
        if arrays:
            spartan.evaluate(*arrays)
        be.reset_stats()
        with plans_recorded(be, out, f"example {name}"):
            result = module.program(*got, args)
            leaves = [r for r in harness._leaves(result) if isinstance(r, spartan.Array)]
            if leaves:
                spartan.evaluate(*leaves)
        out.total_moved = be.stats().bytes_moved
        want = harness.to_numpy(harness.with_numpy(module.program)(*data, args))
        problems = harness.mismatches(harness.to_numpy(result), want)
        if problems:
            raise AssertionError(f"example {name} differs from NumPy: {problems}")
    return out


# ---- the chosen plan against every pinned tiling -------------------------------------


def _candidates(expr: Any, workers: int) -> list[Any]:
    """The tilings the optimizer picks among for ``expr`` (as many tiles as it cuts an
    array of that size into; no duplicated output: the default budget allows none)."""
    from spartan.frontend.planning import default_pieces
    from spartan.tiling import candidates

    pieces = default_pieces(expr.size * expr.dtype.itemsize, workers)
    return candidates(tuple(expr.shape), pieces)


@dataclass
class PinnedResult:
    case: str
    workers: int
    chosen: int
    best: int
    combos: int
    #: every combination was run (else a random sample of ``combos`` of them)
    exhaustive: bool = True

    @property
    def hit(self) -> bool:
        return self.chosen <= self.best


def pinned_check(
    case: Case, workers: int, max_combos: int = 64, seed: int = 0
) -> PinnedResult | None:
    """The bytes the optimizer's plan moves against the fewest any pinned tiling of the
    program's operators moves (inputs keep their tiling: ``retile_inputs`` off). At most
    ``max_combos`` combinations (a random sample of them beyond). None: the program
    evaluates in more than one plan (a filter's count, a loop), or pins nothing."""
    import spartan
    from spartan.frontend.evaluate import pending_order
    from spartan.frontend.view import View

    def run(pins: Sequence[Any] | None) -> int | None:
        ns = case.run(spartan, inputs)
        results = [ns[r] for r in case.results if isinstance(ns[r], spartan.Array)]
        order = [e for e in pending_order([r._expr for r in results]) if not isinstance(e, View)]
        free = [e for e in order if e.data is None]
        if pins is not None:
            if len(pins) != len(free):
                return None
            for e, t in zip(free, pins):
                e.tiling_hint = t
        be.reset_stats()
        seen = Measured()
        with plans_recorded(be, seen, case.name):
            spartan.evaluate(*results)
        if seen.plans != 1:
            return None
        return be.stats().bytes_moved

    with local_workers(workers, retile_inputs=False) as be:
        inputs = case.make_inputs(spartan)
        try:
            chosen = run(None)
        except Exception:  # noqa: BLE001 -- a program the optimizer path rejects: skip
            return None
        if chosen is None:
            return None
        ns = case.run(spartan, inputs)
        results = [ns[r] for r in case.results if isinstance(ns[r], spartan.Array)]
        order = [e for e in pending_order([r._expr for r in results]) if not isinstance(e, View)]
        free = [e for e in order if e.data is None]
        if not free:
            return None
        options = [_candidates(e, workers) for e in free]
        total = 1
        for o in options:
            total *= len(o)
        if total <= max_combos:
            combos = list(itertools.product(*options))
        else:
            rng = random.Random(seed)
            combos = [tuple(rng.choice(o) for o in options) for _ in range(max_combos)]
        best = None
        for pins in combos:
            try:
                got = run(pins)
            except Exception:  # noqa: BLE001 -- a tiling that operator cannot take
                continue
            if got is not None and (best is None or got < best):
                best = got
        if best is None:
            return None
        return PinnedResult(case.name, workers, chosen, best, len(combos), total <= max_combos)


# ---- reporting -----------------------------------------------------------------------


def distribution(nodes: Sequence[NodeRecord]) -> dict[str, int]:
    """How many nodes are exact, within 10%, within 10% or 1 KiB, and off."""
    return {
        "nodes": len(nodes),
        "exact": sum(n.measured == n.predicted for n in nodes),
        "within 10%": sum(n.ok for n in nodes),
        "within 10% or 1 KiB": sum(within(n.predicted, n.measured, floor=1024) for n in nodes),
        "moving nodes": sum(n.predicted > 0 or n.measured > 0 for n in nodes),
        "moving, within 10%": sum((n.predicted > 0 or n.measured > 0) and n.ok for n in nodes),
    }


def ratio_buckets(nodes: Sequence[NodeRecord]) -> list[tuple[str, int]]:
    """measured / predicted of the nodes that move bytes, in buckets."""
    edges = [
        ("predicted 0, measured > 0", lambda r, n: n.predicted == 0),
        ("< 0.5", lambda r, n: r < 0.5),
        ("0.5 - 0.9", lambda r, n: r < 0.9),
        ("0.9 - 1.1", lambda r, n: r <= 1.1),
        ("1.1 - 2", lambda r, n: r <= 2),
        ("2 - 10", lambda r, n: r <= 10),
        ("> 10", lambda r, n: True),
    ]
    counts = dict.fromkeys((e for e, _ in edges), 0)
    for n in nodes:
        if n.predicted == 0 and n.measured == 0:
            continue
        for name, test in edges:
            if test(n.ratio, n):
                counts[name] += 1
                break
    return list(counts.items())


def off_classes(nodes: Sequence[NodeRecord]) -> list[tuple[str, int, NodeRecord]]:
    """The off nodes by class (operator and direction): count and the smallest example."""
    groups: dict[str, list[NodeRecord]] = {}
    for n in nodes:
        if not n.ok:
            groups.setdefault(n.kind, []).append(n)
    return sorted(
        (
            (k, len(v), min(v, key=lambda n: (len(n.case), n.predicted + n.measured)))
            for k, v in groups.items()
        ),
        key=lambda x: -x[1],
    )


def summarize(nodes: Sequence[NodeRecord]) -> str:
    d = distribution(nodes)
    return ", ".join(f"{k} {v}" for k, v in d.items())


def corpus(
    programs: int, workers: Sequence[int] = (2, 3, 8), seed: int = 0, examples: bool = True
) -> tuple[list[NodeRecord], list[str]]:
    """Measure ``programs`` random programs (seeds ``seed``...) and, with ``examples``,
    every example, at each worker count: every node, and the runs that failed."""
    nodes: list[NodeRecord] = []
    failed: list[str] = []
    for s in range(seed, seed + programs):
        case = random_program(s)
        for P in workers:
            try:
                m = measure(case, P)
                check_values(case, m.values)
            except Exception as error:  # noqa: BLE001 -- reported, not fatal to the corpus
                failed.append(f"random {s} on {P}: {type(error).__name__}: {str(error)[:200]}")
                continue
            nodes += m.nodes
    if examples:
        for name in example_names():
            for P in workers:
                try:
                    nodes += measure_example(name, P).nodes
                except Exception as error:  # noqa: BLE001
                    failed.append(
                        f"example {name} on {P}: {type(error).__name__}: {str(error)[:200]}"
                    )
    return nodes, failed


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, nargs="*", default=[2, 3, 8])
    p.add_argument("--examples", action="store_true", help="the examples only")
    p.add_argument("--show", type=int, help="print program SEED, run it, list its nodes")
    p.add_argument("--show-example", help="run examples/NAME.py, list its nodes off")
    p.add_argument("--pinned", type=int, default=0, help="pinned-tiling check on N programs")
    args = p.parse_args(argv)
    if args.show is not None:
        case = random_program(args.show)
        print(case.source(args.workers[0]))
        for P in args.workers:
            m = measure(case, P)
            check_values(case, m.values)
            for n in m.nodes:
                flag = "" if n.ok else "  !"
                print(
                    f"P={P} plan {n.plan} node {n.node} {n.label:<14} {n.op:<11} "
                    f"{n.tiling:<16} predicted {n.predicted:>7,} measured {n.measured:>7,}{flag}"
                )
        return 0
    if args.show_example:
        for P in args.workers:
            for n in measure_example(args.show_example, P).off:
                print(
                    f"P={P} plan {n.plan} node {n.node} {n.label:<14} {n.op:<11} "
                    f"{n.tiling:<16} predicted {n.predicted:>7,} measured {n.measured:>7,}"
                )
        return 0
    if args.pinned:
        results = []
        for s in range(args.seed, args.seed + args.pinned):
            for P in args.workers:
                r = pinned_check(random_program(s), P)
                if r is not None:
                    results.append(r)
                    if not r.hit:
                        print(f"random {s} on {P}: chosen {r.chosen:,} B, best {r.best:,} B")
        hits = sum(r.hit for r in results)
        print(f"chosen plan measured-cheapest: {hits}/{len(results)}")
        return 0
    nodes, failed = corpus(0 if args.examples else args.programs, args.workers, args.seed)
    print(summarize(nodes))
    for name, count in ratio_buckets(nodes):
        print(f"  measured/predicted {name}: {count}")
    for kind, count, n in off_classes(nodes):
        print(
            f"  {count:>5}  {kind}: e.g. {n.case} on {n.workers}, node {n.node} {n.label} "
            f"{n.tiling}: predicted {n.predicted:,} measured {n.measured:,}"
        )
    for f in failed:
        print("FAILED", f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
