"""Settings read at evaluation time; change them on ``spartan.config``.

>>> import spartan
>>> spartan.config.tiles_per_worker = 4      # more, smaller tiles
"""

from __future__ import annotations

import os
from dataclasses import dataclass


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
    #: computed arrays of at most this many bytes get a full copy on every worker
    #: (0: the optimizer tiles them like any other array)
    replicate_below_bytes: int = int(os.environ.get("SPARTAN_REPLICATE_BELOW_BYTES", 1 << 16))
    #: compute row-local operators inside the product (``X.T @ ...``) or fold that
    #: consumes them, in cache-sized row chunks (:mod:`spartan.frontend.pipeline`)
    pipeline_rows: bool = True
    #: bytes one pipeline chunk touches (its inputs and every intermediate), within a
    #: core's share of the last-level cache (32 MB for 2 cores here): a 2 GB logistic
    #: regression took 9-18% less time than with 2 MB chunks, whose per-chunk calls
    #: (two products and five element-wise kernels on a few thousand rows) add up
    pipeline_chunk_bytes: int = 8 << 20
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
    #: largest result the driver fetches through its shared-memory landing zone, which
    #: it keeps (at up to this size) for every later fetch, lending it to a result that
    #: fills most of it (0: always through Ray's object store); see
    #: :mod:`spartan.backend.shared_output`
    landing_zone_bytes: int = 1 << 30
    #: directory for periodic checkpoints of evaluated tiles (None: off)
    checkpoint_dir: str | None = os.environ.get("SPARTAN_CHECKPOINT_DIR")
    #: seconds between periodic checkpoints
    checkpoint_interval: float = 60.0
    #: show a progress bar for evaluations longer than this many seconds (None: never)
    progress_after: float | None = 1.0


config = Config()
