"""``spartan.lib``: the part of ``numpy.lib`` that array libraries reach through a
namespace, ``xp.lib.stride_tricks.sliding_window_view`` (xarray's rolling windows).

>>> import spartan as sp
>>> sp.lib.stride_tricks.sliding_window_view(sp.arange(4), 2).shape
(3, 2)
"""

from __future__ import annotations

from spartan.frontend import stride_tricks

__all__ = ["stride_tricks"]
