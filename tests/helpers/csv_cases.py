"""Tables from the hard corners of the CSV grammar (docs/semantics.md, "Values that
enter"), each with the records the grammar defines, written down independently of
snapcore's reader.

A cell is generated from its record: the record first (an int, the exact decimal a
number spells, a text, a missing value), then one of its spellings (signs, leading
zeros, exponents, blanks around it, quotes).  The expected record of a number spelling
is the double nearest the decimal written, computed from exact rationals
(``Fraction.__float__`` divides exactly-held integers, correctly rounded); of an
integer spelling, the integer itself.  A text is never a number spelling by
construction (hand-picked non-numbers, or words that start with a letter).

:func:`canon` puts any record (from a file or a frame) in one comparable form.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["MISSING", "REFUSED", "Table", "canon", "tables"]

#: The expected record of a missing cell, and of a cell the grammar refuses.
MISSING = ("missing",)
REFUSED = ("refused",)

_pd_na: Any = None
try:
    import pandas as _pd

    _pd_na = _pd.NA
except ImportError:  # pragma: no cover
    pass

#: Text that other CSV readers take for a number or a missing value: text here.
TRICKY_TEXT = [
    "NA",
    "N/A",
    "NULL",
    "null",
    "n/a",
    "#N/A",
    "None",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-Infinity",
    "+inf",
    "1_000",
    "1,000",
    "1 000",
    "1'000",
    "١٢",  # Arabic-Indic digits
    "１２",  # fullwidth digits
    "٣.٥",
    "0x10",
    "1.0.0",
    "1e",
    "1e+",
    "e5",
    ".",
    "+",
    "-",
    "+-1",
    "\u00a01",  # a no-break space is not a blank
    "1\u2009",  # nor a thin space
    "TRUE",
    "false",
    'say "hi"',
    "a\nb",
    "a\r\nb",
    "x,y",
    "北",
    "é",
    "\ufeffa",  # a byte-order mark inside the file is text
]

#: Integers at the edges: 2**53 and beyond, int64's limits, and more than the 4,300
#: digits Python's int(str) accepts.
EDGE_INTS = [
    0,
    1,
    -1,
    2**53 - 1,
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64 + 1,
    10**18,
    10**19 + 7,
]
#: Integers of more than 4,300 digits, spelled by hand: (digits, value).
HUGE_INTS = [
    ("1" + "0" * 4399 + "3", 10**4400 + 3),
    ("-1" + "0" * 4300 + "9", -(10**4301) - 9),
    ("9" * 5000, 10**5000 - 1),
]

#: Decimal spellings at the edges of the double range (subnormals, underflow, the
#: largest double, overflow).
EDGE_DECIMALS = [
    "4.9e-324",
    "5e-324",
    "2.4703282292062328e-324",  # just above half the smallest subnormal
    "2.4703282292062327e-324",  # just below it: rounds to zero
    "2.2250738585072011e-308",
    "1e-400",
    "-1e-400",
    "1.7976931348623157e308",
    "1.7976931348623158e308",  # rounds to the largest double
    "1.7976931348623159e308",  # rounds to infinity: refused
    "1e400",
    "-1e400",
    "0.1",
    "0.30000000000000004",
    "9007199254740993.0",  # 2**53 + 1, not an integer spelling: rounded
    "1." + "0" * 30 + "1",
    "0." + "0" * 400 + "1e400",
]


def _nearest_double(text: str) -> Any:
    """The double nearest the decimal ``text`` (exact rationals, rounded once), or
    REFUSED when that is beyond the double range."""
    exact = Fraction(Decimal(text))
    try:
        x = float(exact)  # int / int: correctly rounded, subnormals included
    except OverflowError:
        return REFUSED
    return x


@st.composite
def _int_cell(draw: Any) -> tuple[str, Any]:
    zeros = "0" * draw(st.integers(0, 3))
    if draw(st.integers(0, 5)) == 0:
        digits, v = draw(st.sampled_from(HUGE_INTS))
        sign = digits[0] if digits[0] == "-" else draw(st.sampled_from(["", "+"]))
        return sign + zeros + digits.lstrip("-"), v
    v = draw(st.sampled_from(EDGE_INTS) | st.integers(-(10**20), 10**20) | st.integers(-999, 999))
    sign = "-" if v < 0 else draw(st.sampled_from(["", "+"]))
    return f"{sign}{zeros}{abs(v)}", v


@st.composite
def _decimal_cell(draw: Any) -> tuple[str, Any]:
    if draw(st.booleans()):
        text = draw(st.sampled_from(EDGE_DECIMALS))
    else:
        whole = draw(st.integers(0, 10**20))
        frac = draw(st.integers(0, 10**20))
        form = draw(st.sampled_from(["w.f", "w.", ".f", "w.fEx", "wex", ".fex"]))
        exp = draw(st.integers(-340, 320))
        sign = draw(st.sampled_from(["", "+", "-"]))
        text = sign + (
            form.replace("w", str(whole)).replace("f", str(frac)).replace("x", str(exp))
        )
    return text, _nearest_double(text)


_WORD = st.text(alphabet="abcxyzAQé北_-/#& ", min_size=0, max_size=6)


@st.composite
def _text_cell(draw: Any) -> tuple[str, Any]:
    branch = draw(st.integers(0, 3))
    if branch == 0:
        text = draw(st.sampled_from(TRICKY_TEXT))
    elif branch == 1:  # what quoting must carry, across any block boundary
        text = draw(st.sampled_from(["a\nb", "a\r\nb", "\n\n", 'q"q', '""', "x,y", "\r"]))
        text = draw(_WORD) + text + draw(_WORD)
    else:
        text = draw(st.sampled_from("abNnQé北")) + draw(_WORD)
    return text, text.strip(" \t")


@st.composite
def cells(draw: Any, kind: str) -> tuple[str, bool, Any]:
    """(the cell's text, whether it is written quoted, its expected record: an int,
    a float, a str, None for a missing cell, or REFUSED) for a column of ``kind``:
    ``"number"`` (integers, decimals, missing cells), ``"int"`` (integers, missing
    cells) or ``"text"`` (texts, missing cells)."""
    if draw(st.integers(0, 14)) == 0:
        text, record = draw(st.sampled_from(["", " ", "\t", "  \t "])), None
    elif kind == "number":
        text, record = draw(_int_cell() | _decimal_cell())
    elif kind == "int":
        text, record = draw(_int_cell())
    else:
        text, record = draw(_text_cell())
    blanks = st.sampled_from(["", "", " ", "\t", "  "])
    text = draw(blanks) + text + draw(blanks)
    needs_quotes = any(c in text for c in ',"\r\n')
    return text, needs_quotes or draw(st.booleans()), record


class Table:
    """A generated CSV source and the records the grammar defines for it."""

    def __init__(
        self,
        names: list[str],
        kinds: list[str],
        cells: list[list[tuple[str, bool, Any]]],
        *,
        bom: bool,
        newline: str,
        blank_lines: list[int],
        final_newline: bool,
        header_blanks: list[tuple[str, str]],
        bad_utf8_column: int | None,
    ) -> None:
        self.names, self.kinds, self.cells = names, kinds, cells
        self.bom, self.newline, self.blank_lines = bom, newline, blank_lines
        self.final_newline, self.header_blanks = final_newline, header_blanks
        self.bad_utf8_column = bad_utf8_column

    @property
    def rows(self) -> int:
        return len(self.cells)

    def records(self, name: str) -> list[Any]:
        """The expected records of column ``name`` (int, float, str, None, REFUSED)."""
        i = self.names.index(name)
        return [row[i][2] for row in self.cells]

    def refused(self, name: str) -> bool:
        """Whether reading column ``name`` must be refused (a number beyond the double
        range in it, or invalid UTF-8 anywhere)."""
        return self.bad_utf8_column is not None or REFUSED in self.records(name)

    def csv_bytes(self, copies: int = 1) -> bytes:
        """The CSV text, its records written ``copies`` times over."""

        def field(text: str, quoted: bool) -> str:
            return '"' + text.replace('"', '""') + '"' if quoted else text

        header = ",".join(
            field(a + n + b, any(c in n for c in ',"\r\n'))
            for n, (a, b) in zip(self.names, self.header_blanks, strict=True)
        )
        lines = [header]
        for _ in range(copies):
            for r, row in enumerate(self.cells):
                if r in self.blank_lines:
                    lines.append("")
                lines.append(",".join(field(t, q) for t, q, _ in row))
        text = self.newline.join(lines) + (self.newline if self.final_newline else "")
        data = text.encode("utf-8")
        if self.bad_utf8_column is not None:
            # an invalid byte in the first record's cell of that column (unquoted)
            marker = "\x00BAD\x00"
            row = [field(t, q) for t, q, _ in self.cells[0]]
            row[self.bad_utf8_column] = marker
            text = self.newline.join([lines[0], ",".join(row), *lines[1:]])
            data = text.encode("utf-8").replace(marker.encode(), b"\xff\xfe")
        return (b"\xef\xbb\xbf" if self.bom else b"") + data

    def __repr__(self) -> str:
        return f"Table({self.names!r}, {self.kinds!r}, {self.cells!r}, bom={self.bom})"


@st.composite
def tables(draw: Any, *, max_rows: int = 12, refusals: bool = True) -> Table:
    """A table of one to three columns (number or text columns), with BOM, CRLF, blank
    lines and blanks around header names drawn; with ``refusals``, sometimes a cell
    beyond the double range or an invalid UTF-8 byte."""
    ncol = draw(st.integers(1, 3))
    names = draw(
        st.lists(
            st.sampled_from(["x", "y", "z", "age", "régión", "a b", "q,r", 'say "x"']),
            min_size=ncol,
            max_size=ncol,
            unique=True,
        )
    )
    kinds = draw(
        st.lists(st.sampled_from(["number", "int", "text"]), min_size=ncol, max_size=ncol)
    )
    nrow = draw(st.integers(1, max_rows))
    rows = [[draw(cells(k)) for k in kinds] for _ in range(nrow)]
    if not refusals:
        rows = [[c if c[2] is not REFUSED else ("1", False, 1) for c in row] for row in rows]
    if ncol == 1:  # an empty line is skipped: a one-column table writes "" for an empty cell
        rows = [[(t, q or not t, r) for t, q, r in row] for row in rows]
    return Table(
        names,
        kinds,
        rows,
        bom=draw(st.booleans()),
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        blank_lines=draw(st.lists(st.integers(0, nrow - 1), max_size=2)),
        final_newline=draw(st.booleans()),
        header_blanks=[
            (draw(st.sampled_from(["", " ", "\t"])), draw(st.sampled_from(["", " "])))
            for _ in names
        ],
        bad_utf8_column=(
            draw(st.sampled_from([None] * 9 + list(range(ncol)))) if refusals else None
        ),
    )


def canon(value: Any) -> Any:
    """A record in one comparable form: MISSING, REFUSED, ``("text", str)`` or
    ``("number", exact Fraction)`` (an int and a float of one value are one record)."""
    if value is REFUSED:
        return REFUSED
    if value is None or (_pd_na is not None and value is _pd_na):
        return MISSING
    if isinstance(value, float | np.floating) and value != value:
        return MISSING
    if isinstance(value, str | np.str_):
        return ("text", str(value))
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value))
    return ("number", Fraction(value))
