"""``repr``/``str`` like NumPy's, fetching only what is printed.

A big array is summarized with ``...`` exactly as NumPy would print it; only its corner
regions (``edgeitems`` per side of each axis) are fetched from the workers.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from spartan.frontend.evaluate import evaluate, gather


def summary(x: Any) -> tuple[np.ndarray, bool]:
    """A small NumPy array that prints like ``x`` (and whether it is summarized)."""
    opts = np.get_printoptions()
    if x.size <= opts["threshold"] or x._np is not None:  # (a small array: all in hand)
        return x.to_numpy(), x.size > opts["threshold"]
    edge = opts["edgeitems"]
    evaluate(x._expr)
    parts = []  # per axis: [(src lo, src hi, dst lo)]
    shape = []
    for n in x.shape:
        if n > 2 * edge:
            parts.append([(0, edge, 0), (n - edge, n, edge + 1)])
            shape.append(2 * edge + 1)
        else:
            parts.append([(0, n, 0)])
            shape.append(n)
    small = np.zeros(shape, x.dtype)
    for combo in itertools.product(*parts):
        box = tuple((lo, hi) for lo, hi, _ in combo)
        dst = tuple(slice(d, d + hi - lo) for lo, hi, d in combo)
        small[dst] = gather(x._expr, box)
    return small, True


def array_repr(x: Any) -> str:
    small, summarized = summary(x)
    with np.printoptions(threshold=0 if summarized else np.get_printoptions()["threshold"]):
        text = np.array_repr(small)
    # NumPy names the shape of a summarized array; ours is the real one
    return text.replace(f"shape={small.shape}", f"shape={x.shape}") if summarized else text


def array_str(x: Any) -> str:
    small, summarized = summary(x)
    with np.printoptions(threshold=0 if summarized else np.get_printoptions()["threshold"]):
        return np.array_str(small)


def array_html(x: Any) -> str:
    """Jupyter view: shape, dtype, tiling and the tile-to-worker map (2-d grid); a small
    array says it is held in the driver."""
    if x._np is None:
        evaluate(x._expr)
    tiling = x.tiling
    rows = [
        f"<tr><th>shape</th><td>{x.shape}</td></tr>",
        f"<tr><th>dtype</th><td>{x.dtype}</td></tr>",
        f"<tr><th>tiling</th><td>{tiling or 'held in the driver'}</td></tr>",
        f"<tr><th>bytes</th><td>{x.nbytes:,}</td></tr>",
    ]
    grid = ""
    if tiling is not None and not tiling.replicated and 1 <= len(tiling.cuts) <= 2:
        from spartan.backend import session

        nw = session.current().nworkers
        cuts = tiling.cuts if len(tiling.cuts) == 2 else (tiling.cuts[0], 1)
        palette = [
            "#8dd3c7",
            "#ffffb3",
            "#bebada",
            "#fb8072",
            "#80b1d3",
            "#fdb462",
            "#b3de69",
            "#fccde5",
        ]
        cells = []
        for i in range(min(cuts[0], 16)):
            tds = []
            for j in range(min(cuts[1], 16)):
                idx = (i, j) if len(tiling.cuts) == 2 else (i,)
                w = tiling.worker_of(idx, nw)
                tds.append(
                    f'<td style="background:{palette[w % len(palette)]};width:18px;height:12px;'
                    f'font-size:9px;text-align:center">{w}</td>'
                )
            cells.append("<tr>" + "".join(tds) + "</tr>")
        grid = "<table style='border-collapse:collapse'>" + "".join(cells) + "</table>"
    return (
        "<div><b>spartan.Array</b><table>"
        + "".join(rows)
        + "</table>"
        + (f"<div>tile → worker</div>{grid}" if grid else "")
        + "</div>"
    )
