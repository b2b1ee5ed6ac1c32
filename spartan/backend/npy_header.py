"""The header of a ``.npy`` stream, read without pickles: what a tile file or a member
of an ``.npz`` archive holds, checked before its data is touched.

>>> import io, numpy as np
>>> f = io.BytesIO(); np.save(f, np.zeros((2, 3), np.float32)); _ = f.seek(0)
>>> read_header(f)
((2, 3), False, dtype('float32'))
"""

from __future__ import annotations

from typing import IO

import numpy as np


def read_header(f: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran flag and dtype of the ``.npy`` stream at ``f``'s position (left
    just past the header); ValueError where it is not one."""
    version = np.lib.format.read_magic(f)
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = read(f)
    return tuple(shape), fortran, dtype
