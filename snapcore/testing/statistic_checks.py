"""The statistic conformance checks as plain functions (no pytest or hypothesis needed).

A statistic's privacy claim is what its :class:`~snapcore.plugins._statistic.Prepared` declares:
the sensitivity Δ, the value range (B′) and the share of ε per coordinate.  These
functions check the claim on the values the statistic really hands the mechanism, as a
gray-box audit does (Cebere et al., "Privacy in Theory, Bugs in Practice", PETS 2026):
a dataset D and a neighbour D′ under the statistic's own relation go through
:func:`snapcore.release` with the same frozen draws, in one of the containers snapcore
accepts, and the two runs are compared **exactly** (Fractions, no tolerance):

- every coordinate moves by at most Δ, and the coordinates that moved, each spending
  ``ε · epsilon_share``, spend at most ε together;
- f(D) lies in the declared value range for every dataset (extremal ones included);
- everything fixed before noise (clamp interval, granularity, precision, ε split,
  labels, every field of the release record but the values) is identical for D and D′;
- the two releases take the same path: the same number of draws from the same replay
  source, and each released value is the mechanism's output on f(D) for those draws;
- bad input is refused with :class:`~snapcore.errors.ParameterError` before any draw.

Every failure is a :class:`StatisticConformanceError` whose message ends with a
one-line reproduction.  :mod:`snapcore.testing.statistic_suite` wraps the checks as a
pytest suite; :func:`run_statistic_conformance` runs a quick selection without pytest
(``snapcore compare`` shows its result for every installed statistic).

The generators are written against a small :class:`Chooser` interface, so the same
code draws from :class:`random.Random` here and from hypothesis in the pytest suite.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, cast

import attrs
import numpy as np

from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError, SnapcoreError, StatisticConformanceError
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import Prepared, Statistic
from snapcore.randomness._sources import ReplaySource

__all__ = [
    "BUILTIN_SETTINGS",
    "Case",
    "Chooser",
    "Container",
    "Outcome",
    "RandomChooser",
    "Setting",
    "StatisticConformanceError",
    "StatisticReport",
    "check_dataset",
    "check_pair",
    "containers",
    "critical_points",
    "default_settings",
    "draw_pair",
    "evaluate",
    "exact_value",
    "extremal_datasets",
    "extremal_pairs",
    "frozen_draws",
    "prepare",
    "range_cases",
    "resolve_statistic",
    "run_statistic_conformance",
    "settings_for",
]

FAR = 1e300
HUGE = 10**400  # an exact integer no double holds


# -- what is checked ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Setting:
    """One parameter set a statistic is checked with.

    Attributes
    ----------
    data_bounds : pair, pairs or None
        ``data_bounds=`` as given to :func:`snapcore.release` (one pair per column).
    options : mapping
        The statistic's own options (``bins=``, ``categories=``, ...).
    records : {"numeric", "categorical"}
        What the generated records are: real numbers near the bounds and the numeric
        options, or category-like values of mixed types.
    """

    data_bounds: Any = None
    options: Mapping[str, Any] = attrs.field(factory=dict)
    records: str = attrs.field(
        default="numeric", validator=attrs.validators.in_(("numeric", "categorical"))
    )

    @property
    def label(self) -> str:
        """A short id for test names."""
        parts = []
        if self.data_bounds is not None:
            parts.append(f"data_bounds={self.data_bounds!r}")
        parts += [f"{k}={v!r}" for k, v in self.options.items()]
        return ",".join(parts) or "default"


@attrs.frozen(kw_only=True)
class Case:
    """A setting under one relation with one public ``n`` (None: taken from the data)."""

    setting: Setting
    relation: Neighbouring
    n: int | None = None


def _f32(x: float) -> float:
    return float(np.float32(x))


#: The settings the built-in statistics are checked with.  The bounds include an
#: interval one float32 wide, so that float32 records, strings and doubles meet at
#: its ends, and an interval around 2**53, where integers stop being doubles.
BUILTIN_SETTINGS: dict[str, list[Setting]] = {
    "count": [Setting()],
    "sum": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
        Setting(data_bounds=(2.0**53 - 16, 2.0**53 + 16)),
    ],
    "mean": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
    ],
    "variance": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
    ],
    "covariance": [
        Setting(data_bounds=((0.0, 1.0), (-3.0, 5.5))),
        Setting(data_bounds=((0.1, _f32(0.1)), (-1.0, 0.0))),
    ],
    "histogram": [
        Setting(options={"bins": [0.0, 1.0]}),
        Setting(options={"bins": [-3.0, 0.0, 0.5, 5.5]}),
        Setting(options={"categories": [1, 2, 3]}, records="categorical"),
        Setting(options={"categories": ["a", "b", 1]}, records="categorical"),
        Setting(options={"categories": [0.1, _f32(0.1), "x"]}, records="categorical"),
    ],
}

_DEFAULT_BOUNDS = [(0.0, 1.0), (-3.0, 5.5), (0.1, _f32(0.1))]


def default_settings(
    stat: Statistic, options: Sequence[Mapping[str, Any]] | None = None
) -> list[Setting]:
    """Settings for a statistic without a built-in table: each option set (default: the
    statistic's ``conformance_options``) with each of a few data bounds (if the
    statistic needs them), numeric records."""
    if options is None:
        options = stat.conformance_options
    bounds: list[Any] = [None]
    if stat.needs_data_bounds:
        bounds = (
            list(_DEFAULT_BOUNDS)
            if stat.columns <= 1
            else [tuple([b] * stat.columns) for b in _DEFAULT_BOUNDS]
        )
    return [Setting(data_bounds=b, options=dict(o)) for o in options for b in bounds]


# -- values and records -------------------------------------------------------------------


def exact_value(x: Any) -> Fraction | None:
    """The exact rational value of a real number of any accepted type, else None."""
    if isinstance(x, bool | np.bool_):
        return None
    if isinstance(x, Fraction | int):
        return Fraction(x)
    if isinstance(x, np.integer):
        return Fraction(int(x))
    if isinstance(x, float | np.floating):
        if not math.isfinite(float(x)) and not np.isfinite(x):
            return None
        n, d = x.as_integer_ratio()
        return Fraction(int(n), int(d))
    if isinstance(x, Decimal):
        return Fraction(x) if x.is_finite() else None
    return None


def _fits(x: Any, dtype: Any) -> Any:
    """``dtype(x)`` if that represents x exactly, else None."""
    q = exact_value(x)
    if q is None:
        return None
    try:
        with np.errstate(all="ignore"):
            if np.dtype(dtype).kind in "iu":
                if q.denominator != 1:
                    return None
                info = np.iinfo(dtype)
                if not info.min <= q.numerator <= info.max:
                    return None
                return np.dtype(dtype).type(q.numerator)
            v = np.dtype(dtype).type(x if not isinstance(x, Fraction | Decimal) else float(x))
    except (OverflowError, ValueError, TypeError):
        return None
    return v if exact_value(v) == q else None


#: Scalar types a numeric record may take in a mixed list (when exact).
NUMERIC_TYPES: tuple[Callable[[Any], Any], ...] = (
    float,
    int,
    np.float64,
    np.float32,
    np.float16,
    np.longdouble,
    np.int64,
    np.int8,
    np.uint32,
    Fraction,
)


def _as_type(x: Any, t: Callable[[Any], Any]) -> Any:
    """``x`` as type ``t`` if exact, else None."""
    q = exact_value(x)
    if q is None:
        return None
    if t is int:
        return int(q) if q.denominator == 1 else None
    if t is Fraction:
        return q
    if t is float:
        try:
            f = float(q)
        except OverflowError:
            return None
        return f if Fraction(f) == q else None
    return _fits(x, t)


def critical_points(setting: Setting, column: int = 0) -> list[Any]:
    """Record values where a statistic's reading is most likely to go wrong.

    The data bounds of ``column`` and every number in the options (bin edges, range
    ends), each with its neighbouring doubles; zero; a value far outside on each side;
    and an exact integer no double holds.
    """
    seeds: list[float] = []
    b = setting.data_bounds
    if b is not None:
        pair = b[column] if isinstance(b[0], tuple | list) else b
        seeds += [float(pair[0]), float(pair[1])]
        mid = (float(pair[0]) + float(pair[1])) / 2
        if math.isfinite(mid):
            seeds.append(mid)

    def walk(v: Any) -> None:
        if isinstance(v, bool):
            return
        if isinstance(v, int | float | np.integer | np.floating) and math.isfinite(float(v)):
            seeds.append(float(v))
        elif isinstance(v, list | tuple):
            for u in v:
                walk(u)

    for v in setting.options.values():
        walk(v)
    pts: list[Any] = []
    for s in seeds:
        pts += [s, math.nextafter(s, -math.inf), math.nextafter(s, math.inf)]
    pts += [0.0, -FAR, FAR, HUGE, -HUGE, 2**53 + 1]
    out: list[Any] = []
    for p in pts:
        if not any(type(p) is type(q) and p == q for q in out):
            out.append(p)
    return out


#: Category-like record values: ints, floats and strings that compare equal across
#: types, numbers whose float32 and double differ, and booleans.
CATEGORY_VALUES: tuple[Any, ...] = (
    1,
    2,
    3,
    1.0,
    np.int64(2),
    "a",
    "b",
    "x",
    "1",
    0.1,
    np.float32(0.1),
    _f32(0.1),
    2.5,
    True,
)

#: Records that are not real numbers: each must be refused (or, as a category, matched
#: on its own), never change how the other records are read.
ODD_VALUES: tuple[Any, ...] = ("0.1", "x", None, math.nan, math.inf, True, b"1", Decimal("0.1"))


# -- the chooser interface ---------------------------------------------------------------


class Chooser(Protocol):
    """Where the generators get their choices: :class:`random.Random` or hypothesis."""

    def choice(self, seq: Sequence[Any]) -> Any: ...

    def integer(self, lo: int, hi: int) -> int: ...

    def double(self, lo: float, hi: float) -> float: ...


class RandomChooser:
    """A :class:`Chooser` over :class:`random.Random` (reproducible from its seed)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self._rng.randrange(len(seq))]

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def double(self, lo: float, hi: float) -> float:
        return self._rng.uniform(lo, hi)


def _scalar_record(ch: Chooser, setting: Setting, column: int, odd: bool) -> Any:
    if setting.records == "categorical":
        pool = CATEGORY_VALUES + (ODD_VALUES if odd else ())
        return ch.choice(pool)
    kind = ch.choice(["point", "point", "inside", "odd"] if odd else ["point", "inside"])
    if kind == "odd":
        return ch.choice(ODD_VALUES)
    pts = critical_points(setting, column)
    if kind == "point":
        v = ch.choice(pts)
    else:
        finite = [float(p) for p in pts if isinstance(p, float) and abs(p) < FAR]
        lo, hi = min(finite), max(finite)
        v = ch.double(lo, hi) if lo < hi else lo
    typed = [t for t in NUMERIC_TYPES if _as_type(v, t) is not None]
    return _as_type(v, ch.choice(typed)) if typed else v


def _record(ch: Chooser, stat: Statistic, setting: Setting, odd: bool) -> Any:
    if stat.columns >= 2:
        return tuple(_scalar_record(ch, setting, j, odd) for j in range(stat.columns))
    return _scalar_record(ch, setting, 0, odd)


def range_cases(setting: Setting, relation: Neighbouring, size: int) -> list[Case]:
    """The public ``n`` a dataset of ``size`` records is checked with: the size itself
    under replace; under add-remove caps below (binding), at and above the size."""
    if relation is Neighbouring.REPLACE:
        return [Case(setting=setting, relation=relation, n=None)]
    caps = sorted({max(size - 1, 0), size, size + 2})
    return [Case(setting=setting, relation=relation, n=n) for n in caps]


def draw_pair(
    ch: Chooser,
    stat: Statistic,
    setting: Setting,
    relation: Neighbouring,
    max_size: int = 8,
) -> tuple[Case, list[Any], list[Any]]:
    """A case and a pair of neighbouring record lists ``(D, D′)`` under ``relation``.

    Records of D are mostly well-formed (sometimes one in four is odd: a string, None,
    NaN, a bool); often all but the last are copies of one record (ties, one full bin).
    The record that differs is drawn from everything, odd values included.  Under
    add-remove the public cap ``n`` is drawn below (binding), at or above the size.
    """
    size = ch.integer(1 if relation is Neighbouring.REPLACE else 0, max_size)
    odd_in_d = ch.integer(0, 4) == 0
    d = [_record(ch, stat, setting, odd_in_d) for _ in range(size)]
    if size > 1 and ch.integer(0, 2) == 0:
        d = [d[0]] * (size - 1) + [d[-1]]
    new = _record(ch, stat, setting, True)
    n: int | None = None
    if relation is Neighbouring.REPLACE:
        i = ch.integer(0, size - 1)
        d2 = [*d[:i], new, *d[i + 1 :]]
    else:
        if d and ch.integer(0, 1) == 0:
            i = ch.integer(0, size - 1)
            d2 = d[:i] + d[i + 1 :]
        else:
            i = ch.integer(0, size)
            d2 = [*d[:i], new, *d[i:]]
        n = ch.choice(sorted({0, 1, max(size - 1, 0), size, size + 1, 2 * size + 3}))
    return Case(setting=setting, relation=relation, n=n), d, d2


def _vertices(setting: Setting, column: int) -> list[float]:
    """The two ends of a column's range: its data bounds, else the smallest and largest
    number among the options, else 0 and 1."""
    b = setting.data_bounds
    if b is not None:
        pair = b[column] if isinstance(b[0], tuple | list) else b
        return [float(pair[0]), float(pair[1])]
    nums = [p for p in critical_points(setting, column) if isinstance(p, float) and abs(p) < FAR]
    nums = [p for p in nums if p != 0.0] or [0.0, 1.0]
    return [min(nums), max(nums)] if min(nums) < max(nums) else [0.0, 1.0]


def _multisets(points: Sequence[Any], sizes: Sequence[int]) -> Iterator[list[Any]]:
    for size in sizes:
        yield from (list(c) for c in itertools.combinations_with_replacement(points, size))


def _new_records(stat: Statistic, setting: Setting) -> list[Any]:
    """What a neighbour's differing record is drawn from in the extremal pairs."""
    if setting.records == "categorical":
        return list(CATEGORY_VALUES + ODD_VALUES)
    if stat.columns >= 2:
        pts = [critical_points(setting, j) for j in range(stat.columns)]
        news = [tuple(p[i % len(p)] for p in pts) for i in range(max(map(len, pts)))]
        return news + [(o, pts[1][0]) for o in ODD_VALUES] + [(pts[0][0], o) for o in ODD_VALUES]
    typed = [
        _as_type(v, t)
        for v in _vertices(setting, 0)
        for t in (np.float32, np.float16, np.longdouble, np.int64)
    ]
    return critical_points(setting) + [v for v in typed if v is not None] + list(ODD_VALUES)


def extremal_datasets(stat: Statistic, setting: Setting) -> Iterator[list[Any]]:
    """Hand-derived extremal datasets.

    The empty dataset; every multiset of one to five records at the vertices of the
    data box (each record at a bound: this reaches every built-in's B′, e.g. the
    variance's k = ⌊n/2⌋ records at one bound, and includes n = 1); up to three records
    (two for two columns) each at a bound or far outside it; and one or two records at
    any critical point (bin edges and their neighbouring doubles, huge integers, ...).
    Categorical settings: up to two records of the category-like values.
    """
    yield []
    if setting.records == "categorical":
        yield from _multisets(CATEGORY_VALUES, (1, 2))
        return
    cols = max(stat.columns, 1)
    inner = [_vertices(setting, j) for j in range(cols)]
    outer = [[*v, -FAR, FAR] for v in inner]
    if cols >= 2:
        yield from _multisets(list(itertools.product(*inner)), range(1, 6))
        yield from (
            d
            for d in _multisets(list(itertools.product(*outer)), (1, 2))
            if any(abs(v) == FAR for r in d for v in r)
        )
        yield from ([r] for r in _new_records(stat, setting))
        return
    yield from _multisets(inner[0], range(1, 6))
    yield from (d for d in _multisets(outer[0], (1, 2, 3)) if any(abs(v) == FAR for v in d))
    pts = critical_points(setting)
    yield from _multisets(pts, (1, 2))


def extremal_pairs(
    stat: Statistic, setting: Setting, relation: Neighbouring
) -> Iterator[tuple[list[Any], list[Any]]]:
    """Neighbours of the smallest extremal datasets (none, one or two records at the
    vertices, far outside included): the first or last record replaced by — or, under
    add-remove, a record added as — each critical point and each odd value, or a
    record removed."""
    news = _new_records(stat, setting)
    if setting.records == "categorical":
        bases: list[list[Any]] = [[], *([v] for v in CATEGORY_VALUES)]
        bases += [[1, "x"], [np.float32(0.1), 0.1]]
    else:
        cols = max(stat.columns, 1)
        outer = [[*_vertices(setting, j), -FAR, FAR] for j in range(cols)]
        verts: list[Any] = list(itertools.product(*outer)) if cols >= 2 else outer[0]
        bases = [[], *([v] for v in verts)]
        bases += [[verts[0], verts[0]], [verts[0], verts[1]], [verts[1], verts[-1]]]
        if cols == 1:  # the same records as numpy scalars, where they are exact
            for t in (np.float32, np.float16, np.longdouble, np.int64):
                for v in _vertices(setting, 0):
                    typed = _as_type(v, t)
                    if typed is not None:
                        bases.append([typed, typed])
    for d in bases:
        if relation is Neighbouring.REPLACE:
            for i in sorted({0, len(d) - 1}) if d else ():
                for r in news:
                    yield d, [*d[:i], r, *d[i + 1 :]]
        else:
            for r in news:
                yield d, [*d, r]
            for i in range(len(d)):
                yield d, d[:i] + d[i + 1 :]


# -- containers --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Container:
    """A way to hand records to snapcore.

    Attributes
    ----------
    name : str
        ``list``, ``ndarray[float32]``, ``pandas.Series[object]``, ...
    build : callable
        ``build(records) -> (data, column)``, or None when the container cannot hold
        these records exactly (an int8 array and 0.5, a str array and 1).
    expr : callable
        ``expr(records) -> str``: a Python expression that builds the same data (for
        the reproduction line; ``np``, ``pd``, ``pl`` and ``Fraction`` are imported).
    """

    name: str
    build: Callable[[list[Any]], tuple[Any, Any] | None]
    expr: Callable[[list[Any]], str]


def _object_array(records: list[Any]) -> np.ndarray:
    arr = np.empty(len(records), dtype=object)
    arr[:] = records
    return arr


def _rl(records: list[Any]) -> str:
    return repr(list(records))


def _col(records: list[Any], j: int) -> list[Any]:
    return [r[j] for r in records]


def _numeric_dtype_container(dtype: Any, columns: int) -> Container:
    name = np.dtype(dtype).name

    def build(records: list[Any]) -> tuple[Any, Any] | None:
        flat = [v for r in records for v in (r if columns >= 2 else (r,))]
        vals = [_fits(v, dtype) for v in flat]
        if any(v is None for v in vals):
            return None
        arr = np.array(vals, dtype=dtype)
        return (arr.reshape(len(records), columns) if columns >= 2 else arr), None

    def expr(records: list[Any]) -> str:
        shape = f".reshape({len(records)}, {columns})" if columns >= 2 else ""
        flat = [v for r in records for v in (r if columns >= 2 else (r,))]
        return f"np.array({flat!r}, dtype=np.{name}){shape}"

    return Container(name=f"ndarray[{name}]", build=build, expr=expr)


def containers(columns: int, records: str = "numeric") -> list[Container]:
    """Every container snapcore accepts for records of this shape.

    Python lists (the records' own, mixed types) and tuples; NumPy arrays of every
    numeric dtype that holds the records exactly, object arrays and (categories) str
    arrays; pandas Series and DataFrame columns of several dtypes; polars Series and
    DataFrames when polars is importable; and mappings of columns.
    """
    out: list[Container] = []
    names = [f"c{j}" for j in range(max(columns, 1))]
    col_arg: Any = names[0] if columns <= 1 else tuple(names)

    def mapping(records: list[Any]) -> dict[str, list[Any]]:
        if columns >= 2:
            return {nm: _col(records, j) for j, nm in enumerate(names)}
        return {names[0]: list(records)}

    out.append(Container(name="list", build=lambda r: (list(r), None), expr=_rl))
    out.append(
        Container(name="tuple", build=lambda r: (tuple(r), None), expr=lambda r: repr(tuple(r)))
    )
    if columns >= 2:
        out.append(
            Container(
                name="ndarray[object]",
                build=lambda r: (
                    np.array([list(x) for x in r], dtype=object).reshape(-1, columns),
                    None,
                ),
                expr=lambda r: f"np.array({[list(x) for x in r]!r}, dtype=object)",
            )
        )
    else:
        out.append(
            Container(
                name="ndarray[object]",
                build=lambda r: (_object_array(r), None),
                expr=lambda r: f"np.array({_rl(r)}, dtype=object)",
            )
        )
    dtypes: list[Any] = [np.float64, np.float32, np.float16, np.longdouble]
    dtypes += [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    out += [_numeric_dtype_container(dt, columns) for dt in dtypes]
    if records == "categorical" and columns <= 1:
        out.append(
            Container(
                name="ndarray[str]",
                build=lambda r: (
                    (np.array(r, dtype=str), None)
                    if r and all(isinstance(v, str) for v in r)
                    else None
                ),
                expr=lambda r: f"np.array({_rl(r)}, dtype=str)",
            )
        )
    out.append(
        Container(
            name="mapping",
            build=lambda r: (mapping(r), col_arg),
            expr=lambda r: repr(mapping(r)),
        )
    )
    out += _pandas_containers(columns, records, names, col_arg)
    out += _polars_containers(columns, names, col_arg)
    return out


def _series_expr(kind: str, r: list[Any]) -> str:
    return f"pd.Series({_rl(r)}, dtype={kind!r})"


def _frame_expr(kind: str, names: list[str], r: list[Any]) -> str:
    if len(names) == 1:
        cols = {names[0]: list(r)}
    else:
        cols = {nm: _col(r, j) for j, nm in enumerate(names)}
    body = ", ".join(f"{nm!r}: pd.Series({v!r}, dtype={kind!r})" for nm, v in cols.items())
    return "pd.DataFrame({" + body + "})"


def _pandas_containers(
    columns: int, records: str, names: list[str], col_arg: Any
) -> list[Container]:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the test extra
        return []
    out: list[Container] = []
    kinds: list[str] = ["object", "float64", "int64"]
    if records == "categorical":
        kinds += ["category", "string"]

    def series(vals: list[Any], kind: str) -> Any:
        if kind == "float64" and any(_fits(v, np.float64) is None for v in vals):
            return None
        if kind == "int64" and any(_fits(v, np.int64) is None for v in vals):
            return None
        if kind == "string" and not all(isinstance(v, str) for v in vals):
            return None
        if kind == "category" and (
            not vals or len({type(v) for v in vals}) != 1 or isinstance(vals[0], np.generic)
        ):
            return None
        if kind in ("float64", "int64"):
            vals = [_fits(v, kind) for v in vals]
        return pd.Series(vals if kind != "object" else _object_array(vals), dtype=kind)

    for kind in kinds:
        if columns <= 1:

            def build_s(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                s = series(list(r), kind)
                return None if s is None else (s, None)

            def build_f(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                s = series(list(r), kind)
                return None if s is None else (pd.DataFrame({names[0]: s}), col_arg)

            out.append(
                Container(
                    name=f"pandas.Series[{kind}]",
                    build=build_s,
                    expr=functools.partial(_series_expr, kind),
                )
            )
            out.append(
                Container(
                    name=f"pandas.DataFrame[{kind}]",
                    build=build_f,
                    expr=functools.partial(_frame_expr, kind, names),
                )
            )
        else:

            def build_m(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                cols = [series(_col(r, j), kind) for j in range(columns)]
                if any(c is None for c in cols):
                    return None
                return pd.DataFrame(dict(zip(names, cols, strict=True))), col_arg

            out.append(
                Container(
                    name=f"pandas.DataFrame[{kind}]",
                    build=build_m,
                    expr=functools.partial(_frame_expr, kind, names),
                )
            )
    return out


def _holds_exactly(given: list[Any], held: list[Any]) -> bool:
    """Whether a container kept every record as the same exact value (or kind)."""
    from snapcore.data._values import category_key

    if len(given) != len(held):
        return False
    for a, b in zip(given, held, strict=True):
        if a is None or b is None:
            if (a is None) != (b is None):
                return False
            continue
        try:
            if category_key(a) != category_key(b):
                return False
        except Exception:  # a record the key does not read (NaN, bytes, ...): compare as is
            if not (a is b or (type(a) is type(b) and repr(a) == repr(b))):
                return False
    return True


def _polars_containers(columns: int, names: list[str], col_arg: Any) -> list[Container]:
    try:
        pl = importlib.import_module("polars")
    except ImportError:
        return []

    def columns_of(r: list[Any]) -> dict[str, list[Any]]:
        if columns >= 2:
            return {nm: _col(r, j) for j, nm in enumerate(names)}
        return {names[0]: list(r)}

    def frame(r: list[Any]) -> Any:
        data = columns_of(r)
        try:
            f = pl.DataFrame(data, strict=True)
        except Exception:  # polars refuses mixed types: not this container
            return None
        # polars may still convert (0.1 next to a float32 becomes float32): a container
        # that does not hold the records exactly is not a way of giving them.
        for nm, recs in data.items():
            if not _holds_exactly(recs, f[nm].to_list()):
                return None
        return f

    def build_s(r: list[Any]) -> tuple[Any, Any] | None:
        f = frame(r)
        return None if f is None else (f[names[0]], None)

    def build_f(r: list[Any]) -> tuple[Any, Any] | None:
        f = frame(r)
        return None if f is None else (f, col_arg)

    out = [
        Container(
            name="polars.DataFrame",
            build=build_f,
            expr=lambda r: f"pl.DataFrame({columns_of(r)!r})",
        )
    ]
    if columns <= 1:
        out.append(
            Container(name="polars.Series", build=build_s, expr=lambda r: f"pl.Series({_rl(r)})")
        )
    return out


# -- running a statistic -----------------------------------------------------------------


def _stat_expr(stat: Statistic) -> str:
    from snapcore.plugins._manager import get_registries

    reg = get_registries().statistics
    if stat.name in reg.names() and type(reg.get(stat.name)) is type(stat):
        return repr(stat.name)
    cls = type(stat)
    return f"__import__({cls.__module__!r}, fromlist=['_']).{cls.__qualname__}()"


class _Recorder(Statistic):
    """Wraps a statistic and keeps the Prepared that the release used; with ``stop``
    it then ends the release (raises :class:`_Prepared`) before anything is drawn."""

    name = "recorder"

    def __init__(self, inner: Statistic, *, stop: bool = False) -> None:
        for attr in _STATISTIC_ATTRIBUTES:
            setattr(self, attr, getattr(inner, attr))
        self.inner = inner
        self.stop = stop
        self.prepared: Prepared | None = None

    def prepare(self, data: Any, **kwargs: Any) -> Prepared:
        self.prepared = self.inner.prepare(data, **kwargs)
        if self.stop:
            raise _Prepared
        return self.prepared


#: The statistic's declarations a release reads (the public class attributes).
_STATISTIC_ATTRIBUTES = (
    "name",
    *(
        k
        for k in dir(Statistic)
        if not k.startswith("_")
        and not callable(getattr(Statistic, k, None))
        and not isinstance(getattr(Statistic, k, None), property)  # derived, e.g. mergeable
    ),
)


class _Prepared(Exception):
    """Raised by a stopping recorder once the statistic has prepared its values."""


def prepare(
    statistic: Any,
    data: Any,
    *,
    data_bounds: Any = None,
    n: int | None = None,
    relation: Any = None,
    column: Any = None,
    **options: Any,
) -> Prepared:
    """What ``statistic`` hands the mechanism for ``data``: f(D) exactly, Δ, the range.

    This is :func:`snapcore.release` itself (the same validation of the bounds, n, the
    relation, the options and the data), stopped once the statistic has prepared its
    values: nothing is drawn.

    Raises
    ------
    ParameterError
        Whatever the release raises before drawing.
    """
    from snapcore.releases._api import release

    rec = _Recorder(resolve_statistic(statistic), stop=True)
    try:
        release(
            rec,
            data,
            epsilon=1,
            data_bounds=data_bounds,
            n=n,
            relation=relation,
            column=column,
            source=ReplaySource(()),
            **options,
        )
    except _Prepared:
        assert rec.prepared is not None
        return rec.prepared
    raise AssertionError("the release did not call the statistic's prepare")  # pragma: no cover


@functools.lru_cache(maxsize=4)
def frozen_draws(count: int = 512, seed: int = 19) -> tuple[tuple[int, Fraction], ...]:
    """Draws ``(sign, U*)`` with 12-bit ``U*`` (valid at every precision) for a
    :class:`~snapcore.randomness._sources.ReplaySource`."""
    rng = random.Random(seed)
    return tuple(
        (rng.choice((1, -1)), Fraction(2 * rng.randrange(1 << 11) + 1, 1 << 12))
        for _ in range(count)
    )


@attrs.frozen(kw_only=True)
class Outcome:
    """One dataset through one container: f(D) and the release, or the refusal.

    Attributes
    ----------
    prepared : Prepared or None
        What the statistic handed the mechanism (None if refused).
    release : Release or None
        The release record (None if refused or not released).
    draws : int
        Draws consumed from the frozen replay source.
    refusal : str or None
        The ParameterError message, if the data or parameters were refused.
    repro : str
        A Python expression that recomputes ``prepared``.
    """

    prepared: Prepared | None
    release: Any
    draws: int
    refusal: str | None
    repro: str


_IMPORTS = (
    "import numpy as np, pandas as pd; from fractions import Fraction; "
    "from decimal import Decimal; from snapcore.testing.statistic_checks import prepare; "
)


def evaluate(
    stat: Statistic,
    case: Case,
    records: list[Any],
    container: Container,
    *,
    release: bool = True,
    epsilon: Fraction = Fraction(1),
) -> Outcome | None:
    """Run ``stat`` on ``records`` held in ``container`` under ``case``.

    With ``release`` the run is a full :func:`snapcore.release` from a replay source of
    frozen draws; otherwise only the statistic's ``prepare``.  Returns None when the
    container cannot hold the records exactly.

    Raises
    ------
    StatisticConformanceError
        If anything but a ParameterError escapes, or a refusal came after a draw.
    """
    from snapcore.releases._api import release as release_statistic

    built = container.build(records)
    if built is None:
        return None
    data, column = built
    st = case.setting
    kw = ", ".join(
        [f"data_bounds={st.data_bounds!r}", f"n={case.n!r}", f"relation={case.relation.value!r}"]
        + ([f"column={column!r}"] if column is not None else [])
        + [f"{k}={v!r}" for k, v in st.options.items()]
    )
    repro = f"prepare({_stat_expr(stat)}, {container.expr(records)}, {kw})"
    rec = _Recorder(stat)
    src = ReplaySource(frozen_draws())
    total = src.remaining
    try:
        if release:
            rel = release_statistic(
                rec,
                data,
                epsilon=epsilon,
                data_bounds=st.data_bounds,
                n=case.n,
                relation=case.relation,
                column=column,
                source=src,
                **st.options,
            )
        else:
            rel = None
            rec.prepared = prepare(
                stat,
                data,
                data_bounds=st.data_bounds,
                n=case.n,
                relation=case.relation,
                column=column,
                **st.options,
            )
    except ParameterError as exc:
        used = total - src.remaining
        if used:
            raise StatisticConformanceError(
                f"{stat.name}: refused with ParameterError after {used} draw(s); bad input "
                f"must be refused before any noise\nreproduce: {_imports(repro)}{repro}"
            ) from None
        return Outcome(prepared=None, release=None, draws=0, refusal=str(exc), repro=repro)
    except Exception as exc:
        raise StatisticConformanceError(
            f"{stat.name} in {container.name}: raised {type(exc).__name__} ({exc}); bad input "
            f"must raise ParameterError\nreproduce: {_imports(repro)}{repro}"
        ) from exc
    return Outcome(
        prepared=rec.prepared, release=rel, draws=total - src.remaining, refusal=None, repro=repro
    )


# -- the checks --------------------------------------------------------------------------

#: Release fields that may differ between D and D′.
_RELEASE_FREE = {"value"}
#: Prepared fields that may differ between D and D′.
_PREPARED_FREE = {"values"}


def _imports(repro: str) -> str:
    return _IMPORTS + ("import polars as pl; " if "pl." in repro else "")


def _fail(msg: str, *repros: str) -> StatisticConformanceError:
    body = "[" + ", ".join(f"{r}.values" for r in repros) + "]"
    line = _imports(body) + body
    return StatisticConformanceError(f"{msg}\nreproduce: {line}")


def check_dataset(stat: Statistic, out: Outcome) -> None:
    """f(D) lies in the declared value range; the released values are the mechanism's
    outputs on f(D) for the frozen draws; the ε spent and its split are as declared.

    Raises
    ------
    StatisticConformanceError
    """
    prep = out.prepared
    if prep is None:
        return
    lo, hi = prep.value_range
    for label, v in zip(prep.labels, prep.values, strict=True):
        q = Fraction(v)
        if not lo <= q <= hi:
            raise _fail(
                f"{stat.name}: f(D)[{label}] = {q} lies outside the declared value range "
                f"[{lo}, {hi}] (B′ = {prep.b_prime})",
                out.repro,
            )
    rel = out.release
    if rel is None or prep.sensitivity == 0:
        return
    from snapcore.mechanism._mechanism import SnappingMechanism

    if rel.epsilon_per_value != rel.epsilon_spent * prep.epsilon_share:
        raise _fail(
            f"{stat.name}: each value spent {rel.epsilon_per_value}, not ε · epsilon_share",
            out.repro,
        )
    mech = SnappingMechanism(
        epsilon=rel.epsilon_per_value,
        sensitivity=prep.sensitivity,
        clamp_bounds=rel.clamp_bounds,
        precision=rel.precision,
        backend=rel.backend,
        source=ReplaySource(frozen_draws()),
    )
    want = tuple(float(mech.release(cast(Any, Fraction(v)))) for v in prep.values)
    if want != rel.values or out.draws != len(prep.values):
        raise _fail(
            f"{stat.name}: the release is not the mechanism applied to f(D): released "
            f"{rel.values} with {out.draws} draws, the mechanism gives {want} with "
            f"{len(prep.values)}",
            out.repro,
        )


def _same_fields(
    stat: Statistic,
    cls: type,
    kind: str,
    x: Any,
    y: Any,
    free: set[str],
    a: Outcome,
    b: Outcome,
) -> None:
    """Every field of ``cls`` but those in ``free`` is equal in ``x`` (D) and ``y`` (D′)."""
    for f in attrs.fields(cls):
        if f.name in free:
            continue
        vx, vy = getattr(x, f.name), getattr(y, f.name)
        if vx != vy:
            raise _fail(
                f"{stat.name}: {kind}.{f.name} depends on the data: {vx!r} for D, {vy!r} "
                "for its neighbour D′",
                a.repro,
                b.repro,
            )


def check_pair(stat: Statistic, a: Outcome | None, b: Outcome | None) -> bool:
    """Check two neighbouring outcomes; returns whether both were released (and so
    compared).

    - every coordinate of f moves by at most Δ;
    - the coordinates that moved, each released with ``ε · epsilon_share``, spend at
      most ε together;
    - every Prepared field but ``values`` and every Release field but ``value`` are
      identical (nothing fixed before noise depends on the data);
    - both releases consumed the same number of draws.

    Raises
    ------
    StatisticConformanceError
    """
    if a is None or b is None or a.prepared is None or b.prepared is None:
        return False
    pa, pb = a.prepared, b.prepared
    _same_fields(stat, Prepared, "Prepared", pa, pb, _PREPARED_FREE, a, b)
    if len(pa.values) != len(pb.values):  # pragma: no cover - labels were equal
        raise _fail(f"{stat.name}: the number of values depends on the data", a.repro, b.repro)
    delta = pa.sensitivity
    moved = 0
    for label, x, y in zip(pa.labels, pa.values, pb.values, strict=True):
        d = abs(Fraction(x) - Fraction(y))
        if d > delta:
            raise _fail(
                f"{stat.name}: |f(D) − f(D′)|[{label}] = {d} > Δ = {delta} "
                f"({f'{float(d / delta):.9g}' if delta else 'inf'} Δ) under {pa.relation.value}",
                a.repro,
                b.repro,
            )
        moved += d != 0
    if moved * pa.epsilon_share > 1:
        raise _fail(
            f"{stat.name}: one record changed {moved} coordinates, each released with "
            f"ε · {pa.epsilon_share}: {moved * pa.epsilon_share} ε in all, more than ε",
            a.repro,
            b.repro,
        )
    ra, rb = a.release, b.release
    if ra is not None and rb is not None:
        _same_fields(stat, type(ra), "Release", ra, rb, _RELEASE_FREE, a, b)
        if a.draws != b.draws:
            raise _fail(
                f"{stat.name}: the releases of D and D′ took different paths: {a.draws} and "
                f"{b.draws} draws from the same replay source",
                a.repro,
                b.repro,
            )
    return True


# -- without pytest ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class StatisticReport:
    """The result of :func:`run_statistic_conformance`."""

    statistic: str
    pairs: int
    datasets: int
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return not self.failures

    def summary(self) -> str:
        """``"pass (N pairs, M datasets)"`` or ``"FAIL (first failure)"``."""
        if self.passed:
            return f"pass ({self.pairs} pairs, {self.datasets} datasets)"
        return f"FAIL ({self.failures[0].splitlines()[0]})"


def settings_for(stat: Statistic, settings: Sequence[Setting] | None = None) -> list[Setting]:
    """The settings ``stat`` is checked with: ``settings`` if given, else the built-in
    table for snapcore's own statistics, else :func:`default_settings`."""
    if settings is not None:
        return list(settings)
    if stat.name in BUILTIN_SETTINGS:
        from snapcore.plugins._manager import get_registries

        reg = get_registries().statistics
        if stat.name in reg.names() and type(reg.get(stat.name)) is type(stat):
            return BUILTIN_SETTINGS[stat.name]
    return default_settings(stat)


def run_statistic_conformance(
    statistic: Any,
    settings: Sequence[Setting] | None = None,
    *,
    random_pairs: int = 60,
    seed: int = 0,
    max_failures: int = 5,
) -> StatisticReport:
    """A quick run of the statistic checks without pytest.

    Every setting and relation: the extremal datasets (value range, in a list), the
    neighbours of the smallest ones (prepare only, in a list), and ``random_pairs``
    random neighbouring pairs released through random containers.

    Parameters
    ----------
    statistic : Statistic, Statistic subclass or registered name
    settings : sequence of Setting, optional
        Parameter sets (default: the built-in table, or :func:`default_settings`).
    random_pairs : int
        Random pairs released end to end.
    seed : int
        Seed of the random pairs.
    max_failures : int
        Stop after this many failures.

    Returns
    -------
    StatisticReport
    """
    stat = resolve_statistic(statistic)
    sets = settings_for(stat, settings)
    failures: list[str] = []
    pairs = datasets = 0

    def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (StatisticConformanceError, SnapcoreError) as exc:
            failures.append(str(exc))
            return None

    ch = RandomChooser(seed)
    for setting in sets:
        conts = containers(stat.columns, setting.records)
        lst = conts[0]
        for rel in stat.relations:
            for d in extremal_datasets(stat, setting):
                for case in range_cases(setting, rel, len(d)):
                    if len(failures) >= max_failures:
                        break
                    out = attempt(evaluate, stat, case, d, lst, release=False)
                    if out is not None:
                        datasets += 1
                        attempt(check_dataset, stat, out)
            n_cap = None if rel is Neighbouring.REPLACE else 2
            case = Case(setting=setting, relation=rel, n=n_cap)
            for d, d2 in extremal_pairs(stat, setting, rel):
                if len(failures) >= max_failures:
                    break
                a = attempt(evaluate, stat, case, d, lst, release=False)
                b = attempt(evaluate, stat, case, d2, lst, release=False)
                pairs += bool(attempt(check_pair, stat, a, b))
            for _ in range(max(1, random_pairs // (len(sets) * len(stat.relations)))):
                if len(failures) >= max_failures:
                    break
                rcase, d, d2 = draw_pair(ch, stat, setting, rel)
                fit = [c for c in conts if c.build(d) is not None and c.build(d2) is not None]
                cont = ch.choice(fit)
                a = attempt(evaluate, stat, rcase, d, cont)
                b = attempt(evaluate, stat, rcase, d2, cont)
                for o in (a, b):
                    if o is not None:
                        attempt(check_dataset, stat, o)
                pairs += bool(attempt(check_pair, stat, a, b))
    return StatisticReport(
        statistic=stat.name, pairs=pairs, datasets=datasets, failures=tuple(failures)
    )
