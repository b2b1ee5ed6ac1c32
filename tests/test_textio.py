"""Text files: ``loadtxt`` parsed by the workers in byte ranges, ``savetxt`` written by
them; every result compared with NumPy's reading or writing the same file."""

from __future__ import annotations

import re

import numpy as np
import pytest

import spartan as sp
from spartan.frontend import textio


@pytest.fixture
def small_ranges(monkeypatch):
    """Cut even these small files into many byte ranges (the autouse fixture already
    sends every file above 0 bytes to the workers)."""
    monkeypatch.setattr(textio, "RANGE_BYTES", 64)


def _float_text() -> str:
    rng = np.random.default_rng(1)
    lines = ["# a header line", "# another", ""]
    for i, row in enumerate(rng.normal(size=(41, 4))):
        lines.append(" ".join(repr(float(v)) for v in row) + ("  # trailing" if i % 7 == 0 else ""))
        if i % 9 == 0:
            lines += ["", "   ", "# a comment between rows"]
    return "\n".join(lines) + "\n"


def _csv_text(sep: str) -> str:
    rows = [sep.join(str((i * 7 + j) % 23 - 5) for j in range(5)) for i in range(57)]
    return "name,of,the,columns\n" + "\n".join(rows)  # no final newline


CASES = [
    ("float", _float_text, {}),
    ("float", _float_text, dict(skiprows=5)),
    ("float", _float_text, dict(usecols=(3, 0))),
    ("float", _float_text, dict(usecols=-1)),
    ("float", _float_text, dict(usecols=[1], ndmin=2)),
    ("csv", lambda: _csv_text(","), dict(delimiter=",", skiprows=1, dtype=int)),
    ("csv", lambda: _csv_text(","), dict(delimiter=",", skiprows=1, usecols=(1, 2, 4))),
    ("tsv", lambda: _csv_text("\t"), dict(delimiter="\t", skiprows=1, dtype=np.int32)),
    ("pct", lambda: "% c\n" + "1 2 3\n4 5 6 % x\n" * 20, dict(comments="%", dtype=float)),
    ("cplx", lambda: "\n".join(f"{i}+{i}j {-i}-1j" for i in range(30)), dict(dtype=complex)),
    (
        "rec",
        lambda: "".join(f"{i} {i / 4}\n" for i in range(33)),
        dict(dtype=[("a", "i8"), ("b", "f4")]),
    ),
]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[c[0] for c in CASES])
def test_loadtxt_ranges_match_numpy(backend, tiling, tmp_path, small_ranges, case):
    _, text, kw = CASES[case]
    path = tmp_path / "data.txt"
    path.write_text(text())
    want = np.loadtxt(path, **kw)
    got = sp.loadtxt(path, tiling=tiling if want.ndim == 2 else None, **kw)
    assert isinstance(got, sp.Array) and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.to_numpy(), want)
    assert len(textio._cuts(str(path), kw.get("skiprows", 0), 2)) > 4  # several ranges


def test_loadtxt_data_do_not_go_through_the_driver(backend, tmp_path, small_ranges):
    a = np.arange(600.0).reshape(200, 3)
    np.savetxt(tmp_path / "big.txt", a)
    backend.reset_stats()
    x = sp.loadtxt(tmp_path / "big.txt").evaluate()
    assert backend.stats().as_dict()["bytes_from_driver"] == 0
    np.testing.assert_array_equal(x.to_numpy(), a)


def test_loadtxt_one_column_is_1d(local, tmp_path, small_ranges):
    path = tmp_path / "col.txt"
    path.write_text("".join(f"{i}\n" for i in range(50)))
    got = sp.loadtxt(path, dtype=int)
    assert got.shape == (50,)
    np.testing.assert_array_equal(got.to_numpy(), np.loadtxt(path, dtype=int))
    got2 = sp.loadtxt(path, ndmin=2)
    assert got2.shape == (50, 1)


@pytest.mark.parametrize(
    "kw",
    [
        dict(max_rows=7),
        dict(skiprows=2, max_rows=3, usecols=(0, 2)),
        dict(unpack=True),
        dict(converters={0: lambda s: float(s) * 2}),
        dict(quotechar='"', delimiter=","),
    ],
)
def test_loadtxt_on_the_driver(local, tmp_path, monkeypatch, kw):
    path = tmp_path / "d.txt"
    sep = "," if kw.get("delimiter") == "," else " "
    path.write_text("".join(sep.join(f"{i + j}" for j in range(3)) + "\n" for i in range(20)))
    want = np.loadtxt(path, **kw)
    got = sp.loadtxt(path, **kw)
    if kw.get("unpack"):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)
    else:
        np.testing.assert_array_equal(got.to_numpy(), want)


def test_loadtxt_small_file_stays_on_the_driver(local, tmp_path, monkeypatch):
    monkeypatch.setattr(sp.config, "local_below_bytes", 1 << 20)
    path = tmp_path / "s.txt"
    path.write_text("1 2\n3 4\n")
    np.testing.assert_array_equal(sp.loadtxt(path).to_numpy(), np.loadtxt(path))


def _numpy_error(path, **kw) -> str:
    with pytest.raises(ValueError) as e:
        np.loadtxt(path, **kw)
    return str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        "1 2\n" * 30 + "3 x\n" + "1 2\n" * 9,  # a value NumPy cannot read
        "1 2\n" * 30 + "# c\n\n" + "3\n" + "1 2\n" * 9,  # a row with fewer columns
        "1 2\n" * 12 + "1 2 3\n" * 20,  # the columns change at a range's first row
    ],
)
def test_loadtxt_errors_name_the_files_row(backend, tmp_path, small_ranges, text):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError) as e:
        sp.loadtxt(path)
    assert str(e.value) == _numpy_error(path)


def test_loadtxt_column_change_at_every_place(local, tmp_path, small_ranges):
    """Wherever the ranges are cut, the change is reported at NumPy's row."""
    path = tmp_path / "cols.txt"
    for k in range(2, 24):
        path.write_text("1 2\n" * k + "# c\n" + "1 2 3\n" * (24 - k))
        with pytest.raises(ValueError) as e:
            sp.loadtxt(path, dtype=int)
        assert str(e.value) == _numpy_error(path, dtype=int)
        got = sp.loadtxt(path, dtype=int, usecols=(0, 1))  # usecols: no error, as NumPy's
        np.testing.assert_array_equal(got.to_numpy(), np.loadtxt(path, int, usecols=(0, 1)))


def test_loadtxt_missing_file(local, tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.txt"):
        sp.loadtxt(tmp_path / "nothere.txt")


SAVE_CASES = [
    (np.float64, {}),
    (np.int64, dict(fmt="%d", delimiter=",", header="first\nsecond", footer="end")),
    (np.float32, dict(fmt=["%.3f", "%g", "%e"], newline="\r\n", comments="// ", header="h")),
    (np.complex128, dict(fmt="%.4e")),
]


@pytest.mark.parametrize("case", range(len(SAVE_CASES)))
def test_savetxt_matches_numpy_bytes(backend, tiling, tmp_path, case):
    dtype, kw = SAVE_CASES[case]
    a = (np.arange(75).reshape(25, 3) * 1.25 - 7).astype(dtype)
    sp.savetxt(tmp_path / "sp.txt", sp.array(a, tiling=tiling), **kw)
    np.savetxt(tmp_path / "np.txt", a, **kw)
    assert (tmp_path / "sp.txt").read_bytes() == (tmp_path / "np.txt").read_bytes()


def test_savetxt_1d_and_round_trip(local, tmp_path, small_ranges):
    a = np.linspace(-3, 3, 40)
    sp.savetxt(tmp_path / "v.txt", sp.asarray(a))
    np.savetxt(tmp_path / "w.txt", a)
    assert (tmp_path / "v.txt").read_bytes() == (tmp_path / "w.txt").read_bytes()
    np.testing.assert_array_equal(sp.loadtxt(tmp_path / "v.txt").to_numpy(), a)


def test_savetxt_errors(local, tmp_path):
    a = np.arange(12.0).reshape(4, 3)
    for bad in (dict(fmt=["%d", "%d"]), dict(fmt="%q"), dict(fmt="%d %d")):
        with pytest.raises((ValueError, AttributeError)) as want:
            np.savetxt(tmp_path / "n.txt", a, **bad)
        with pytest.raises(want.type) as got:
            sp.savetxt(tmp_path / "s.txt", sp.asarray(a), **bad)
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError, match="1D or 2D"):
        sp.savetxt(tmp_path / "s.txt", sp.zeros((2, 2, 2)))


# --- genfromtxt -------------------------------------------------------------------------


def _gaps_text() -> str:
    """A CSV with a header, comments, blank lines, empty and unreadable fields."""
    lines = ["# made by a test", "a,b,c,d"]
    for i in range(61):
        row = [str(i), "" if i % 5 == 0 else f"{i * 0.5}", "x" if i % 7 == 0 else str(-i)]
        lines.append(",".join(row + [str(i % 3)]) + ("  # note" if i % 4 == 0 else ""))
        if i % 11 == 0:
            lines += ["", "# between rows"]
    return "\n".join(lines) + "\n"


GEN_CASES = [
    dict(delimiter=",", skip_header=2),
    dict(delimiter=",", skip_header=1),  # the names row is data: NaNs
    dict(delimiter=",", skip_header=2, usecols=(3, -3)),
    dict(delimiter=",", skip_header=2, usecols=1, missing_values="x"),
    dict(delimiter=",", skip_header=2, dtype=int),
    dict(delimiter=",", skip_header=2, filling_values=-9.5, max_rows=23),
    dict(delimiter=",", skip_header=2, dtype=np.float32, usecols=[0, 1], ndmin=2),
]


@pytest.mark.parametrize("case", range(len(GEN_CASES)))
def test_genfromtxt_ranges_match_numpy(backend, tiling, tmp_path, small_ranges, case):
    kw = GEN_CASES[case]
    path = tmp_path / "gaps.csv"
    path.write_text(_gaps_text())
    want = np.genfromtxt(path, **kw)
    got = sp.genfromtxt(path, tiling=tiling if want.ndim == 2 else None, **kw)
    assert isinstance(got, sp.Array) and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.to_numpy(), want)  # NaN where NumPy has NaN
    assert len(textio._cuts(str(path), 0, 2)) > 4  # several ranges
    assert np.isnan(want).any() or kw.get("dtype") is int or "filling_values" in kw


def test_genfromtxt_options_checked_by_numpy_first(local, tmp_path):
    path = tmp_path / "o.txt"
    path.write_text("1 2\n3 4\n")
    for bad in (dict(filling_values={"a": 0}), dict(max_rows=0), dict(ndmin=3)):
        with pytest.raises((ValueError, TypeError, AttributeError)) as want:
            np.genfromtxt(path, **bad)
        with pytest.raises(want.type, match=re.escape(str(want.value))):
            sp.genfromtxt(path, **bad)
    np.testing.assert_array_equal(sp.genfromtxt(path, unpack=False).to_numpy(), [[1, 2], [3, 4]])


def test_genfromtxt_whitespace_and_autostrip(local, tmp_path, small_ranges):
    path = tmp_path / "ws.txt"
    path.write_text("".join(f" {i} ;  {i / 3} ; {'' if i % 4 else 'n/a'}\n" for i in range(40)))
    for kw in (dict(delimiter=";", autostrip=True), dict(delimiter=";", missing_values="n/a")):
        got = sp.genfromtxt(path, **kw)
        np.testing.assert_array_equal(got.to_numpy(), np.genfromtxt(path, **kw))


def _numpy_gen_error(path, **kw) -> str:
    with pytest.raises(ValueError) as e:
        np.genfromtxt(path, **kw)
    return str(e.value)


def test_genfromtxt_invalid_lines_are_the_files(backend, tmp_path, small_ranges):
    lines = _gaps_text().splitlines()
    path = tmp_path / "bad.csv"
    path.write_text(
        "\n".join(lines[:30] + ["1,2", "3,4,5,6,7"] + lines[30:50] + ["9"] + lines[50:])
    )
    for kw in (dict(skip_header=2), dict(skip_header=0, comments="%"), dict(usecols=(0, 3))):
        with pytest.raises(ValueError) as e:
            sp.genfromtxt(path, delimiter=",", **kw)
        assert str(e.value) == _numpy_gen_error(path, delimiter=",", **kw)
        assert "Line #" in str(e.value)


def test_genfromtxt_max_rows_stops_before_later_invalid_lines(local, tmp_path, small_ranges):
    path = tmp_path / "bad.txt"
    path.write_text(
        "# c\n\n" + "1 2\n" * 10 + "3\n" + "# x\n" + "4 5\n" * 10 + "6 7 8\n" + "1 2\n" * 5
    )
    for m in range(1, 30):
        try:
            want = np.genfromtxt(path, max_rows=m)
        except ValueError as e:
            with pytest.raises(ValueError) as got:
                sp.genfromtxt(path, max_rows=m)
            assert str(got.value) == str(e)
        else:
            np.testing.assert_array_equal(sp.genfromtxt(path, max_rows=m).to_numpy(), want)


def test_genfromtxt_invalid_raise_false_warns_as_numpy(local, tmp_path, small_ranges):
    from numpy.lib._iotools import ConversionWarning

    path = tmp_path / "bad.txt"
    path.write_text("1 2\n" * 20 + "3\n" + "4 5\n" * 20 + "6 7 8\n")
    with pytest.warns(ConversionWarning) as want_w:
        want = np.genfromtxt(path, invalid_raise=False)
    with pytest.warns(ConversionWarning) as got_w:
        got = sp.genfromtxt(path, invalid_raise=False)
    assert str(got_w[0].message) == str(want_w[0].message)
    np.testing.assert_array_equal(got.to_numpy(), want)


DRIVER_ONLY = [
    dict(names=True),
    dict(dtype=None),
    dict(skip_footer=2),
    dict(converters={1: lambda s: float(s or 0) * 2}),
    dict(usecols=("a", "c"), names=True),
    dict(loose=False),
]


@pytest.mark.parametrize("kw", DRIVER_ONLY, ids=[next(iter(k)) for k in DRIVER_ONLY])
def test_genfromtxt_driver_options(local, tmp_path, monkeypatch, kw):
    path = tmp_path / "d.csv"
    path.write_text("a,b,c\n" + "".join(f"{i},{'' if i % 3 else i},{i / 2}\n" for i in range(20)))
    args = dict(delimiter=",", skip_header=0 if kw.get("names") else 1, **kw)
    with pytest.raises(NotImplementedError, match=f"d.csv.*{next(iter(kw))}"):
        sp.genfromtxt(path, **args)  # a large file (the tests' threshold is 0 bytes)
    monkeypatch.setattr(sp.config, "local_below_bytes", 1 << 20)
    want = np.genfromtxt(path, **args)
    got = sp.genfromtxt(path, **args).to_numpy()
    assert got.dtype == want.dtype
    for name in want.dtype.names or [None]:  # NaNs in fields compare equal one by one
        np.testing.assert_array_equal(got[name] if name else got, want[name] if name else want)


def test_genfromtxt_edges(local, tmp_path, small_ranges):
    one = tmp_path / "one.txt"
    one.write_text("# c\n1 2 3\n")
    np.testing.assert_array_equal(sp.genfromtxt(one).to_numpy(), np.genfromtxt(one))
    with open(one) as f:  # a file object: NumPy on the driver
        np.testing.assert_array_equal(sp.genfromtxt(f).to_numpy(), np.genfromtxt(one))
    col = tmp_path / "col.txt"
    col.write_text("".join(f"{i}\n" for i in range(30)))
    assert sp.genfromtxt(col).shape == (30,)
    assert sp.genfromtxt(col, ndmin=2).shape == (30, 1)
    with pytest.raises(FileNotFoundError, match="nothere.txt"):
        sp.genfromtxt(tmp_path / "nothere.txt")


def test_genfromtxt_data_do_not_go_through_the_driver(backend, tmp_path, small_ranges):
    path = tmp_path / "big.csv"
    path.write_text("".join(f"{i},,{i / 4}\n" for i in range(200)))
    backend.reset_stats()
    x = sp.genfromtxt(path, delimiter=",").evaluate()
    assert backend.stats().as_dict()["bytes_from_driver"] == 0
    np.testing.assert_array_equal(x.to_numpy(), np.genfromtxt(path, delimiter=","))
