"""The executors' array kernels (NumPy or CuPy), re-exported from :mod:`spartan.dnn.kernels`.

The swap, placement and tiling executors share one kernel table so that every op type
of the IR runs in all three; this module keeps the swap package's import path.

>>> import numpy as np
>>> run_kernel(np, "relu_grad", [np.array([1.0, 2.0]), np.array([0.0, 3.0])], {})
array([0., 2.])
"""

from __future__ import annotations

from spartan.dnn.kernels import KERNELS, kernel_types, run_kernel

__all__ = ["run_kernel", "KERNELS", "kernel_types"]
