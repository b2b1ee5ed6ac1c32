"""Checkpoints of evaluated arrays: save them, load them into a new session.

>>> w = spartan.ones((4, 3))
>>> spartan.save_checkpoint("ckpt", weights=w, step=spartan.asarray(7))
'ckpt'
>>> arrays = spartan.load_checkpoint("ckpt")
>>> arrays["weights"].shape, int(arrays["step"])
((4, 3), 7)

A save returns only once every tile file is written, fsynced and renamed into place by
its worker, with the checksum that worker computed recorded in the manifest, which is
written last (atomically). A worker lost during a save has its tiles rebuilt and
written again by its replacement; a save that cannot complete raises and leaves the
previous checkpoint at that path as it was. Periodic checkpoints
(``spartan.config.checkpoint_dir``) switch their arrays' rebuild records to the saved
files only once complete, and keep the newest ``config.checkpoint_keep`` of them.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from spartan.backend import session
from spartan.backend.base import Backend, Key
from spartan.backend.checkpoint import (
    CHECKSUM,
    MANIFEST,
    LoadTile,
    SaveTiles,
    read_manifest,
    write_manifest,
)
from spartan.backend.rerun import run_on_workers
from spartan.frontend.array import Array
from spartan.frontend.evaluate import after_evaluation, evaluate
from spartan.frontend.expr import Expr
from spartan.frontend.view import View
from spartan.tiling import Box, Tiling, box_shape

log = logging.getLogger("spartan")

#: 2: every tile has a checksum (format 1 had none)
FORMAT = 2
#: rounds of save tasks a save sends: the first, then one for the tiles of workers lost
#: during the round before (rebuilt on their replacements by then)
SAVE_TRIES = 3


def _materialized(x: Any) -> Expr:
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import copy

    a = asarray(x)
    if isinstance(a._expr, View):
        a = copy(a)
    evaluate(a._expr)
    return a._expr


def _box_key(box: Box) -> str:
    return ",".join(f"{lo}:{hi}" for lo, hi in box)


#: an array's name in a checkpoint: it names its files, so nothing that leaves the directory
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
#: dtype kinds a checkpoint holds (np.load reads them without pickles): bool, integers,
#: floats, complex, datetimes, timedeltas, bytes, str
KINDS = "biufcmMSU"
#: a tile's checksum as a manifest records it (:data:`~spartan.backend.checkpoint.CHECKSUM`)
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def check_name(name: Any, what: str) -> str:
    """``name`` if it can name an array's files in a checkpoint, else ValueError."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"{what}: {name!r} cannot name a checkpoint array (letters, digits, '_', '.', "
            f"'-', no '..', at most 200 characters)"
        )
    return name


def _holdable(dtype: np.dtype) -> bool:
    """Whether a checkpoint holds arrays of ``dtype`` (no objects, no records)."""
    return dtype.kind in KINDS and dtype.fields is None


def check_entry(name: str, e: Any, where: str) -> tuple[tuple[int, ...], np.dtype, Tiling]:
    """Shape, dtype and tiling of a manifest entry, after checking everything in it
    (files named plainly in the directory, one per tile of its tiling, each with a
    checksum) before any read."""

    def bad(why: str) -> ValueError:
        return ValueError(f"checkpoint {where!r}: array {name!r}: {why}")

    if not isinstance(e, dict):
        raise bad("its entry is not a map")
    shape, cuts = e.get("shape"), e.get("cuts")
    if not isinstance(shape, list) or len(shape) > 32:
        raise bad(f"shape {shape!r} is not a list of at most 32 sizes")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise bad(f"shape {shape!r} holds something other than sizes")
    if not isinstance(cuts, list) or len(cuts) != len(shape):
        raise bad(f"cuts {cuts!r} do not match shape {shape!r}")
    if not all(isinstance(c, int) and 1 <= c <= max(n, 1) for c, n in zip(cuts, shape)):
        raise bad(f"cuts {cuts!r} cannot cut shape {shape!r}")
    if not isinstance(e.get("replicated"), bool):
        raise bad("'replicated' is not a bool")
    try:
        dtype = np.dtype(e.get("dtype"))
    except TypeError:
        raise bad(f"dtype {e.get('dtype')!r} is not a dtype") from None
    if not _holdable(dtype):
        raise bad(f"dtype {dtype} is not one a checkpoint holds (kinds {KINDS})")
    tiling = Tiling(tuple(cuts), e["replicated"])
    files = e.get("files")
    expected = {_box_key(box) for _, box in tiling.tiles(shape)}
    if not isinstance(files, dict) or set(files) != expected:
        raise bad("its files do not cover its tiles one by one")
    for fname in files.values():
        if (
            not isinstance(fname, str)
            or os.path.basename(fname) != fname
            or fname in ("", ".", "..")
            or not fname.endswith(".npy")
        ):
            raise bad(f"tile file {fname!r} is not a plain .npy name in the directory")
    sums = e.get("checksums")
    if (
        not isinstance(sums, dict)
        or set(sums) != set(files)
        or not all(isinstance(c, str) and HEX_DIGEST.fullmatch(c) for c in sums.values())
    ):
        raise bad(f"its tiles' checksums ({CHECKSUM}, one per file) are missing or malformed")
    return tuple(shape), dtype, tiling


@dataclass
class _Written:
    """Arrays whose tiles are on disk in ``directory``: their manifest entries, and per
    tile ``(key, worker, task that reads it back)``."""

    directory: str
    entries: dict[str, dict[str, Any]]
    loads: list[tuple[Key, int, LoadTile]]

    def files(self) -> set[str]:
        return {f for e in self.entries.values() for f in e["files"].values()}


def _write_arrays(directory: str, arrays: dict[str, Expr], token: str, what: str) -> _Written:
    """Have each worker write its tiles of the evaluated ``arrays`` into ``directory``
    (file names carry ``token``), durably; returns once every tile is reported written,
    with its checksum. A worker lost meanwhile has its tiles rebuilt (by the backend's
    recovery) and written again by its replacement, up to :data:`SAVE_TRIES` rounds;
    RuntimeError after that."""
    by_worker: dict[int, list[tuple[Key, str, tuple[int, ...], str]]] = {}
    entries: dict[str, dict[str, Any]] = {}
    loads: list[tuple[Key, int, LoadTile]] = []
    for name, expr in arrays.items():
        tiles, dtype = expr.data, np.dtype(expr.dtype)
        files: dict[str, str] = {}
        for idx, box, w in tiles.tiles():
            fname = f"{name}.{token}" + (("." + "_".join(map(str, idx))) if idx else "") + ".npy"
            by_worker.setdefault(w, []).append((tiles.key(idx), fname, box_shape(box), dtype.str))
            files[_box_key(box)] = fname
        entries[name] = {
            "shape": list(expr.shape),
            "dtype": dtype.str,
            "cuts": list(tiles.tiling.cuts),
            "replicated": tiles.tiling.replicated,
            "files": files,
        }
    digests = _write_tiles(directory, by_worker, what)
    for e in entries.values():
        e["checksums"] = {box: digests[fname] for box, fname in e["files"].items()}
    array_of = {f: name for name, e in entries.items() for f in e["files"].values()}
    for w, items in by_worker.items():
        for key, fname, shape, dtype in items:
            path = os.path.join(directory, fname)
            loads.append((key, w, LoadTile(path, digests[fname], shape, dtype, array_of[fname])))
    return _Written(directory, entries, loads)


def _write_tiles(
    directory: str, by_worker: dict[int, list[tuple[Key, str, tuple[int, ...], str]]], what: str
) -> dict[str, str]:
    """The checksum of each file written, by name: every tile of ``by_worker`` written
    by its worker (see :func:`_write_arrays`)."""
    be = session.current()
    # one evaluation at a time: the save's tasks and waits are one (re-entrant: a
    # periodic checkpoint saves inside its evaluation)
    with be.evaluating():
        return _write_rounds(be, directory, by_worker, what)


def _write_rounds(
    be: Backend,
    directory: str,
    by_worker: dict[int, list[tuple[Key, str, tuple[int, ...], str]]],
    what: str,
) -> dict[str, str]:
    tasks = {
        w: (
            w,
            SaveTiles(directory, [(f, shape, dt) for _, f, shape, dt in items]),
            [k for k, *_ in items],
        )
        for w, items in by_worker.items()
    }
    # a lost worker's save task is sent again: its tiles, rebuilt on the replacement,
    # are written again
    results = run_on_workers(
        be,
        tasks,
        what,
        f"writing their tiles to {directory!r}",
        "the checkpoint was not written",
        SAVE_TRIES,
    )
    digests = {}
    for w, written in results.items():
        wanted = [f for _, f, _, _ in by_worker[w]]
        if [f for f, _ in written] != wanted:
            raise RuntimeError(
                f"{what}: worker {w} reported {len(written)} tile(s) written to "
                f"{directory!r}, not its {len(wanted)}"
            )
        digests.update(written)
    return digests


def _manifest(entries: dict[str, dict[str, Any]], when: float | None = None) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "checksum": CHECKSUM,
        "time": time.time() if when is None else when,
        "arrays": entries,
    }


def _remove_files(directory: str, names: set[str]) -> None:
    """Delete ``names`` in ``directory`` (those gone already, or that cannot go, stay)."""
    for name in names:
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass


def _leftovers(directory: str, token: str) -> set[str]:
    """Files of the save with ``token`` in ``directory``: tiles and temporaries (also
    those a killed worker left)."""
    try:
        return {f for f in os.listdir(directory) if f".{token}" in f}
    except OSError:
        return set()


def _listed_files(directory: str) -> set[str]:
    """The tile files the checkpoint in ``directory`` lists (none if there is no valid
    one): a new save there replaces them."""
    try:
        manifest = read_manifest(directory)
        arrays = manifest.get("arrays")
        if manifest.get("format") != FORMAT or not isinstance(arrays, dict):
            return set()
        for name, e in arrays.items():
            check_name(name, directory)
            check_entry(name, e, directory)
        return {f for e in arrays.values() for f in e["files"].values()}
    except (OSError, ValueError):
        return set()


def save_checkpoint(path: str, **arrays: Any) -> str:
    """Write ``arrays`` (evaluating them first) under directory ``path``; returns ``path``.

    On return every tile file is on disk (fsynced) with its checksum in the manifest,
    which lists every array and is written last. A worker lost during the save has its
    tiles rebuilt and written again; a save that cannot complete raises, and a
    checkpoint saved at ``path`` before stays as it was. A new save at ``path`` replaces
    the one before (its files are deleted).

    >>> spartan.save_checkpoint("ckpt", weights=spartan.ones((4, 3)))
    'ckpt'
    """
    if not arrays:
        raise ValueError("save_checkpoint needs at least one array, e.g. weights=w")
    for name in arrays:
        check_name(name, "save_checkpoint")
    exprs = {name: _materialized(x) for name, x in arrays.items()}
    for name, expr in exprs.items():
        if not _holdable(np.dtype(expr.dtype)):
            raise ValueError(
                f"save_checkpoint: array {name!r} has dtype {expr.dtype}, which a "
                f"checkpoint cannot hold (kinds {KINDS}: no objects or records)"
            )
    os.makedirs(path, exist_ok=True)
    before = _listed_files(path)
    token = secrets.token_hex(4)
    try:
        written = _write_arrays(path, exprs, token, f"save_checkpoint({path!r})")
        write_manifest(path, _manifest(written.entries))
    except BaseException:
        _remove_files(path, _leftovers(path, token))  # the checkpoint before stays whole
        raise
    new = written.files()
    _remove_files(path, (before - new) | (_leftovers(path, token) - new))
    return path


class _FromFiles:
    """``newarray`` init: the saved tile with this extent, checked against its checksum."""

    def __init__(
        self, directory: str, files: dict[str, str], checksums: dict[str, str], name: str
    ) -> None:
        self.directory, self.files, self.checksums, self.name = directory, files, checksums, name

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        key = _box_key(box)
        path = os.path.join(self.directory, self.files[key])
        shape = box_shape(box)
        return LoadTile(path, self.checksums[key], shape, np.dtype(dtype).str, self.name)()


def load_checkpoint(path: str) -> dict[str, Array]:
    """The arrays saved under ``path``, tiled as they were saved (read lazily). The
    manifest is checked first (array names, shapes, dtypes of the kinds ``np.load`` reads
    without pickles, tile files named plainly inside ``path``, a checksum per tile);
    ValueError says what is wrong. Each tile is checked as it is read (its checksum,
    size, shape and dtype): a corrupt or replaced file raises ValueError naming the
    array and the file, a missing one FileNotFoundError. Keep the directory while the
    arrays are in use: a tile lost with a worker is read again from its file.

    >>> _ = spartan.save_checkpoint("ckpt", weights=spartan.ones((4, 3)))
    >>> spartan.load_checkpoint("ckpt")["weights"].shape
    (4, 3)
    """
    from spartan.frontend.creation import newarray

    manifest = read_manifest(path)
    version = manifest.get("format")
    if version == 1:
        raise ValueError(
            f"checkpoint {path!r} was written by an older spartan without tile checksums "
            f"(format 1); load it with that version and save it again"
        )
    if version != FORMAT:
        raise ValueError(f"unsupported checkpoint format {version!r} in {path!r}")
    if manifest.get("checksum") != CHECKSUM:
        raise ValueError(
            f"checkpoint {path!r}: tile checksums of kind {manifest.get('checksum')!r}, "
            f"not {CHECKSUM!r}"
        )
    arrays = manifest.get("arrays")
    if not isinstance(arrays, dict):
        raise ValueError(f"checkpoint {path!r}: its manifest lists no arrays")
    # every entry is checked before any tile is read
    checked = {
        check_name(name, f"checkpoint {path!r}"): (check_entry(name, e, path), e)
        for name, e in arrays.items()
    }
    return {
        name: newarray(
            shape,
            _FromFiles(path, e["files"], e["checksums"], name),
            dtype,
            tiling,
            f"load({name})",
        )
        for name, ((shape, dtype, tiling), e) in checked.items()
    }


@dataclass
class _Periodic:
    """One periodic checkpoint on disk: its directory, the manifest entries of the
    arrays it still holds, when it was made, and the backend whose arrays' rebuild
    records may read it."""

    directory: str
    entries: dict[str, dict[str, Any]]
    time: float
    backend: weakref.ref[Backend]

    def trim(self, in_use: set[str]) -> bool:
        """Delete the arrays no rebuild reads (none of their files in ``in_use``),
        rewriting the manifest first so that it never lists a deleted file, and the
        directory when nothing is left; whether anything is left."""
        used = {
            name
            for name, e in self.entries.items()
            if any(os.path.join(self.directory, f) in in_use for f in e["files"].values())
        }
        if len(used) == len(self.entries):
            return True
        gone = {
            f for name, e in self.entries.items() if name not in used for f in e["files"].values()
        }
        self.entries = {name: self.entries[name] for name in used}
        if used:
            write_manifest(self.directory, _manifest(self.entries, self.time))
        else:
            gone.add(MANIFEST)
        _remove_files(self.directory, gone)
        if not used:
            try:
                os.rmdir(self.directory)
            except OSError:  # something else was put there: it stays
                pass
        return bool(used)


class PeriodicCheckpoint:
    """After an evaluation, save the new arrays' tiles if ``interval`` seconds passed
    since the last save (thesis §2.4); lost tiles then reload instead of recomputing.

    Each checkpoint is a directory ``<config.checkpoint_dir>/<run>-<n>`` that
    :func:`load_checkpoint` reads (arrays named ``n<uid>``). Its arrays' rebuild records
    switch to its files once it is complete; the newest ``config.checkpoint_keep`` stay,
    and of older ones only the arrays a live array's rebuild still reads."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.count = 0
        #: the name this process's checkpoint directories start with
        self.run: str | None = None
        self._next = 0
        #: this process's periodic checkpoints on disk, oldest first
        self.made: list[_Periodic] = []

    def due(self) -> bool:
        """Whether the next :meth:`after` saves (checkpoints on, and the interval over)."""
        from spartan.config import config

        return bool(config.checkpoint_dir) and (
            time.monotonic() - self.last >= config.checkpoint_interval
        )

    def after(self, nodes: list[Expr]) -> None:
        """Save the evaluated ``nodes`` if a checkpoint is due. A checkpoint that
        cannot be completed is deleted with a RuntimeWarning; the arrays keep their
        lineage."""
        from spartan.config import config

        if not nodes or not self.due():
            return
        keep = config.checkpoint_keep
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"spartan.config.checkpoint_keep must be an int >= 1, not {keep!r}")
        arrays = {
            f"n{node.uid}": node
            for node in nodes
            if node.data is not None
            and not isinstance(node, View)
            and _holdable(np.dtype(node.dtype))
        }
        if not arrays:
            return
        be = session.current()
        directory = self._new_directory(config.checkpoint_dir)
        token = secrets.token_hex(4)
        try:
            written = _write_arrays(directory, arrays, token, "periodic checkpoint")
            write_manifest(directory, _manifest(written.entries))
        except BaseException as error:
            _remove_files(directory, _leftovers(directory, token) | {MANIFEST})
            try:
                os.rmdir(directory)
            except OSError:
                pass
            self.last = time.monotonic()
            if not isinstance(error, Exception):
                raise
            warnings.warn(
                f"spartan: periodic checkpoint {directory!r} failed and was deleted ({error}); "
                f"the arrays are rebuilt from their lineage as before",
                RuntimeWarning,
                stacklevel=4,
            )
            return
        # (temporaries of a worker killed as it wrote)
        _remove_files(directory, _leftovers(directory, token) - written.files())
        # complete: from now on its arrays' lost tiles are read back from it
        be.checkpointed(written.loads)
        self.made.append(_Periodic(directory, written.entries, time.time(), weakref.ref(be)))
        self.count += 1
        self.last = time.monotonic()
        try:
            self._retire(be, keep)
        except OSError as error:  # an old checkpoint stays; the next one tries again
            log.warning("spartan: could not delete old periodic checkpoints: %s", error)

    def _new_directory(self, parent: str) -> str:
        os.makedirs(parent, exist_ok=True)
        if self.run is None:
            self.run = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        while True:
            directory = os.path.join(parent, f"{self.run}-{self._next:06d}")
            self._next += 1
            try:
                os.mkdir(directory)
                return directory
            except FileExistsError:
                continue

    def _retire(self, be: Backend, keep: int) -> None:
        """Trim the checkpoints older than the newest ``keep`` to what a rebuild of
        ``be``'s live blocks reads (those of another live backend stay whole)."""
        old, newest = self.made[:-keep], self.made[-keep:]
        if not old:
            return
        in_use = be.checkpoint_files_in_use()
        left = []
        for made in old:
            owner = made.backend()
            if owner is not None and owner is not be and owner.nworkers:
                left.append(made)
            elif made.trim(in_use if owner is be else set()):
                left.append(made)
        self.made = left + newest


periodic = PeriodicCheckpoint()
# every evaluation offers its new arrays (evaluate does not import this module)
after_evaluation.append(periodic)
