"""Tilings for the nodes of one evaluation, before they are lowered.

User-fixed tilings (``tiling=``, :func:`spartan.retile`) and evaluated arrays are kept;
every other node gets the tiling the optimizer picks (see
:mod:`spartan.frontend.optimizer`), falling back to the local rules here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from spartan.config import config
from spartan.frontend.expr import Expr
from spartan.frontend.fold import Fold
from spartan.frontend.map import Map
from spartan.frontend.scan import Scan
from spartan.tiling import Tiling


def default_pieces(nbytes: int, nworkers: int) -> int:
    """Tiles for an array of ``nbytes``: a multiple of the worker count, each at most
    ``config.max_tile_bytes`` (or ``config.tiles_per_worker`` per worker)."""
    if config.tiles_per_worker:
        return nworkers * config.tiles_per_worker
    return nworkers * max(1, math.ceil(nbytes / (nworkers * config.max_tile_bytes)))


def default_tiling(shape: Sequence[int], itemsize: int, nworkers: int) -> Tiling:
    nbytes = math.prod(shape) * itemsize
    return Tiling.row(shape, default_pieces(nbytes, nworkers))


def resolve_tiling(spec: object, shape: Sequence[int], itemsize: int, nworkers: int) -> Tiling:
    """A ``tiling=`` argument: a :class:`Tiling` or one of row/column/block/dup/single."""
    if isinstance(spec, Tiling):
        spec.check(shape)
        return spec
    if isinstance(spec, str):
        pieces = default_pieces(math.prod(shape) * itemsize, nworkers)
        if spec == "dup":
            return Tiling.duplicated(shape)
        return Tiling.named(spec, shape, pieces)
    raise TypeError(f"tiling must be a Tiling or a name, not {type(spec).__name__}")


def choose(order: Sequence[Expr], nworkers: int, fused: set[int]) -> dict[int, Tiling]:
    """A tiling for every node of ``order`` (fused maps share their consumer's)."""
    return local_rules(order, nworkers)


def local_rules(order: Sequence[Expr], nworkers: int) -> dict[int, Tiling]:
    """Each node follows its first input where that moves nothing, else the default."""
    out: dict[int, Tiling] = {}

    def tiling_of(e: Expr) -> Tiling:
        return e.data.tiling if e.data is not None else out[e.uid]

    for e in order:
        if e.tiling_hint is not None:
            out[e.uid] = e.tiling_hint
        elif e.is_view:
            out[e.uid] = e.induced_tiling(tiling_of(e.base))
        elif isinstance(e, Map) and any(c.shape == e.shape for c in e.children):
            first = next(c for c in e.children if c.shape == e.shape)
            out[e.uid] = tiling_of(first)
        elif isinstance(e, Scan):
            t_in = tiling_of(e.children[0])
            out[e.uid] = Tiling((1,) * len(e.shape)) if t_in.replicated else Tiling(t_in.cuts)
        elif isinstance(e, Fold):
            t_in = tiling_of(e.children[0])
            kept = [c for i, c in enumerate(t_in.cuts) if i not in e.axes]
            if not t_in.replicated and kept and any(c > 1 for c in kept):
                out[e.uid] = Tiling(tuple(kept))
            else:
                out[e.uid] = default_tiling(e.shape, e.dtype.itemsize, nworkers)
        else:
            out[e.uid] = default_tiling(e.shape, e.dtype.itemsize, nworkers)
    return out
