"""``spartan.fft``: NumPy's ``numpy.fft`` (and the array API standard's ``fft``
extension) on spartan arrays, distributed.

A transform along an axis that each tile holds whole runs tile by tile; along a cut
axis the array is re-tiled so the axis is whole (its bytes are in the optimizer's cost
model), and a 1-d array is split four-step (Cooley-Tukey), so no worker ever receives
the whole array. Small arrays held in the driver run NumPy directly.

>>> X = spartan.fft.fft(x)                       # doctest: +SKIP
>>> f = spartan.fft.fftshift(spartan.fft.fftfreq(1024, d=0.1))   # doctest: +SKIP
"""

from __future__ import annotations

import numpy as _np

from spartan.frontend import fft as _impl
from spartan.frontend.fft import fftfreq, rfftfreq
from spartan.frontend.small import local_first as _local_first

# each function of an array runs NumPy in the driver when its spartan array arguments
# are all small (spartan.frontend.small); fftfreq/rfftfreq take no array
fft = _local_first(_np.fft.fft, _impl.fft)
ifft = _local_first(_np.fft.ifft, _impl.ifft)
fftn = _local_first(_np.fft.fftn, _impl.fftn)
ifftn = _local_first(_np.fft.ifftn, _impl.ifftn)
rfft = _local_first(_np.fft.rfft, _impl.rfft)
irfft = _local_first(_np.fft.irfft, _impl.irfft)
rfftn = _local_first(_np.fft.rfftn, _impl.rfftn)
irfftn = _local_first(_np.fft.irfftn, _impl.irfftn)
hfft = _local_first(_np.fft.hfft, _impl.hfft)
ihfft = _local_first(_np.fft.ihfft, _impl.ihfft)
fft2 = _local_first(_np.fft.fft2, _impl.fft2)
ifft2 = _local_first(_np.fft.ifft2, _impl.ifft2)
rfft2 = _local_first(_np.fft.rfft2, _impl.rfft2)
irfft2 = _local_first(_np.fft.irfft2, _impl.irfft2)
fftshift = _local_first(_np.fft.fftshift, _impl.fftshift)
ifftshift = _local_first(_np.fft.ifftshift, _impl.ifftshift)

__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]
