"""Tasks run again on the replacement of a worker lost while they ran.

Writing files (checkpoints, Zarr/HDF5 arrays) is the driver asking workers to do
something with the blocks they hold and report back. A worker lost meanwhile is replaced
at the wait and its blocks rebuilt from their lineage when read, so the task can simply
be sent again; it must be safe to run twice (each writes whole files or chunks).

>>> be = spartan.backend.current()
>>> be.put(("a", 0), np.zeros(4), worker=0)
>>> be.put(("b", 0), np.zeros(3), worker=1)
>>> def nbytes(block):
...     return (block.nbytes,)
>>> with be.evaluating():
...     run_on_workers(be, {"a": (0, nbytes, [("a", 0)]), "b": (1, nbytes, [("b", 0)])},
...                    "measure", "measuring", "not measured")
{'a': 32, 'b': 24}
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from spartan.backend.base import Backend, Input
from spartan.backend.checkpoint import lost_worker

log = logging.getLogger("spartan")

#: rounds in which a worker may be lost before the work is given up
TRIES = 3


def run_on_workers(
    be: Backend,
    tasks: Mapping[Hashable, tuple[int, Callable[..., Any], Sequence[Input]]],
    what: str,
    doing: str,
    undone: str,
    tries: int = TRIES,
) -> dict[Hashable, Any]:
    """Run each task ``name: (worker, fn, inputs)`` (``fn`` returns ``(result,)``: no
    outputs, a small result) and return the results by name. The tasks go out
    together; one whose worker was lost runs again on its replacement, up to ``tries``
    rounds, after which RuntimeError says so: ``"{what}: worker(s) [1] were lost 3 times
    while {doing}; {undone}"``. Call it holding the backend (:meth:`Backend.evaluating`)."""
    todo, out = dict(tasks), {}
    for _ in range(tries):
        handles = {
            name: be.submit(w, fn, inputs, [], want_result=True)
            for name, (w, fn, inputs) in todo.items()
        }
        be.wait()  # a lost worker is replaced here, its blocks rebuilt when read
        lost = {}
        for name, handle in handles.items():
            try:
                [out[name]] = be.results([handle])
            except Exception as error:
                if not lost_worker(error):
                    raise
                lost[name] = todo[name]
        if not lost:
            return out
        log.warning(
            "spartan: %s: worker(s) %s lost while %s; running their part again",
            what,
            _workers(lost),
            doing,
        )
        todo = lost
    raise RuntimeError(
        f"{what}: worker(s) {_workers(todo)} were lost {tries} times while {doing}; {undone}"
    )


def _workers(tasks: Mapping[Hashable, tuple[int, Any, Any]]) -> list[int]:
    return sorted({w for w, _, _ in tasks.values()})
