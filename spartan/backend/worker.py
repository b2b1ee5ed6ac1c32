"""A worker: a store of blocks, the code that runs one task, and its byte counters.

The same class runs in-process (:mod:`spartan.backend.local`) and as a Ray actor
(:mod:`spartan.backend.ray_backend`); only the way remote pieces arrive differs.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import math
import os
import sys
import types
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np

from spartan.backend import running, shared_output
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


class BlockMissing(LookupError):
    """A block a task or fetch reads is not on its worker: the driver's map of blocks
    and the worker disagree (a bug, or a worker replaced behind the driver's back). The
    driver rebuilds the block from its lineage (``key`` on ``worker``); the message
    names no internal key.

    >>> BlockMissing(("x", (0, 1)), 1)
    BlockMissing('a tile is missing on worker 1')
    """

    def __init__(self, key: Key, worker: int) -> None:
        super().__init__(f"a tile is missing on worker {worker}")
        self.key, self.worker = key, worker

    def __reduce__(self) -> tuple[Any, ...]:
        return BlockMissing, (self.key, self.worker)


class TaskCancelled(Exception):
    """Why a task did not run: the driver cancelled the work it was part of (Ctrl-C).
    Stored, in a :class:`TaskFailed`, under the task's outputs; the driver makes those
    blocks again before anything reads them."""


def cancelled(block: Any) -> bool:
    """Whether ``block`` is what a cancelled task left instead of its output."""
    return isinstance(block, TaskFailed) and isinstance(block.error, TaskCancelled)


#: whether the evaluation of the task running here was interrupted since the task was
#: sent (set by the worker running it; None: nobody asks)
_cancel_check: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "spartan_cancel_check", default=None
)


def stop_if_cancelled() -> None:
    """Raise :class:`TaskCancelled` in a task whose evaluation was interrupted (Ctrl-C)
    after it started: a long task (row chunks of a pipeline or a fold) asks between its
    chunks, so a cancel does not wait for the whole tile. Its outputs are then made
    again before anything reads them, as a skipped task's are.

    >>> stop_if_cancelled()          # outside a task: nothing to stop
    """
    check = _cancel_check.get()
    if check is not None and check():
        raise TaskCancelled("its evaluation was interrupted")


@contextlib.contextmanager
def cancel_check(check: Callable[[], bool]) -> Iterator[None]:
    """``check`` answers :func:`stop_if_cancelled` for the task run in the block."""
    token = _cancel_check.set(check)
    try:
        yield
    finally:
        _cancel_check.reset(token)


# ---- user functions -------------------------------------------------------------------
# A user's function (``spartan.map``'s, ``fold``'s ...) runs inside a task. Its exception
# keeps its type and message, gains a note naming the function and the tile, and records
# the user's frames: a failed task stores the exception without its traceback (the frames
# would keep the task's blocks alive), and Ray could not send one anyway, so the driver
# rebuilds a traceback of those frames (:func:`with_user_frames`) when it re-raises.

#: the output keys of the task this worker is running (a user function's errors name them)
_task_outputs: contextvars.ContextVar[Sequence[Key]] = contextvars.ContextVar(
    "spartan_task_outputs", default=()
)


@functools.cache
def _not_user() -> tuple[str, ...]:
    """The directories of spartan's and Ray's own files (their frames are not the user's)."""
    dirs = []
    for name in ("spartan", "ray"):
        spec = importlib.util.find_spec(name)
        dirs += [os.path.join(d, "") for d in (spec and spec.submodule_search_locations) or ()]
    return tuple(dirs)


def name_of(fn: Any) -> str:
    """How errors name a user's function: its qualified name, else its repr.

    >>> name_of(np.linalg.norm), name_of(functools.partial(max, 0))
    ('norm', 'functools.partial(<built-in function max>, 0)')
    """
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else repr(fn)


def task_tiles() -> str:
    """The tiles the running task makes, by index (from its output keys).

    >>> task_tiles()                    # outside a task
    'a task'
    """
    return tiles_of(_task_outputs.get())


def tiles_of(outputs: Sequence[Key]) -> str:
    """The tiles a task with output keys ``outputs`` makes, by index (never the keys
    themselves: they are spartan's own).

    >>> tiles_of([(12, (0, 1)), (12, "last", (1, 1))])
    'output tiles (0, 1), (1, 1)'
    """
    idxs = []
    for key in outputs:
        last = key[-1] if isinstance(key, tuple) and key else None
        if isinstance(last, tuple) and all(isinstance(i, int) for i in last) and last not in idxs:
            idxs.append(last)
    if not idxs:
        return "a task"
    shown = ", ".join(str(i) for i in idxs[:3]) + (", ..." if len(idxs) > 3 else "")
    return f"output tile{'s' if len(idxs) > 1 else ''} {shown}"


def box_text(box: Sequence[tuple[int, int]]) -> str:
    """A global extent as NumPy slices.

    >>> box_text(((0, 2), (4, 6)))
    '[0:2, 4:6]'
    """
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in box) + "]"


def call_user(what: str, fn: Callable[..., Any], *args: Any, where: str | None = None) -> Any:
    """``fn(*args)``, where ``fn`` is (or calls) user code: an exception it raises goes on
    with a note naming ``what`` and ``where`` (default: the task's tiles) and the user's
    frames recorded for the driver.

    >>> call_user("spartan.map(f)", int, "x", where="tile (0,)")
    Traceback (most recent call last):
    ValueError: invalid literal for int() with base 10: 'x'
    in spartan.map(f), tile (0,)
    """
    # on the driver's running board first: a process this call ends is blamed on it
    slot = running.current()
    mark = slot.enter(f"{what} on {where or task_tiles()}") if slot is not None else None
    try:
        return fn(*args)
    except SystemExit as leaving:  # (a worker's process is not the user's to end)
        error = RuntimeError(
            f"{what} called sys.exit({leaving.code!r}) on {where or task_tiles()}: a user "
            "function must return its result, not end the process it runs in"
        )
        error._spartan_frames = _user_frames(leaving.__traceback__)  # type: ignore[attr-defined]
        raise error from None
    except Exception as error:
        if getattr(error, "_spartan_frames", None) is None:  # the innermost call names it
            note(error, f"in {what}, {where or task_tiles()}")
            # (an exception type without attributes records no frames)
            with contextlib.suppress(AttributeError):
                error._spartan_frames = _user_frames(error.__traceback__)  # type: ignore[attr-defined]
        raise
    finally:
        if slot is not None:
            slot.leave(mark)  # type: ignore[arg-type]


def note(error: BaseException, text: str) -> None:
    """Add ``text`` to how ``error`` prints (PEP 678; nothing before Python 3.11).

    >>> e = KeyError("k"); note(e, "in spartan.map(f), output tile (0, 1)"); e.__notes__
    ['in spartan.map(f), output tile (0, 1)']
    """
    if hasattr(error, "add_note"):
        error.add_note(text)


def _user_frames(tb: types.TracebackType | None) -> tuple[tuple[str, int, str], ...]:
    """``(file, line, function)`` of each frame of ``tb`` outside spartan and Ray."""
    import traceback  # (imported on failure: dis and traceback would grow every worker's start)

    return tuple(
        (f.f_code.co_filename, lineno, f.f_code.co_name)
        for f, lineno in traceback.walk_tb(tb)
        if not f.f_code.co_filename.startswith(_not_user())
    )


def with_user_frames(error: BaseException) -> BaseException:
    """``error`` with a traceback of the user's frames recorded where it was raised (on a
    worker), to be raised on the driver: those frames then follow the driver's own.

    >>> import traceback
    >>> def f(t):
    ...     raise KeyError(t)
    >>> try:
    ...     call_user("spartan.map(f)", f, 1, where="tile (0,)")
    ... except KeyError as e:
    ...     error = e.with_traceback(None)  # as a failed task stores it
    >>> [frame.name for frame in traceback.extract_tb(with_user_frames(error).__traceback__)]
    ['f']
    """
    frames = getattr(error, "_spartan_frames", None)
    if not frames:
        return error
    tb = None
    try:
        for filename, lineno, name in reversed(frames):
            frame, lasti = _stand_in_frame(filename, lineno, name)
            tb = types.TracebackType(tb, frame, lasti, lineno)
    except Exception:  # noqa: BLE001 -- a traceback is a courtesy; the error itself goes on
        return error
    return error.with_traceback(tb)


def _stand_in_frame(filename: str, lineno: int, name: str) -> tuple[types.FrameType, int]:
    """A frame of a function ``name`` in ``filename``, stopped at line ``lineno``, and the
    instruction it stopped at (-1: none), for a traceback entry of that line.

    Its code calls a function that spans the whole source line, so a printed traceback
    shows the user's line without carets under a part of it."""
    import dis
    import linecache

    text = linecache.getline(filename, lineno).rstrip()
    indent = len(text) - len(text.lstrip())
    width = len(text.encode()) - indent
    call = "h(" + " " * max(0, width - 3) + ")"
    if indent == 0 and lineno >= 1:
        source = "\n" * (lineno - 1) + call
    elif lineno >= 2:  # an indented line, inside a block
        source = "if 1:" + "\n" * (lineno - 1) + " " * indent + call
    else:
        source, text = "h()", ""
    code = compile(source, filename, "exec")
    code = code.replace(co_name=name)
    if sys.version_info >= (3, 11):
        code = code.replace(co_qualname=name)
    frames: list[types.FrameType] = []
    exec(code, {"h": lambda: frames.append(sys._getframe(1)), "__name__": name})
    lasti = -1
    if text and sys.version_info >= (3, 11):
        lasti = next(
            (
                i.offset
                for i in dis.get_instructions(code)
                if i.opname == "CALL" and i.positions is not None and i.positions.lineno == lineno
            ),
            -1,
        )
    return frames[0], lasti


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

    #: this worker's counts since the last :meth:`reset_stats` (:meth:`stats`)
    counters: dict[str, int]

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

    def _block(self, key: Key) -> Any:
        """The block held under ``key``; :class:`BlockMissing` if none is."""
        try:
            return self.store[key]
        except KeyError:
            raise BlockMissing(key, self.index) from None

    def delete(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self.held -= nbytes_of(self.store.pop(key, None))

    def get_piece(self, key: Key, src: tuple, perm: tuple[int, ...] | None = None) -> Any:
        """``block[src]`` for another worker or the driver (a copy: only it travels)."""
        block = self._block(key)
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
            block = self._block(p.key)
            if isinstance(block, TaskFailed):
                return block
            parts.append(take(block, p.src, p.perm))
        assert region.shape is not None and region.dtype is not None  # (an array's)
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
        running = _task_outputs.set(outputs)
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
        finally:
            _task_outputs.reset(running)

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
                block = self._block(inp)
                if isinstance(block, TaskFailed):
                    raise block.error
                args.append(block)
                continue
            parts = []
            for piece in inp.pieces:
                if piece.worker == self.index:
                    parts.append(take(self._block(piece.key), piece.src, piece.perm))
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
