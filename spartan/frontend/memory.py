"""A memory check before an evaluation starts: fail early with a clear error instead
of a worker being killed halfway through (or swapping the machine to a halt)."""

from __future__ import annotations

from collections.abc import Sequence

from spartan.config import config
from spartan.frontend.expr import Expr
from spartan.tiling import Tiling, box_size


def available_per_worker(nworkers_here: int) -> int:
    """Bytes one worker may use: ``config.worker_memory_bytes`` or a share of what
    this machine has available."""
    if config.worker_memory_bytes:
        return config.worker_memory_bytes
    import psutil

    return int(psutil.virtual_memory().available * 0.9) // max(1, nworkers_here)


def check(
    nodes: Sequence[Expr], tilings: dict[int, Tiling], nworkers: int, device_free: int = 0
) -> None:
    """Raise ``MemoryError`` naming the array that does not fit (in ``device_free``
    bytes per worker for GPU workers, else in host memory)."""
    need = [0] * nworkers
    limit = device_free or available_per_worker(nworkers)
    for e in nodes:
        t = tilings.get(e.uid)
        if t is None:
            continue
        item = e.dtype.itemsize
        if t.replicated:
            for w in range(nworkers):
                need[w] += e.size * item
        else:
            for idx, box in t.tiles(e.shape):
                need[t.worker_of(idx, nworkers)] += box_size(box) * item
        worst = max(range(nworkers), key=need.__getitem__)
        if need[worst] > limit:
            raise MemoryError(
                f"array {e.label} of shape {e.shape} and dtype {e.dtype} "
                f"({e.nbytes / 2**30:.2f} GiB) does not fit: this evaluation needs "
                f"{need[worst] / 2**30:.2f} GiB on worker {worst}, which has "
                f"{limit / 2**30:.2f} GiB available; add workers or machines, use smaller "
                "arrays, or raise spartan.config.worker_memory_bytes if Ray spills to disk"
            )
