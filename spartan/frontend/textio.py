"""Text files: :func:`loadtxt`, :func:`genfromtxt` and :func:`savetxt`, read and written
by the workers (genfromtxt's notes are above it).

``loadtxt`` of a large file: the driver skips ``skiprows`` lines, then cuts the rest of
the file into byte ranges that end at a newline (it seeks near each cut and reads only
to the next newline). A first pass on the workers parses every range with
:func:`numpy.loadtxt` and returns its row and column counts (a tiny array); a second,
lazy pass (``newarray``) parses again the ranges each tile's rows come from. Every
range is parsed by NumPy itself, so values, comments, blank lines and errors are
NumPy's; an error's row number is made the file's by adding the rows of the ranges
before it. Small files, and options that a cut at a newline could change (converters,
``quotechar``, ``max_rows``, ``unpack``, flexible dtypes, compressed files, encodings
that are not ASCII-compatible), are read on the driver by :func:`numpy.loadtxt`.

``savetxt``: each group of rows is formatted by the worker holding it (NumPy's
:func:`numpy.savetxt` on its block) twice: once to learn its byte length, then to write
it at its offset into the file, so the file is NumPy's byte for byte.

Paths must be on a file system every worker sees, as for :func:`spartan.save`.

>>> sp.savetxt("x.txt", x, delimiter=","); y = sp.loadtxt("x.txt", delimiter=",")
"""

from __future__ import annotations

import codecs
import io
import locale
import math
import os
import re
import warnings
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, newarray
from spartan.frontend.decompositions import _group_of
from spartan.frontend.join_update import JoinUpdate
from spartan.tiling import Box, Tiling

#: target bytes per range a worker parses (tests make it small to cut small files)
RANGE_BYTES = 16 << 20
#: codecs in which every b"\n" byte is a newline character, so cuts at it are safe
_ASCII_COMPATIBLE = {"utf-8", "ascii", "latin-1", "iso8859-1", "cp1252"}
_ROW = re.compile(r"at row (\d+)")


def _file_rows(message: str, before: int) -> str:
    """NumPy's message about a range, its row numbers made the file's."""
    return _ROW.sub(lambda m: f"at row {int(m.group(1)) + before}", message)


def _split_ok(
    fname: Any,
    dtype: Any,
    converters: Any,
    unpack: bool,
    max_rows: Any,
    quotechar: Any,
    encoding: Any,
    ndmin: int,
) -> bool:
    """Whether cutting the file at newlines gives NumPy's result for these options."""
    if not isinstance(fname, (str, os.PathLike)):
        return False
    path = os.fspath(fname)
    if isinstance(path, bytes) or path.endswith((".gz", ".bz2", ".xz", ".zip")):
        return False
    if converters is not None or unpack or max_rows is not None or quotechar is not None:
        return False
    try:
        dt = np.dtype(np.float64 if dtype is None else dtype)
    except TypeError:
        return False
    if dt.hasobject or (dt.itemsize == 0) or (dt.names is not None and ndmin):
        return False
    if dt.names is not None and any(dt[n].shape or dt[n].names for n in dt.names):
        return False
    if encoding == "bytes":
        return False
    enc = encoding or locale.getpreferredencoding(False)
    try:
        return codecs.lookup(enc).name in _ASCII_COMPATIBLE
    except LookupError:
        return False


class _Ranges:
    """The byte ranges of a text file and how to parse them (a picklable task)."""

    def __init__(self, path: str, cuts: list[int], encoding: str, kw: dict[str, Any]):
        self.path, self.cuts, self.encoding, self.kw = path, cuts, encoding, kw

    def parse(self, r: int, usecols: Any = "all", max_rows: int | None = None) -> np.ndarray:
        """Range ``r`` parsed by NumPy: 2-D (1-D for a structured dtype)."""
        with open(self.path, "rb") as f:
            f.seek(self.cuts[r])
            text = f.read(self.cuts[r + 1] - self.cuts[r]).decode(self.encoding)
        kw = dict(self.kw)
        if usecols != "all":
            kw["usecols"] = usecols
        if max_rows is not None:
            kw["max_rows"] = max_rows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
            return np.loadtxt(io.StringIO(text, newline=None), **kw)


class _Count:
    """``newarray`` init of the first pass: per range ``[rows, columns, failed]``."""

    def __init__(self, ranges: _Ranges):
        self.ranges = ranges

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        out = []
        for r in range(*box[0]):
            try:
                a = self.ranges.parse(r)
            except ValueError:
                out.append([0, 0, 1])
                continue
            out.append([a.shape[0], a.shape[1] if a.ndim == 2 else 1, 0])
        return np.array(out, dtype=dtype).reshape(-1, 3)[:, box[1][0] : box[1][1]]


class _Parse:
    """``newarray`` init of the result: the rows of ``box`` from the ranges holding them."""

    def __init__(self, ranges: _Ranges, starts: list[int], cols: list[int] | None, squeeze: bool):
        self.ranges, self.starts, self.cols, self.squeeze = ranges, starts, cols, squeeze

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        lo, hi = box[0]
        usecols: Any = "all"
        if self.cols is not None and not self.squeeze:
            usecols = self.cols[box[1][0] : box[1][1]]
        parts = []
        for r in range(len(self.starts) - 1):
            a, b = self.starts[r], self.starts[r + 1]
            if b <= lo or a >= hi or a == b:
                continue
            block = self.ranges.parse(r, usecols)
            if block.shape[0] != b - a:
                raise ValueError(f"loadtxt: {self.ranges.path} changed while it was being read")
            parts.append(block[max(lo, a) - a : min(hi, b) - a])
        out = np.concatenate(parts) if parts else np.empty((0,), dtype)
        if self.squeeze:
            out = out.reshape(-1)
        return np.asarray(out, dtype=dtype)


def _cuts(path: str, skiprows: int, nworkers: int) -> list[int]:
    """Byte offsets: after ``skiprows`` lines, then each near an even cut, after a newline."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        for _ in range(skiprows):
            if not f.readline():
                break
        start = f.tell()
        n = max(2 * nworkers, math.ceil((size - start) / RANGE_BYTES), 1)
        cuts = [start]
        for i in range(1, n):
            at = start + (size - start) * i // n
            if at <= cuts[-1]:
                continue
            f.seek(at - 1)  # a cut just after a newline stays there
            f.readline()
            if cuts[-1] < f.tell() < size:
                cuts.append(f.tell())
    return cuts + [size]


def _check(ranges: _Ranges, counts: np.ndarray, rows_before: list[int], same: bool) -> int:
    """The columns of every row; NumPy's first error, as NumPy words it for the whole
    file, if a range failed or (``same``: no ``usecols``) the columns change between
    ranges. The ranges are checked in file order; a failed range is parsed again here."""
    width = 0
    for r in range(len(counts)):
        rows, w, failed = (int(v) for v in counts[r])
        if failed:
            try:  # its first row first: the columns may change right there
                w = ranges.parse(r, max_rows=1).shape[-1]
                rows = 1
            except ValueError as e:
                raise type(e)(_file_rows(str(e), rows_before[r])) from None
        if rows and width and same and w != width:
            raise ValueError(
                f"the number of columns changed from {width} to {w} at row "
                f"{rows_before[r] + 1}; use `usecols` to select a subset and avoid this error"
            )
        if failed:
            try:
                ranges.parse(r)
            except ValueError as e:
                raise type(e)(_file_rows(str(e), rows_before[r])) from None
        if rows and not width:
            width = w
    return width


def loadtxt(
    fname: Any,
    dtype: Any = float,
    comments: Any = "#",
    delimiter: Any = None,
    converters: Any = None,
    skiprows: int = 0,
    usecols: Any = None,
    unpack: bool = False,
    ndmin: int = 0,
    encoding: Any = None,
    max_rows: Any = None,
    *,
    quotechar: Any = None,
    like: Any = None,
    tiling: Any = None,
) -> Any:
    """A text file as a spartan array, with :func:`numpy.loadtxt`'s parameters and result.

    Files larger than ``spartan.config.local_below_bytes`` are cut into byte ranges at
    newlines and parsed by the workers (see the module's notes); smaller ones, and the
    options a cut could change, are read by NumPy on the driver. ``tiling=`` fixes the
    result's tiling; ``like=`` is accepted as NumPy's creation functions take it (the
    result is a spartan array). The path must be on a file system every worker sees.

    >>> _ = open("data.csv", "w").write("a,b,c\\n1,2,3\\n4,5,6\\n")
    >>> sp.loadtxt("data.csv", delimiter=",", skiprows=1, usecols=(0, 2))
    array([[1., 3.],
           [4., 6.]])
    """
    from spartan.backend import session
    from spartan.config import config

    kw = dict(dtype=dtype, comments=comments, delimiter=delimiter, usecols=usecols)
    if isinstance(fname, (str, os.PathLike)) and not isinstance(fname, bytes):
        path = os.path.abspath(os.fspath(fname))
        if not os.path.exists(path):
            raise FileNotFoundError(f"loadtxt: {os.fspath(fname)} not found.")
    split = _split_ok(fname, dtype, converters, unpack, max_rows, quotechar, encoding, ndmin)
    if split and os.path.getsize(path) < config.local_below_bytes:
        split = False
    if split and skiprows < 0:
        split = False
    if not split:
        out = np.loadtxt(
            fname,
            converters=converters,
            skiprows=skiprows,
            unpack=unpack,
            ndmin=ndmin,
            encoding=encoding,
            max_rows=max_rows,
            quotechar=quotechar,
            **kw,
        )
        if unpack:
            return tuple(asarray(a) for a in out)
        return asarray(out) if tiling is None else asarray(out).retile(tiling)
    if ndmin not in (0, 1, 2):
        raise ValueError(f"Illegal value of ndmin keyword: {ndmin}")
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if usecols is not None:  # a list, in the user's order (an int is one column)
        cols = [usecols] if isinstance(usecols, (int, np.integer)) else list(usecols)
        cols = [int(c) for c in cols]
        kw["usecols"] = cols
    structured = dt.names is not None
    kw["ndmin"] = 1 if structured else 2
    enc = encoding or locale.getpreferredencoding(False)
    ranges = _Ranges(path, _cuts(path, skiprows, session.current().nworkers), enc, kw)
    n = len(ranges.cuts) - 1
    counts = newarray(
        (n, 3), _Count(ranges), np.int64, tiling=Tiling((n, 1)), name="loadtxt_count"
    ).to_numpy()
    rows_before = np.concatenate([[0], np.cumsum(counts[:, 0])]).tolist()
    width = _check(ranges, counts, rows_before, usecols is None and not structured)
    total = rows_before[-1]
    if total <= 1:  # NumPy squeezes a single row (and warns of none): let it
        out = np.loadtxt(
            fname,
            skiprows=skiprows,
            ndmin=ndmin,
            encoding=encoding,
            **{k: v for k, v in kw.items() if k != "ndmin"},
        )
        return asarray(out)
    if structured:
        shape: tuple[int, ...] = (total,)
        colist = None
        squeeze = False
    else:
        squeeze = width == 1 and ndmin < 2
        shape = (total,) if squeeze else (total, width)
        colist = kw["usecols"] if usecols is not None else list(range(width))
    init = _Parse(ranges, rows_before, colist, squeeze)
    return newarray(shape, init, dt, tiling=tiling, name="loadtxt")


class _Format:
    """``f_join``: a group of rows as NumPy's text; measure (``offsets`` None) or write."""

    def __init__(self, path: str, n: int, groups: int, kw: dict[str, Any], offsets: Any):
        self.path, self.n, self.groups, self.kw, self.offsets = path, n, groups, kw, offsets

    def __call__(self, extents, block: np.ndarray):
        lo, hi = extents[0].box[0]
        buf = io.BytesIO()
        np.savetxt(buf, block, header="", footer="", **self.kw)
        data = buf.getvalue()
        if self.offsets is not None:
            if lo not in self.offsets:
                raise RuntimeError(f"savetxt: rows {lo}:{hi} were not measured")
            with open(self.path, "r+b") as f:
                f.seek(self.offsets[lo])
                f.write(data)
        g = _group_of(lo, self.n, self.groups)
        return [((slice(g, g + 1),), np.array([[lo, hi, len(data)]]))]


def _format_pass(x: Array, task: _Format, groups: int) -> np.ndarray:
    return Array(
        JoinUpdate(task, None, [x._expr], [0], (groups, 3), np.int64, groups=groups, name="savetxt")
    ).to_numpy()


def savetxt(
    fname: Any,
    X: Any,
    fmt: Any = "%.18e",
    delimiter: str = " ",
    newline: str = "\n",
    header: str = "",
    footer: str = "",
    comments: str = "# ",
    encoding: Any = None,
) -> None:
    """Write a 1-D or 2-D array as text, as :func:`numpy.savetxt` does, byte for byte.

    Each group of rows is formatted and written at its place in the file by the worker
    holding it; the driver writes only the header and footer. Small arrays, file
    objects and compressed names are written by NumPy on the driver. The path must be
    on a file system every worker sees.

    >>> sp.savetxt("x.csv", sp.arange(6).reshape(3, 2), fmt="%d", delimiter=",")
    """
    from spartan.backend import session
    from spartan.config import config

    kw = dict(fmt=fmt, delimiter=delimiter, newline=newline, comments=comments, encoding=encoding)
    if not isinstance(X, Array):
        np.savetxt(fname, X, header=header, footer=footer, **kw)
        return
    x = X
    plain = isinstance(fname, (str, os.PathLike)) and not isinstance(fname, bytes)
    if (
        not plain
        or os.fspath(fname).endswith((".gz", ".bz2", ".xz"))
        or x.ndim not in (1, 2)
        or x.nbytes < config.local_below_bytes
        or x.shape[0] == 0
    ):
        np.savetxt(fname, x.to_numpy(), header=header, footer=footer, **kw)
        return
    # NumPy's checks of fmt against the data on one stand-in row, before any writing
    stand_in = np.zeros((1,) + x.shape[1:], x.dtype)
    np.savetxt(io.BytesIO(), stand_in, **kw)
    empty = np.zeros((0,) + x.shape[1:], x.dtype)
    head, foot = io.BytesIO(), io.BytesIO()
    np.savetxt(head, empty, header=header, **kw)
    np.savetxt(foot, empty, footer=footer, **kw)
    path = os.path.abspath(os.fspath(fname))
    n = x.shape[0]
    groups = max(1, min(n, session.current().nworkers))
    sizes = _format_pass(x, _Format(path, n, groups, kw, None), groups)
    sizes = sizes[np.argsort(sizes[:, 0])]
    offsets, at = {}, len(head.getvalue())
    for lo, _, nbytes in sizes.tolist():
        offsets[lo] = at
        at += nbytes
    with open(path, "wb") as f:
        f.write(head.getvalue())
        f.seek(at)
        f.write(foot.getvalue())
        f.truncate()
    _format_pass(x, _Format(path, n, groups, kw, offsets), groups)


# ---------------------------------------------------------------------------------------
# genfromtxt
#
# NumPy's genfromtxt takes the column count from the first line after ``skip_header``
# that has values, keeps the lines with that many values (or with every ``usecols``
# column), lists the others as invalid ("Line #N", N counted from that first line plus
# ``skip_header``) and converts each kept value on its own (for a numeric dtype, with
# ``loose=True``). So a range gives NumPy's rows when its lines are split by NumPy's own
# LineSplitter, checked against the file's column count, and the kept lines converted by
# numpy.genfromtxt itself: the driver finds the first line with values and starts the
# first range there, so that line numbers are the lines before the range plus its own.

#: options read on the driver only, when set (``loose`` when false)
_GEN_DRIVER_ONLY = ("skip_footer", "converters", "names", "unpack", "usemask")


def _gen_split_ok(fname: Any, dtype: Any, usecols: Any, encoding: Any) -> str | None:
    """``None`` when cutting the file at newlines gives NumPy's result, else the option
    (in words) that keeps it on the driver."""
    if not isinstance(fname, (str, os.PathLike)) or isinstance(os.fspath(fname), bytes):
        return "fname that is not a path"
    if os.fspath(fname).endswith((".gz", ".bz2", ".xz", ".zip")):
        return "a compressed file"
    if dtype is None:
        return "dtype=None"
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return f"dtype={dtype!r}"
    if dt.names is not None or dt.kind not in "biufc" or dt.shape:
        return f"dtype={dtype!r}"
    if usecols is not None:
        cols = [usecols] if isinstance(usecols, (int, np.integer)) else usecols
        if isinstance(cols, str) or not all(isinstance(c, (int, np.integer)) for c in cols):
            return "usecols given by name"
    if encoding == "bytes":
        return "encoding='bytes'"
    enc = encoding or locale.getpreferredencoding(False)
    try:
        if codecs.lookup(enc).name not in _ASCII_COMPATIBLE:
            return f"encoding={encoding!r}"
    except LookupError:
        return f"encoding={encoding!r}"
    return None


class _GenRanges:
    """The byte ranges of a text file, split and checked as numpy.genfromtxt does."""

    def __init__(
        self,
        path: str,
        cuts: list[int],
        encoding: str,
        split: dict[str, Any],
        cols: list[int] | None,
        nbcols: int,
        kw: dict[str, Any],
    ):
        self.path, self.cuts, self.encoding, self.split = path, cuts, encoding, split
        self.cols, self.nbcols, self.kw = cols, nbcols, kw

    def scan(
        self, r: int, limit: int | None = None
    ) -> tuple[int, list[str], list[tuple[int, int]]]:
        """Range ``r`` (up to its ``limit``-th kept line): its line count, kept lines
        and invalid ``(line, values)``."""
        from numpy.lib._iotools import LineSplitter

        with open(self.path, "rb") as f:
            f.seek(self.cuts[r])
            text = f.read(self.cuts[r + 1] - self.cuts[r]).decode(self.encoding)
        split_line = LineSplitter(**self.split)
        kept, invalid, i = [], [], -1
        for i, line in enumerate(io.StringIO(text, newline=None)):
            values = split_line(line)
            if not values:
                continue
            if self.cols:
                if any(c >= len(values) or c < -len(values) for c in self.cols):
                    invalid.append((i, len(values)))
                    continue
            elif len(values) != self.nbcols:
                invalid.append((i, len(values)))
                continue
            kept.append(line)
            if len(kept) == limit:
                break
        return i + 1, kept, invalid

    def parse(self, r: int, limit: int | None = None) -> np.ndarray:
        """The kept rows of range ``r`` (the first ``limit``) converted by NumPy, 2-D."""
        kept = self.scan(r, limit)[1]
        if not kept:
            return np.empty((0, self.nbcols), self.kw["dtype"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.genfromtxt(kept, ndmin=2, **self.kw)
        return out.reshape(len(kept), self.nbcols)


class _GenCount:
    """``newarray`` init of the first pass: per range ``[lines, kept rows, invalid]``."""

    def __init__(self, ranges: _GenRanges):
        self.ranges = ranges

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        out = []
        for r in range(*box[0]):
            lines, kept, invalid = self.ranges.scan(r)
            out.append([lines, len(kept), len(invalid)])
        return np.array(out, dtype=dtype).reshape(-1, 3)[:, box[1][0] : box[1][1]]


class _GenParse:
    """``newarray`` init of the result: the rows of ``box`` from the ranges holding them."""

    def __init__(self, ranges: _GenRanges, starts: list[int], squeeze: bool):
        self.ranges, self.starts, self.squeeze = ranges, starts, squeeze

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        lo, hi = box[0]
        parts = []
        for r in range(len(self.starts) - 1):
            a, b = self.starts[r], self.starts[r + 1]
            if b <= lo or a >= hi or a == b:
                continue
            last = r == len(self.starts) - 2
            block = self.ranges.parse(r, b - a if last else None)
            if block.shape[0] != b - a:
                raise ValueError(f"genfromtxt: {self.ranges.path} changed while it was being read")
            block = block[max(lo, a) - a : min(hi, b) - a]
            if not self.squeeze:
                block = block[:, box[1][0] : box[1][1]]
            parts.append(block)
        out = np.concatenate(parts) if parts else np.empty((0,), dtype)
        if self.squeeze:
            out = out.reshape(-1)
        return np.asarray(out, dtype=dtype)


def _gen_first(
    path: str, skip_header: int, split: dict[str, Any], encoding: str
) -> tuple[int, list[str]] | None:
    """The offset and values of the first line with values after ``skip_header`` lines
    (``None`` if none, or a lone ``\\r`` line end that a byte cut would misread)."""
    from numpy.lib._iotools import LineSplitter

    split_line = LineSplitter(**split)
    with open(path, "rb") as f:
        for _ in range(skip_header):
            line = f.readline()
            if not line:
                return None
            if b"\r" in line.rstrip(b"\r\n"):
                return None
        while True:
            at = f.tell()
            line = f.readline()
            if not line or b"\r" in line.rstrip(b"\r\n"):
                return None
            values = split_line(line.decode(encoding))
            if values:
                return at, values


def _first_line(path: str, start: int, encoding: str) -> str:
    """The line at byte ``start``."""
    with open(path, "rb") as f:
        f.seek(start)
        return f.readline().decode(encoding)


def _invalid_message(invalid: list[tuple[int, int]], nbcols: int) -> str:
    template = f"    Line #%i (got %i columns instead of {nbcols})"
    return "\n".join(["Some errors were detected !"] + [template % v for v in invalid])


def genfromtxt(
    fname: Any,
    dtype: Any = float,
    comments: Any = "#",
    delimiter: Any = None,
    skip_header: int = 0,
    skip_footer: int = 0,
    converters: Any = None,
    missing_values: Any = None,
    filling_values: Any = None,
    usecols: Any = None,
    names: Any = None,
    excludelist: Any = None,
    deletechars: Any = None,
    replace_space: str = "_",
    autostrip: bool = False,
    case_sensitive: Any = True,
    defaultfmt: str = "f%i",
    unpack: Any = None,
    usemask: bool = False,
    loose: bool = True,
    invalid_raise: bool = True,
    max_rows: Any = None,
    encoding: Any = None,
    *,
    ndmin: int = 0,
    like: Any = None,
    tiling: Any = None,
) -> Any:
    """A text file with missing values as a spartan array: :func:`numpy.genfromtxt`'s
    parameters and result (missing or unreadable float fields are NaN, or
    ``filling_values``).

    A file larger than ``spartan.config.local_below_bytes`` is cut into byte ranges at
    newlines and parsed by the workers when its options allow (``delimiter``,
    ``comments``, ``skip_header``, ``usecols`` by index, a numeric ``dtype``,
    ``missing_values``, ``filling_values``, ``autostrip``, ``invalid_raise``,
    ``max_rows``, ``ndmin``). The other options (``names``, ``dtype=None`` or structured,
    ``converters``, ``skip_footer``, ``usemask``, ``loose=False``, ``unpack``, file
    objects...) are read by NumPy on the driver for files under ``local_below_bytes``
    and raise ``NotImplementedError`` for larger ones. Invalid lines raise NumPy's
    ``ValueError`` with their line numbers in the whole file. ``tiling=`` fixes the
    result's tiling.

    >>> _ = open("data.csv", "w").write("a,b,c\\n1,2,3\\n4,,6\\n")
    >>> sp.genfromtxt("data.csv", delimiter=",", skip_header=1, filling_values=0)
    array([[1., 2., 3.],
           [4., 0., 6.]])
    """
    from numpy.lib._iotools import NameValidator

    from spartan.backend import session
    from spartan.config import config

    if deletechars is None:
        deletechars = "".join(sorted(NameValidator.defaultdeletechars))
    args = dict(
        dtype=dtype,
        comments=comments,
        delimiter=delimiter,
        skip_header=skip_header,
        skip_footer=skip_footer,
        converters=converters,
        missing_values=missing_values,
        filling_values=filling_values,
        usecols=usecols,
        names=names,
        excludelist=excludelist,
        deletechars=deletechars,
        replace_space=replace_space,
        autostrip=autostrip,
        case_sensitive=case_sensitive,
        defaultfmt=defaultfmt,
        unpack=unpack,
        usemask=usemask,
        loose=loose,
        invalid_raise=invalid_raise,
        max_rows=max_rows,
        encoding=encoding,
        ndmin=ndmin,
    )

    def on_driver() -> Any:
        out = np.genfromtxt(fname, **args)
        if isinstance(out, (list, tuple)):
            return [asarray(a) for a in out]
        if isinstance(out, np.ma.MaskedArray):
            return out  # spartan arrays carry no mask: NumPy's masked array as is
        return asarray(out) if tiling is None else asarray(out).retile(tiling)

    plain = isinstance(fname, (str, os.PathLike)) and not isinstance(os.fspath(fname), bytes)
    if plain:
        path = os.path.abspath(os.fspath(fname))
        if not os.path.exists(path):
            raise FileNotFoundError(f"genfromtxt: {os.fspath(fname)} not found.")
    else:
        return on_driver()
    why = _gen_split_ok(fname, dtype, usecols, encoding)
    if why is None:
        set_ = [k for k in _GEN_DRIVER_ONLY if args[k]] + ([] if loose else ["loose"])
        if set_:
            why = f"{set_[0]}={args[set_[0]]!r}"
    if why is None and (ndmin not in (0, 1, 2) or skip_header < 0):
        why = "ndmin or skip_header out of range"  # NumPy's own error on the driver
    if why is None and max_rows is not None and max_rows < 1:
        why = "max_rows < 1"
    size = os.path.getsize(path)
    if size < config.local_below_bytes or (why is not None and why.startswith(("ndmin", "max"))):
        return on_driver()
    if why is not None:
        raise NotImplementedError(
            f"genfromtxt: {os.fspath(fname)} ({size} bytes) is read by the workers only "
            f"without {why}; with it, files under spartan.config.local_below_bytes "
            f"({config.local_below_bytes} bytes) are read on the driver. Read it with "
            "numpy.genfromtxt and pass the result to spartan.asarray, or raise "
            "local_below_bytes (see docs/io.md)."
        )
    enc = encoding or locale.getpreferredencoding(False)
    split = dict(delimiter=delimiter, comments=comments, autostrip=autostrip, encoding=None)
    first = _gen_first(path, skip_header, split, enc)
    if first is None:  # an empty file (NumPy warns) or lone \r line ends: NumPy reads it
        return on_driver()
    start, first_values = first
    cols: list[int] | None = None
    if usecols is not None:
        cols = [usecols] if isinstance(usecols, (int, np.integer)) else list(usecols)
        cols = [int(c) + len(first_values) if c < 0 else int(c) for c in cols]
        if any(c < 0 for c in cols):  # NumPy reads these against each line's width
            return on_driver()
    nbcols = len(cols or first_values)
    kw = dict(
        dtype=dtype,
        comments=comments,
        delimiter=delimiter,
        missing_values=missing_values,
        filling_values=filling_values,
        usecols=cols,
        autostrip=autostrip,
        encoding=enc,
    )
    with warnings.catch_warnings():  # NumPy's errors about the options, before any work
        warnings.simplefilter("ignore")
        np.genfromtxt([_first_line(path, start, enc)], invalid_raise=False, **kw)
    cuts = _cuts(path, 0, session.current().nworkers)
    cuts = [start] + [c for c in cuts if c > start]
    if cuts[-1] != size:
        cuts.append(size)
    ranges = _GenRanges(path, cuts, enc, split, cols, nbcols, kw)
    n = len(cuts) - 1
    counts = newarray(
        (n, 3), _GenCount(ranges), np.int64, tiling=Tiling((n, 1)), name="genfromtxt_count"
    ).to_numpy()
    lines_before = np.concatenate([[0], np.cumsum(counts[:, 0])]).tolist()
    rows_before = np.concatenate([[0], np.cumsum(counts[:, 1])]).tolist()
    last, limit = n, None  # NumPy stops reading at the max_rows-th row
    if max_rows is not None and rows_before[-1] >= max_rows:
        last = int(np.searchsorted(rows_before, max_rows))
        rows_before = rows_before[:last] + [max_rows]
        limit = max_rows - rows_before[last - 1]
    total = rows_before[-1]
    if total <= 1:  # NumPy squeezes a single row (and warns or raises as it does): let it
        return on_driver()
    invalid: list[tuple[int, int]] = []
    for r in range(last):
        if counts[r, 2]:
            bad = ranges.scan(r, limit if r == last - 1 else None)[2]
            invalid += [(lines_before[r] + i + skip_header + 1, nb) for i, nb in bad]
    if invalid:
        message = _invalid_message(invalid, nbcols)
        if invalid_raise:
            raise ValueError(message)
        from numpy.lib._iotools import ConversionWarning

        warnings.warn(message, ConversionWarning, stacklevel=2)
    squeeze = nbcols == 1 and ndmin < 2
    shape: tuple[int, ...] = (total,) if squeeze else (total, nbcols)
    init = _GenParse(ranges, rows_before, squeeze)
    dt = np.dtype(dtype)
    return newarray(shape, init, dt, tiling=tiling, name="genfromtxt")
