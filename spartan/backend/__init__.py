"""Backends: workers that hold blocks and run tasks (they know nothing of arrays)."""

from spartan.backend.base import Backend, Piece, Region, Stats
from spartan.backend.session import current, init, shutdown

__all__ = ["Backend", "Piece", "Region", "Stats", "current", "init", "shutdown"]
