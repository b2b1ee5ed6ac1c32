"""A worker: a store of blocks, the code that runs one task, and its byte counters.

The same class runs in-process (:mod:`spartan.backend.local`) and as a Ray actor
(:mod:`spartan.backend.ray_backend`); only the way remote pieces arrive differs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from spartan.backend import shared_output
from spartan.backend.base import Key, Piece, Region
from spartan.backend.device import (
    array_module,
    contiguous,
    gpu_memory,
    sync_device,
    to_device,
    to_host,
)
from spartan.backend.layout import copy_into

#: task tags whose moved bytes a worker keeps, the oldest dropped first. The optimizer
#: asks for each evaluation's own tags right after it (:meth:`Worker.stats`); unbounded,
#: a loop of 3000 small evaluations grew each worker's table to 3000 entries, every one
#: copied and sent with each evaluation's counters
TAGS_KEPT = 1 << 16


def nbytes_of(value: Any) -> int:
    """Bytes held by a block: an array, or a tuple/list of arrays."""
    if hasattr(value, "nbytes"):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(nbytes_of(v) for v in value)
    return 0


class TaskFailed:
    """Stored in place of the outputs of a task that raised, so readers re-raise."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def take(block: Any, src: tuple, perm: tuple[int, ...] | None) -> Any:
    if isinstance(block, TaskFailed):
        raise block.error
    view = block[src] if src else block
    return view.transpose(perm) if perm is not None else view


def assemble(region: Region, parts: Sequence[Any]) -> np.ndarray:
    """Build ``region`` from its pieces' data (``parts[i]`` is ``block[src]`` of piece i)."""
    pieces = region.pieces
    if region.shape is None:  # a whole stored object, not an array region
        return parts[0]
    if len(pieces) == 1:
        part = parts[0]
        if part.size == math.prod(region.shape):
            # one piece covering the region: a view, no copy
            return part.reshape(region.shape)
    xp = array_module(*parts) if parts else np
    out = xp.empty(region.shape, dtype=region.dtype)
    fill(out, pieces, parts)
    return out


def fill(out: Any, pieces: Sequence[Piece], parts: Sequence[Any]) -> None:
    """Write each piece's data (``parts[i]`` for ``pieces[i]``) at its place in ``out``."""
    for piece, part in zip(pieces, parts):
        target = out[piece.dst]
        copy_into(target, part.reshape(target.shape))


class RowStack:
    """A region cut along axis 0 only, its pieces kept apart: ``stack[lo:hi]`` is a
    view of one piece when the rows lie in one, else a copy of just those rows.

    A task function that reads some inputs only in row chunks says so with a
    ``row_stacks`` attribute (a flag per input); those inputs arrive as RowStacks, so a
    region that crosses a tile boundary (a stencil's shifted rows) is not copied whole.
    """

    def __init__(self, shape: tuple[int, ...], starts: list[int], parts: list[Any]) -> None:
        self.shape, self.starts, self.parts = shape, starts, parts
        self.dtype = parts[0].dtype

    @classmethod
    def of(cls, region: Region, parts: Sequence[Any]) -> RowStack | None:
        """The stack of ``parts`` when each piece spans the region but for its rows."""
        shape = region.shape
        if shape is None or len(shape) == 0 or len(parts) < 2:
            return None
        rows = []
        for piece, part in zip(region.pieces, parts):
            dst = piece.dst
            if not dst or not isinstance(dst[0], slice) or dst[0].step not in (None, 1):
                return None
            if any(d != slice(None) and d != slice(0, n) for d, n in zip(dst[1:], shape[1:])):
                return None
            lo, hi, _ = dst[0].indices(shape[0])
            if tuple(part.shape) != (hi - lo, *shape[1:]):
                return None
            rows.append((lo, hi, part))
        rows.sort(key=lambda r: r[0])
        if rows[0][0] != 0 or rows[-1][1] != shape[0]:
            return None
        if any(a[1] != b[0] for a, b in zip(rows, rows[1:])):
            return None
        return cls(tuple(shape), [lo for lo, _, _ in rows], [part for _, _, part in rows])

    def __getitem__(self, key: slice) -> Any:
        lo, hi, step = key.indices(self.shape[0])
        if step != 1:
            raise IndexError("a RowStack is read in row ranges")
        out = [
            part[max(lo, start) - start : min(hi, start + len(part)) - start]
            for start, part in zip(self.starts, self.parts)
            if start < hi and lo < start + len(part)
        ]
        if len(out) == 1:
            return out[0]
        return array_module(*out).concatenate(out) if out else self.parts[0][:0]


class Worker:
    """Holds blocks by key and runs tasks; counts bytes that arrive from elsewhere."""

    def __init__(self, index: int, node: str = "", device: str = "cpu") -> None:
        self.index = index
        self.node = node or os.uname().nodename
        self.device = device
        self.store: dict[Key, Any] = {}
        self.reset_stats()

    # ---- storage --------------------------------------------------------------------
    def put(self, key: Key, value: Any) -> None:
        self._set(key, value)
        self.counters["bytes_from_driver"] += nbytes_of(value)

    def _set(self, key: Key, value: Any) -> None:
        value = to_device(value, self.device)
        old = self.store.get(key)
        self.held += nbytes_of(value) - nbytes_of(old)
        self.store[key] = value
        self.counters["peak_bytes"] = max(self.counters["peak_bytes"], self.held)

    def delete(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self.held -= nbytes_of(self.store.pop(key, None))

    def get_piece(self, key: Key, src: tuple, perm: tuple[int, ...] | None = None) -> Any:
        """``block[src]`` for another worker or the driver (a copy: only it travels)."""
        block = self.store[key]
        if isinstance(block, TaskFailed):
            return block
        part = take(block, src, perm)
        if isinstance(part, np.ndarray):
            return contiguous(part)
        return to_host(part)  # GPU blocks travel through host memory

    def fetch(self, key: Key, src: tuple | None = None) -> Any:
        """``block[src]`` for the driver, or the :class:`TaskFailed` stored in its place
        (the driver raises the first failure among everything it waited for)."""
        part = self.get_piece(key, src or ())
        self.counters["bytes_to_driver"] += nbytes_of(part)
        return part

    def write_shared(self, path: str, region: Region) -> TaskFailed | None:
        """Write ``region``'s pieces (all held here) into the driver's landing zone at
        ``path`` (:mod:`spartan.backend.shared_output`); a failed block is returned."""
        parts = []
        for p in region.pieces:
            block = self.store[p.key]
            if isinstance(block, TaskFailed):
                return block
            parts.append(take(block, p.src, p.perm))
        fill(shared_output.attach(path, region.shape, region.dtype), region.pieces, parts)
        self.counters["bytes_to_driver"] += sum(nbytes_of(p) for p in parts)
        return None

    # ---- tasks ----------------------------------------------------------------------
    def run(
        self,
        fn: Callable[..., Any],
        inputs: Sequence[Any],
        outputs: Sequence[Key],
        want_result: bool,
        remote: Sequence[Any],
        remote_nodes: Sequence[str] = (),
        tag: Any = None,
    ) -> Any:
        """Run one task. ``inputs`` holds keys and regions; ``remote`` the data of the
        pieces held elsewhere, in the order they appear in the regions.

        A failing task returns :class:`TaskFailed` (and stores it under its outputs) rather
        than raising, so the driver re-raises the user's own exception, not Ray's."""
        self.counters["tasks"] += 1
        self.tag = tag
        try:
            args = self._gather(inputs, remote, remote_nodes, getattr(fn, "row_stacks", ()))
            value = fn(*args)
            if want_result:
                *values, result = value
            else:
                values, result = ([value] if len(outputs) == 1 else list(value)), None
            if len(values) != len(outputs):
                raise ValueError(
                    f"task function returned {len(values)} values for {len(outputs)} outputs"
                )
            for key, v in zip(outputs, values):
                self._set(key, v)
            return result
        except Exception as error:  # noqa: BLE001 -- stored so readers re-raise the cause
            # without its traceback: frames would keep the task's blocks alive
            failed = TaskFailed(error.with_traceback(None))
            for key in outputs:
                self._set(key, failed)
            return failed

    def _gather(
        self,
        inputs: Sequence[Any],
        remote: Sequence[Any],
        remote_nodes: Sequence[str],
        row_stacks: Sequence[bool] = (),
    ) -> list[Any]:
        """The task's arguments; inputs flagged in ``row_stacks`` may be
        :class:`RowStack`s instead of assembled arrays."""
        args: list[Any] = []
        it = iter(range(len(remote)))
        for n, inp in enumerate(inputs):
            if not isinstance(inp, Region):
                block = self.store[inp]
                if isinstance(block, TaskFailed):
                    raise block.error
                args.append(block)
                continue
            parts = []
            for piece in inp.pieces:
                if piece.worker == self.index:
                    parts.append(take(self.store[piece.key], piece.src, piece.perm))
                else:
                    i = next(it)
                    part = remote[i]
                    if isinstance(part, TaskFailed):
                        raise part.error
                    self._count_in(part, remote_nodes[i] if remote_nodes else self.node)
                    parts.append(to_device(part, self.device))
            stack = RowStack.of(inp, parts) if n < len(row_stacks) and row_stacks[n] else None
            args.append(stack if stack is not None else assemble(inp, parts))
        return args

    def _count_in(self, part: Any, node: str) -> None:
        n = nbytes_of(part)
        self.counters["bytes_in"] += n
        if self.tag is not None:
            by_tag = self.bytes_by_tag
            if self.tag not in by_tag and len(by_tag) >= TAGS_KEPT:
                del by_tag[next(iter(by_tag))]
            by_tag[self.tag] = by_tag.get(self.tag, 0) + n
        if node != self.node:
            self.counters["bytes_in_from_other_nodes"] += n

    # ---- accounting -----------------------------------------------------------------
    def stats(self, tags: Collection[Any] | None = None) -> dict[str, Any]:
        """The counters; ``bytes_by_tag`` only for ``tags`` when given (the last
        :data:`TAGS_KEPT` tags when not)."""
        by_tag = self.bytes_by_tag
        if tags is not None:
            by_tag = {t: by_tag[t] for t in tags if t in by_tag}
        return dict(self.counters, held_bytes=self.held, node=self.node, bytes_by_tag=dict(by_tag))

    def reset_stats(self) -> None:
        self.tag = None
        self.bytes_by_tag: dict[Any, int] = {}
        self.held = sum(nbytes_of(v) for v in getattr(self, "store", {}).values())
        self.counters = {
            "tasks": 0,
            "bytes_in": 0,
            "bytes_in_from_other_nodes": 0,
            "bytes_to_driver": 0,
            "bytes_from_driver": 0,
            "peak_bytes": self.held,
        }

    def ping(self) -> str:
        return self.node

    def sync(self) -> None:
        """Wait for this worker's queued GPU kernels (tasks return once they are queued)."""
        if self.device == "gpu":
            sync_device()

    def memory(self) -> int:
        """Bytes this worker may still fill: free GPU memory on a GPU worker, else 0
        (the driver then uses host memory figures)."""
        return gpu_memory() if self.device == "gpu" else 0
