"""Shared by the tests/test_optimizer_model_*.py files: evaluate an array on the
in-process backend and check, node by node, that the bytes the workers measured
moving equal the bytes the optimizer's plan predicted (within 10%)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import spartan as sp
from spartan.backend import session
from spartan.backend.local import LocalBackend

#: a node predicted to move less than this is compared against it instead: a few
#: elements more or less are rounding, not a model that is wrong
FLOOR_BYTES = 64


@contextmanager
def workers(n: int, tiles_per_worker: int = 1) -> Iterator[LocalBackend]:
    """An in-process backend of ``n`` workers as the session, ``tiles_per_worker``
    tiles on each (the session before is put back after: use with the conftest's
    ``local`` fixture, or the first ``session.current()`` starts Ray)."""
    before = session.current()
    be = LocalBackend(num_workers=n)
    session.use(be)
    try:
        with sp.config.set(tiles_per_worker=tiles_per_worker):
            yield be
    finally:
        session.use(before)
        be.shutdown()


def mismatches(
    arr: sp.Array, backend: LocalBackend, reset: bool = True
) -> list[tuple[int, str, int, int]]:
    """Evaluate ``arr`` (its inputs evaluated already) and list the nodes whose measured
    bytes are off the predicted by more than 10%: (node, op, predicted, measured).
    ``reset=False``: the counters were reset before ``arr`` was built (a filter is
    evaluated as it is built: its length depends on the data)."""
    if reset:
        backend.reset_stats()
    sp.evaluate(arr)
    plan = sp.explain(arr).plan
    bad = []
    for node in plan.program:
        predicted, measured = plan.predicted.get(node.id, 0), plan.measured.get(node.id)
        if measured is not None and abs(measured - predicted) > 0.1 * max(predicted, FLOOR_BYTES):
            bad.append((node.id, node.op, predicted, measured))
    return bad


def assert_agrees(arr: sp.Array, backend: LocalBackend, reset: bool = True) -> sp.Array:
    """:func:`mismatches` is empty (the table is in the message when not)."""
    bad = mismatches(arr, backend, reset)
    assert not bad, f"{bad}\n{sp.explain(arr)}"
    return arr
