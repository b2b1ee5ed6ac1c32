"""What the driver has returned of each tile, so a rebuilt tile that changed is caught.

A lost tile is rebuilt by running the tasks that made it again, which gives the same
bits only if the user functions among them are deterministic. One that is not (unseeded
randomness, the clock) would silently change values the user has already read. So each
piece of a tile the driver returns leaves a small fingerprint (a CRC of a strided sample
of at most :data:`SAMPLE` elements per axis); when a tile rebuilt after a loss is read
again, its fingerprint must match, else :class:`TileChangedError` is raised. A sample sees a
function whose every output varies (random draws) with near certainty; a change in
only a few elements may pass unseen, so this is a tripwire, not a proof.

>>> import numpy as np
>>> from spartan.backend.base import Piece, Region
>>> seen = SeenTiles()
>>> region = Region((4,), np.dtype(float), (Piece(0, "k", (slice(0, 4),), (slice(0, 4),)),))
>>> seen.check([region], [np.arange(4.0)])
>>> seen.rebuilt(["k"])
>>> seen.check([region], [np.arange(4.0) + 1])
Traceback (most recent call last):
...
spartan.backend.seen.TileChangedError: a tile of an array already read changed when it was rebuilt ...
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np

from spartan.backend.base import Key, Region

#: elements sampled along each axis of a piece
SAMPLE = 16


class TileChangedError(RuntimeError):
    """A tile rebuilt after a worker was lost holds other values than the user read
    from it before: a user function it was made with is not deterministic."""


def fingerprint(piece: np.ndarray) -> int:
    """A CRC of a strided sample of ``piece`` (at most :data:`SAMPLE` per axis)."""
    step = tuple(slice(None, None, max(1, -(-n // SAMPLE))) for n in piece.shape)
    return zlib.crc32(np.ascontiguousarray(piece[step]).tobytes())


class SeenTiles:
    """Fingerprints of the pieces returned to the user, by tile key and piece, and the
    keys rebuilt since they were taken. Driver state only; the caller serializes."""

    def __init__(self) -> None:
        self._seen: dict[Key, dict[str, int]] = {}
        self._rebuilt: set[Key] = set()

    def rebuilt(self, keys: Iterable[Key]) -> None:
        """``keys`` were made again (a recovery's re-run)."""
        self._rebuilt.update(keys)

    def forget(self, keys: Iterable[Key]) -> None:
        """``keys`` were deleted: no later read can compare with them."""
        for key in keys:
            self._seen.pop(key, None)
            self._rebuilt.discard(key)

    def check(self, regions: Sequence[Region], arrays: Sequence[np.ndarray]) -> None:
        """Note the fingerprints of each piece of ``arrays`` (assembled ``regions``);
        :class:`TileChangedError` where a rebuilt tile's piece differs from its last read."""
        for region, out in zip(regions, arrays):
            if region.shape is None or out.dtype.hasobject:
                continue  # (a whole block passed through, or object references)
            for p in region.pieces:
                got = fingerprint(out[p.dst])
                where = repr(p.src)  # (slices are unhashable before Python 3.12)
                before = self._seen.setdefault(p.key, {})
                if p.key in self._rebuilt and before.get(where, got) != got:
                    raise TileChangedError(
                        "a tile of an array already read changed when it was rebuilt "
                        f"after a lost worker (worker {p.worker}): a user function it was "
                        "computed with is not deterministic (unseeded randomness, the "
                        "time...). Seed it from its inputs, or save the array with "
                        "spartan.save_checkpoint and load it back, so that a lost tile "
                        "is read from its file instead of computed again."
                    )
                before[where] = got
