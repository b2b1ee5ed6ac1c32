"""Tiles on disk: workers write and read ``.npy`` files; a msgpack manifest names them.

The directory must be reachable from every worker (one machine, or a shared file
system). :func:`spartan.save_checkpoint` and :func:`spartan.load_checkpoint` build on
these tasks, and periodic checkpoints register each saved tile with the lineage so a
lost tile is reloaded instead of recomputed.
"""

from __future__ import annotations

import os
from typing import Any

import msgpack
import numpy as np

from spartan.backend.device import to_host


class SaveTiles:
    """Task: write each input block to its path (atomically: write, then rename)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __call__(self, *blocks: np.ndarray) -> tuple:
        for path, block in zip(self.paths, blocks):
            tmp = f"{path}.tmp.npy"
            np.save(tmp, to_host(block))
            os.replace(tmp, path)
        return ()


class LoadTile:
    """Task: read one block back (used by lineage recovery and by ``load_checkpoint``)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, *_: Any) -> np.ndarray:
        try:
            return np.load(self.path)
        except FileNotFoundError:
            raise FileNotFoundError(f"checkpoint tile {self.path} is missing") from None


MANIFEST = "manifest.msgpack"


def write_manifest(directory: str, manifest: dict[str, Any]) -> None:
    tmp = os.path.join(directory, MANIFEST + ".tmp")
    with open(tmp, "wb") as f:
        f.write(msgpack.packb(manifest, use_bin_type=True))
    os.replace(tmp, os.path.join(directory, MANIFEST))


def read_manifest(directory: str) -> dict[str, Any]:
    """The manifest of the checkpoint in ``directory``, unpacked with limits; its
    structure is checked by the caller (:func:`spartan.frontend.checkpoint.load_checkpoint`)
    before any tile is read."""
    path = os.path.join(directory, MANIFEST)
    try:
        size = os.path.getsize(path)
        if size > MAX_MANIFEST_BYTES:
            raise ValueError(
                f"checkpoint manifest {path!r} is {size} bytes, over the limit of "
                f"{MAX_MANIFEST_BYTES}"
            )
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no spartan checkpoint in {directory!r} ({MANIFEST} missing)"
        ) from None
    try:
        manifest = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.exceptions.UnpackException) as error:  # (StackError too)
        raise ValueError(f"checkpoint manifest {path!r} cannot be read: {error!r}") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"checkpoint manifest {path!r} is not a map")
    return manifest


#: the largest manifest read (a checkpoint of a million tiles is ~100 MB of arrays' files
#: and a few tens of MB of manifest)
MAX_MANIFEST_BYTES = 64 << 20
