"""Settings read at evaluation time; change them on ``spartan.config``.

>>> import spartan
>>> spartan.config.tiles_per_worker = 4      # more, smaller tiles
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

#: where Linux describes the first CPU's caches
CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def l2_cache_bytes(cache_dir: str = CACHE_DIR) -> int:
    """One core's L2 cache (data or unified) in bytes; 0 where the system does not say.

    >>> l2_cache_bytes("/nonexistent")
    0
    """
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for index in sorted(glob.glob(os.path.join(cache_dir, "index*"))):
        try:
            level, kind, size = (_read(os.path.join(index, n)) for n in ("level", "type", "size"))
        except OSError:
            continue
        if level == "2" and kind != "Instruction" and size:
            scale = units.get(size[-1].upper(), 1)
            digits = size[:-1] if size[-1].upper() in units else size
            return int(digits) * scale if digits.isdigit() else 0
    return 0


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def default_chunk_bytes(l2: int | None = None) -> int:
    """Bytes per pipeline chunk: one core's L2 cache (``l2``; default: this machine's)
    where that holds 2 MB or more, else 8 MB.

    Measured with 2 workers at 2 GB: where a core has a 2 MB L2 and the large shared L3
    is slower (480 MB here), 2 MB chunks ran logistic regression in 1.46-1.48 s against
    1.62 s with 8 MB (k-means 0.82 against 0.91 s, PCA -10%; a 13-point stencil, whose
    wide rows make few per chunk, 0.110 against 0.100 s); on the earlier VM (32 MB L3 for
    2 cores) 8 MB chunks ran logistic regression 9-18% faster than 2 MB ones, whose
    per-chunk calls added up.

    >>> default_chunk_bytes(2 << 20) >> 20, default_chunk_bytes(512 << 10) >> 20
    (2, 8)
    """
    l2 = l2_cache_bytes() if l2 is None else l2
    return l2 if l2 >= 2 << 20 else 8 << 20


@dataclass
class Config:
    #: largest tile the default tiling makes, in bytes
    max_tile_bytes: int = int(os.environ.get("SPARTAN_MAX_TILE_BYTES", 64 << 20))
    #: largest default tile on a GPU worker (few big tiles keep a GPU busy)
    gpu_max_tile_bytes: int = 1 << 31
    #: if set, every default tiling has this many tiles per worker
    tiles_per_worker: int | None = None
    #: evaluate automatically once this many unevaluated nodes pile up
    max_graph_size: int = 2000
    #: evaluate automatically once a path of this many unevaluated nodes forms (a loop's
    #: chain is as deep as the loop; :func:`spartan.frontend.evaluate.too_deep`). No walk
    #: of the graph recurses per node, so this is a backstop: a walk recursing at 3
    #: frames per node would stay under 800 of Python's 1000, leaving 200 to user code.
    #: Of the bounds tried (100 to 2,000), 250 also ran long loops fastest.
    max_graph_depth: int = 250
    #: arrays of fewer bytes, made without a ``tiling=``, are held in the driver and
    #: computed eagerly with NumPy (:mod:`spartan.frontend.small`); 0 distributes every
    #: array. bench/local_threshold.py measures where 2 workers start to beat the driver:
    #: an element-wise chain with a sum between 4 and 16 MiB, a Jacobi sweep (whose
    #: writes are join_updates) beyond 32 MiB; 4 MiB stays on the driver's side of both.
    local_below_bytes: int = int(os.environ.get("SPARTAN_LOCAL_BELOW_BYTES", 4 << 20))
    #: what ``numpy.asarray(x)`` (``x.__array__``) does when it would fetch a distributed
    #: array of more than ``implicit_fetch_bytes`` into the driver -- the path by which a
    #: library written for NumPy (scikit-learn without array API dispatch, SciPy outside
    #: its array API list, xarray's ``interp``) gathers an array: "warn" (a
    #: :class:`spartan.ImplicitFetchWarning` naming the caller), "raise" (``TypeError``)
    #: or "allow". ``x.to_numpy()`` and ``spartan.compute`` are explicit and never warn.
    implicit_fetch: str = os.environ.get("SPARTAN_IMPLICIT_FETCH", "warn")
    #: distributed arrays up to this many bytes are fetched by ``numpy.asarray`` silently
    implicit_fetch_bytes: int = int(os.environ.get("SPARTAN_IMPLICIT_FETCH_BYTES", 64 << 20))
    #: computed arrays of at most this many bytes get a full copy on every worker
    #: (0: the optimizer tiles them like any other array)
    replicate_below_bytes: int = int(os.environ.get("SPARTAN_REPLICATE_BELOW_BYTES", 1 << 16))
    #: compute row-local operators inside the product (``X.T @ ...``) or fold that
    #: consumes them, in cache-sized row chunks (:mod:`spartan.frontend.pipeline`)
    pipeline_rows: bool = True
    #: bytes one pipeline chunk touches (its inputs and every intermediate): one core's
    #: L2 cache where that holds 2 MB or more, else 8 MB (see :func:`default_chunk_bytes`)
    pipeline_chunk_bytes: int = field(default_factory=default_chunk_bytes)
    #: tall matrices of fewer bytes are QR-factored by one task, not by TSQR
    #: (:func:`spartan.linalg.qr`): its stages' round trips cost more than the move
    tsqr_min_bytes: int = 4 << 20
    #: bytes the optimizer may spend on duplicated (replicated) arrays
    dup_budget_bytes: int = 0
    #: let the optimizer re-tile evaluated arrays where that moves fewer bytes in total
    retile_inputs: bool = True
    #: raise optimizer errors instead of falling back to local tiling rules (tests)
    strict_optimizer: bool = bool(os.environ.get("SPARTAN_STRICT_OPTIMIZER"))
    #: memory one worker may use, in bytes (None: a share of the machine's available memory)
    worker_memory_bytes: int | None = None
    #: freed memory a Ray worker keeps for its next blocks, in bytes (None: an eighth of
    #: its share of the node's memory, at most 1 GB; 0: return it, as malloc does);
    #: see :mod:`spartan.backend.heap`. Read when the workers start.
    worker_keep_freed_bytes: int | None = None
    #: copies a Ray worker makes of at least this many bytes write past the cache
    #: (non-temporal stores; None: glibc's own threshold, which a VM reporting its
    #: host's whole L3 puts at hundreds of MB); see
    #: :mod:`spartan.backend.streaming_copies`. Read when the workers start.
    worker_streaming_copy_bytes: int | None = 4 << 20
    #: how far the Ray workers' niceness is raised above that of Ray's own processes
    #: (None: Ray's 15, at which the driver's and Ray's threads preempt them at will;
    #: 0 or more); see :func:`spartan.backend.ray_backend.worker_env`. Read when the
    #: workers start.
    worker_niceness: int | None = 0
    #: largest result the driver fetches through its shared-memory landing zone, which
    #: it keeps (at up to this size) for every later fetch, lending it to a result that
    #: fills most of it (0: always through Ray's object store); see
    #: :mod:`spartan.backend.shared_output`
    landing_zone_bytes: int = 1 << 30
    #: directory for periodic checkpoints of evaluated tiles (None: off)
    checkpoint_dir: str | None = os.environ.get("SPARTAN_CHECKPOINT_DIR")
    #: seconds between periodic checkpoints
    checkpoint_interval: float = 60.0
    #: periodic checkpoints kept on disk (the newest; at least 1): of older ones only
    #: the arrays a live array's rebuild still reads stay
    checkpoint_keep: int = 2
    #: recoveries from lost workers one evaluation (or fetch) may make; a further loss
    #: raises :class:`spartan.WorkerLostError` (the session stays usable: the next
    #: evaluation replaces the lost workers). A loss while a recovery rebuilds counts too
    recovery_attempts: int = 3
    #: seconds one evaluation may take on the workers before it raises ``TimeoutError``
    #: naming the user function still running; the workers stuck in it are stopped and
    #: replaced at the next evaluation (None: no limit)
    task_timeout: float | None = None
    #: seconds a cancel (Ctrl-C) waits for the tasks running to finish before it stops
    #: their workers, which the next evaluation replaces (None: waits as long as they
    #: run; a second Ctrl-C stops them at once)
    cancel_timeout: float | None = 10.0
    #: show a progress bar for evaluations longer than this many seconds (None: never)
    progress_after: float | None = 1.0


config = Config()
