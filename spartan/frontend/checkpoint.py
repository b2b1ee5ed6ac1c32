"""Checkpoints of evaluated arrays: save them, load them into a new session.

>>> spartan.save_checkpoint("/shared/ckpt", weights=w, step=s)     # doctest: +SKIP
>>> arrays = spartan.load_checkpoint("/shared/ckpt")
>>> arrays["weights"].shape
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import numpy as np

from spartan.backend import session
from spartan.backend.checkpoint import LoadTile, SaveTiles, read_manifest, write_manifest
from spartan.frontend.array import Array
from spartan.frontend.evaluate import evaluate
from spartan.frontend.expr import Expr
from spartan.tiling import Box, Tiling

FORMAT = 1


def _materialized(x: Any) -> Expr:
    from spartan.frontend.creation import asarray
    from spartan.frontend.manipulation import copy

    a = asarray(x)
    if a._expr.is_view:
        a = copy(a)
    evaluate(a._expr)
    return a._expr


def save_tiles(expr: Expr, directory: str, name: str) -> dict[str, Any]:
    """Have each worker write its tiles of ``expr``; returns the manifest entry."""
    tiles = expr.data
    be = session.current()
    by_worker: dict[int, list[tuple[tuple, str]]] = {}
    files = {}
    for idx, box, w in tiles.tiles():
        fname = f"{name}." + "_".join(map(str, idx)) + ".npy" if idx else f"{name}.npy"
        by_worker.setdefault(w, []).append((tiles.key(idx), os.path.join(directory, fname)))
        files[_box_key(box)] = fname
    for w, items in by_worker.items():
        be.submit(w, SaveTiles([p for _, p in items]), [k for k, _ in items], [])
    be.wait()
    for w, items in by_worker.items():
        for key, path in items:
            if hasattr(be, "lineage"):
                be.lineage.saved(key, w, LoadTile(path))
    return {
        "shape": list(expr.shape),
        "dtype": expr.dtype.str,
        "cuts": list(tiles.tiling.cuts),
        "replicated": tiles.tiling.replicated,
        "files": files,
    }


def _box_key(box: Box) -> str:
    return ",".join(f"{lo}:{hi}" for lo, hi in box)


#: an array's name in a checkpoint: it names its files, so nothing that leaves the directory
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
#: dtype kinds a checkpoint holds (np.load reads them without pickles): bool, integers,
#: floats, complex, datetimes, timedeltas, bytes, str
KINDS = "biufcmMSU"


def check_name(name: Any, what: str) -> str:
    """``name`` if it can name an array's files in a checkpoint, else ValueError."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"{what}: {name!r} cannot name a checkpoint array (letters, digits, '_', '.', "
            f"'-', no '..', at most 200 characters)"
        )
    return name


def check_entry(name: str, e: Any, where: str) -> tuple[tuple[int, ...], np.dtype, Tiling]:
    """Shape, dtype and tiling of a manifest entry, after checking everything in it
    (files named plainly in the directory, one per tile of its tiling) before any read."""

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
    if dtype.kind not in KINDS or dtype.fields is not None:
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
    return tuple(shape), dtype, tiling


def save_checkpoint(path: str, **arrays: Any) -> str:
    """Write ``arrays`` (evaluating them first) under directory ``path``.

    >>> spartan.save_checkpoint("/shared/ckpt", weights=w)   # doctest: +SKIP
    """
    if not arrays:
        raise ValueError("save_checkpoint needs at least one array, e.g. weights=w")
    for name in arrays:
        check_name(name, "save_checkpoint")
    os.makedirs(path, exist_ok=True)
    entries = {name: save_tiles(_materialized(x), path, name) for name, x in arrays.items()}
    write_manifest(path, {"format": FORMAT, "time": time.time(), "arrays": entries})
    return path


class _FromFiles:
    """``newarray`` init: the saved tile with this extent."""

    def __init__(self, directory: str, files: dict[str, str]) -> None:
        self.directory, self.files = directory, files

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        return LoadTile(os.path.join(self.directory, self.files[_box_key(box)]))()


def load_checkpoint(path: str) -> dict[str, Array]:
    """The arrays saved under ``path``, tiled as they were saved (read lazily). The
    manifest is checked first (array names, shapes, dtypes of the kinds ``np.load`` reads
    without pickles, tile files named plainly inside ``path``); ValueError says what is
    wrong.

    >>> spartan.load_checkpoint("/shared/ckpt")["weights"].shape   # doctest: +SKIP
    """
    from spartan.frontend.creation import newarray

    manifest = read_manifest(path)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"unsupported checkpoint format {manifest.get('format')!r} in {path!r}")
    arrays = manifest.get("arrays")
    if not isinstance(arrays, dict):
        raise ValueError(f"checkpoint {path!r}: its manifest lists no arrays")
    # every entry is checked before any tile is read
    checked = {
        check_name(name, f"checkpoint {path!r}"): (check_entry(name, e, path), e["files"])
        for name, e in arrays.items()
    }
    return {
        name: newarray(shape, _FromFiles(path, files), dtype, tiling, f"load({name})")
        for name, ((shape, dtype, tiling), files) in checked.items()
    }


class PeriodicCheckpoint:
    """After an evaluation, save the new arrays' tiles if ``interval`` seconds passed
    since the last save (thesis §2.4); lost tiles then reload instead of recomputing."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.count = 0

    def due(self) -> bool:
        """Whether the next :meth:`after` saves (checkpoints on, and the interval over)."""
        from spartan.config import config

        return bool(config.checkpoint_dir) and (
            time.monotonic() - self.last >= config.checkpoint_interval
        )

    def after(self, nodes: list[Expr]) -> None:
        from spartan.config import config

        if not nodes or not self.due():
            return
        os.makedirs(config.checkpoint_dir, exist_ok=True)
        entries = {}
        for node in nodes:
            if node.data is not None:
                name = f"n{node.uid}"
                entries[name] = save_tiles(node, config.checkpoint_dir, name)
        write_manifest(
            config.checkpoint_dir, {"format": FORMAT, "time": time.time(), "arrays": entries}
        )
        self.last = time.monotonic()
        self.count += 1


periodic = PeriodicCheckpoint()
