"""Checkpoints of evaluated arrays: save them, load them into a new session.

>>> spartan.save_checkpoint("/shared/ckpt", weights=w, step=s)     # doctest: +SKIP
>>> arrays = spartan.load_checkpoint("/shared/ckpt")
>>> arrays["weights"].shape
"""

from __future__ import annotations

import os
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


def save_checkpoint(path: str, **arrays: Any) -> str:
    """Write ``arrays`` (evaluating them first) under directory ``path``."""
    if not arrays:
        raise ValueError("save_checkpoint needs at least one array, e.g. weights=w")
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
    """The arrays saved under ``path``, tiled as they were saved (read lazily)."""
    from spartan.frontend.creation import newarray

    manifest = read_manifest(path)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"unsupported checkpoint format {manifest.get('format')!r} in {path!r}")
    out = {}
    for name, e in manifest["arrays"].items():
        shape = tuple(e["shape"])
        tiling = Tiling(tuple(e["cuts"]), e["replicated"])
        out[name] = newarray(
            shape, _FromFiles(path, e["files"]), np.dtype(e["dtype"]), tiling, f"load({name})"
        )
    return out


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
