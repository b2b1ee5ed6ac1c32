"""Spartan: distributed NumPy on Ray with automatic tiling.

>>> import spartan as np
"""

from spartan import backend
from spartan.backend.session import init, shutdown

__all__ = ["backend", "init", "shutdown"]
