"""``spartan.fft``: NumPy's ``numpy.fft`` (and the array API standard's ``fft``
extension) on spartan arrays, distributed.

A transform along an axis that each tile holds whole runs tile by tile; along a cut
axis the array is re-tiled so the axis is whole (its bytes are in the optimizer's cost
model), and a 1-d array is split four-step (Cooley-Tukey), so no worker ever receives
the whole array. Small arrays held in the driver run NumPy directly.

>>> X = spartan.fft.fft(x)
>>> f = spartan.fft.fftshift(spartan.fft.fftfreq(1024, d=0.1))
"""

from __future__ import annotations

# the driver-first wrapping (small arrays run numpy.fft in the driver) is applied to this
# namespace by spartan/__init__.py, as to spartan's and spartan.linalg's
from spartan.frontend.fft import *  # noqa: F403
from spartan.frontend.fft import __all__  # noqa: F401
