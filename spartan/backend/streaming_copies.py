"""Big copies in a worker written past the cache (non-temporal stores).

glibc's ``memcpy`` (under NumPy's copies) switches to non-temporal stores for copies
over a threshold it derives from the last-level cache. A VM that reports its host's
whole L3 gets a threshold of hundreds of MB, so a worker writing its piece of a result
into the driver's landing zone first reads every destination line into the cache; on a
machine whose L3 glibc sizes right, a copy that big already streams, and a fixed
threshold can be worse than glibc's. So this is opt-in
(``spartan.config.worker_streaming_copy_bytes``, off by default: docs/tuning.md). glibc
reads its tunables when a process starts, so the setting travels in the environment the
workers are started with.

>>> glibc_tunables(4 << 20, None)
'glibc.cpu.x86_non_temporal_threshold=0x400000'
>>> glibc_tunables(4 << 20, "glibc.malloc.arena_max=2")
'glibc.malloc.arena_max=2:glibc.cpu.x86_non_temporal_threshold=0x400000'
"""

from __future__ import annotations

#: the glibc tunable (x86 only; other platforms ignore it)
THRESHOLD_TUNABLE = "glibc.cpu.x86_non_temporal_threshold"


def glibc_tunables(threshold: int, current: str | None) -> str | None:
    """``GLIBC_TUNABLES`` with copies of at least ``threshold`` bytes streamed, added to
    ``current`` (the caller's own setting); None where ``current`` sets the threshold
    already (the user's choice wins) or ``threshold`` is not positive."""
    entries = [e for e in (current or "").split(":") if e]
    if threshold <= 0 or any(e.split("=")[0] == THRESHOLD_TUNABLE for e in entries):
        return None
    return ":".join([*entries, f"{THRESHOLD_TUNABLE}={threshold:#x}"])
