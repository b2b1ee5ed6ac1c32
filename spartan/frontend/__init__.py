"""The frontend: the lazy ``Array`` handle, its expression graph, the five operators and
views, NumPy's functions written on them, and the tiling optimizer."""
