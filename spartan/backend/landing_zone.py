"""Which results the Ray backend lands in its shared-memory zone, and who writes them.

:mod:`spartan.backend.shared_output` is the zone itself (a file in shared memory the
driver maps and lends). This module is the driver's bookkeeping around it, free of Ray:
of the regions a wait fetches, the biggest (:func:`biggest`) comes through the zone when
it is big enough, plain data, and every piece is on the driver's host
(:meth:`Landing.path`); the rest come as pieces. Where the tasks that make its pieces
are still queued when the evaluation flushes, each writes its pieces there in its own
call as it finishes (:meth:`Landing.plan`, :meth:`Landing.take`), and the wait then
writes only the pieces made before (:meth:`Landed.positions`).

>>> from spartan.backend.base import Piece, Region
>>> region = Region((4,), np.dtype(np.float64), (Piece(0, "a", (), (slice(0, 4),)),))
>>> region_bytes(region), biggest([region]), biggest([])
(32, 0, None)
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from spartan.backend import shared_output
from spartan.backend.base import Piece, Region
from spartan.backend.lineage import Record
from spartan.backend.session_files import SessionDir
from spartan.config import config


def region_bytes(region: Region) -> int:
    """Bytes of ``region`` assembled (0 for a whole stored object of unknown size)."""
    if region.shape is None:
        return 0
    return shared_output.array_bytes(region.shape, np.dtype(region.dtype))


def biggest(fetch: Sequence[Region]) -> int | None:
    """The position of the region a wait lands in the zone, if any qualifies: the
    biggest (the zone holds one result; the rest come as pieces)."""
    return max(range(len(fetch)), key=lambda i: region_bytes(fetch[i]), default=None)


def parts_by_owner(
    region: Region, owner: Callable[[Piece], int], skip: frozenset[int] = frozenset()
) -> dict[int, bytes]:
    """Each owner's share of ``region`` to write into the zone (pickled, as a worker's
    ``write_shared`` takes it), but the pieces at the positions ``skip``.

    >>> region = Region((2,), np.dtype(np.int8), (Piece(0, "a", (), (0,)), Piece(1, "b", (), (1,))))
    >>> sorted(parts_by_owner(region, lambda p: p.worker, skip=frozenset({1})))
    [0]
    """
    mine: dict[int, list[Piece]] = {}
    for n, p in enumerate(region.pieces):
        if n not in skip:
            mine.setdefault(owner(p), []).append(p)
    return {
        w: pickle.dumps(Region(region.shape, region.dtype, tuple(ps)), protocol=5)
        for w, ps in mine.items()
    }


@dataclass(frozen=True)
class Landed:
    """The region a flush arranged to land, the zone path, and the positions of the
    pieces its tasks write there themselves."""

    region: Region
    path: str
    written: frozenset[int]

    def positions(self, region: Region, path: str | None) -> frozenset[int]:
        """The pieces of ``region``, landing at ``path``, written there already: those
        of this arrangement if it is for the same region and zone, else none."""
        return self.written if region is self.region and path == self.path else frozenset()


class Landing:
    """The driver's side of the landing zone.

    >>> landing = Landing()
    >>> landing.take(7) is None      # no queued task writes into the zone
    True
    >>> landing.close()
    """

    def __init__(self, files: SessionDir | None = None) -> None:
        self.zone = shared_output.LandingZone(files)
        #: the landing write each queued task makes after it (the zone's path, and a
        #: pickled region of the result it makes pieces of), by sequence number
        self.lands: dict[int, tuple[str, bytes]] = {}
        #: what the next wait finds landed already (:meth:`plan`)
        self.landed: Landed | None = None

    def path(self, region: Region, local: Callable[[], bool]) -> str | None:
        """The zone's path when ``region`` comes through it: big enough, plain data,
        and ``local()`` (every piece on the driver's host, on CPU); None when not, or
        when the zone cannot hold it."""
        nbytes = region_bytes(region)
        if nbytes < shared_output.MIN_BYTES or np.dtype(region.dtype).hasobject or not local():
            return None
        return self.zone.reserve(nbytes, config.landing_zone_bytes)

    def plan(
        self,
        fetch: Sequence[Region],
        queued: Sequence[Record],
        maker: Callable[[Piece], Record | None],
        local: Callable[[Region], bool],
    ) -> None:
        """Have the ``queued`` tasks that make pieces of the result the next wait lands
        (``maker``: the record that makes a piece's block) write them into the zone as
        they finish; ``local(region)``: whether the region's pieces are all on the
        driver's host."""
        big = biggest(fetch)
        if big is None:
            return
        region = fetch[big]
        path = self.path(region, lambda: local(region))
        if path is None:
            return
        tasks = {rec.seq for rec in queued if rec.fn is not None and not rec.want_result}
        by_maker: dict[int, list[int]] = {}
        for n, p in enumerate(region.pieces):
            made = maker(p)
            if made is not None and made.seq in tasks:
                by_maker.setdefault(made.seq, []).append(n)
        for seq, at in by_maker.items():
            part = Region(region.shape, region.dtype, tuple(region.pieces[n] for n in at))
            self.lands[seq] = (path, pickle.dumps(part, protocol=5))
        self.landed = Landed(region, path, frozenset(n for at in by_maker.values() for n in at))

    def take(self, seq: int) -> tuple[str, bytes] | None:
        """The landing write task ``seq`` makes after it, as it is sent (None: none)."""
        return self.lands.pop(seq, None)

    def take_landed(self) -> Landed | None:
        """What the coming wait finds landed (asked once: a later wait lands anew)."""
        landed, self.landed = self.landed, None
        return landed

    def forget(self) -> None:
        """Drop the arranged writes (an evaluation abandoned or cancelled)."""
        self.lands.clear()
        self.landed = None

    def read(self, region: Region) -> np.ndarray:
        """The landed ``region`` (:meth:`~shared_output.LandingZone.read`)."""
        assert region.shape is not None  # (a landed region has a shape: region_bytes)
        lend = config.landing_zone_lends
        return self.zone.read(region.shape, np.dtype(region.dtype), lend)

    def close(self) -> None:
        """Let the zone go (writes may still be on their way: the next one is new)."""
        self.zone.close()
