"""The datasets and neighbours a statistic is checked on.

Record values (:func:`critical_points`: the bounds, the numbers in the options and
their neighbouring doubles, values far outside, integers no double holds; category-like
values; odd values that are not real numbers), hand-derived extremal datasets and their
neighbours (:func:`extremal_datasets`, :func:`extremal_pairs`), and random neighbouring
pairs (:func:`draw_pair`).  The random generator is written against a small
:class:`Chooser` interface, so the same code draws from :class:`random.Random` here
(:class:`RandomChooser`) and from hypothesis in the pytest suite.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from snapcore.data._neighbouring import Neighbouring
from snapcore.plugins._statistic import Statistic
from snapcore.testing.statistic_settings import Case, Setting

__all__ = [
    "CATEGORY_VALUES",
    "FAR",
    "HUGE",
    "NUMERIC_TYPES",
    "ODD_VALUES",
    "Chooser",
    "RandomChooser",
    "critical_points",
    "draw_pair",
    "exact_value",
    "exactly_as",
    "extremal_datasets",
    "extremal_pairs",
    "float_trap_pairs",
    "range_cases",
]

#: A value far outside any data bounds the checks use.
FAR = 1e300
#: An exact integer no double holds.
HUGE = 10**400


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


def exactly_as(x: Any, t: Any) -> Any:
    """``x`` as the type (or NumPy dtype) ``t`` if that represents it exactly, else None."""
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
    float(np.float32(0.1)),
    2.5,
    True,
)

#: Records that are not real numbers: each must be refused (or, as a category, matched
#: on its own), never change how the other records are read.
ODD_VALUES: tuple[Any, ...] = ("0.1", "x", None, math.nan, math.inf, True, b"1", Decimal("0.1"))


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
    typed = [t for t in NUMERIC_TYPES if exactly_as(v, t) is not None]
    return exactly_as(v, ch.choice(typed)) if typed else v


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
        exactly_as(v, t)
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
                    typed = exactly_as(v, t)
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


# -- constructed float traps (Casacuberta et al., CCS 2022) --------------------------------


def _ulp(x: float) -> float:
    return math.ulp(x) if x != 0.0 else math.ulp(1.0)


def _trap_values(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """The end of larger magnitude ``e``, the other end ``o``, and small or
    full-mantissa values inside ``[lo, hi]`` that a float sum next to ``e`` rounds:
    just above half an ulp of ``e`` (absorbed, rounded up), and the points
    ``lo + (hi − lo)·k/7`` (53 significant bits)."""
    e, o = (hi, lo) if abs(hi) >= abs(lo) else (lo, hi)
    half = _ulp(e) / 2 * (1 + 2.0**-52)
    smalls = [v for v in (half, -half, 3 * half, -3 * half) if lo <= v <= hi]
    inner = [lo + (hi - lo) * k / 7 for k in (1, 2, 3, 5, 6)]
    inner = [v for v in inner if lo <= v <= hi and v not in (lo, hi)]
    near = [math.nextafter(e, o)]
    return e, o, list(dict.fromkeys(smalls + inner + near))


def float_trap_pairs(
    stat: Statistic, setting: Setting, relation: Neighbouring
) -> Iterator[tuple[str, str, list[Any], list[Any]]]:
    """Datasets built to expose a statistic computed in floating point, in the manner
    of Casacuberta et al. (CCS 2022): ``(name, kind, D, D′)``.

    ``kind`` is ``"reordered"`` (D′ holds the records of D in another order: an exact
    statistic of the multiset gives the identical value; a float sum often does not)
    or ``"neighbours"`` (D′ is a neighbour under ``relation``: ``|f(D) − f(D′)| <= Δ``
    exactly, which a rounded sum breaks when it rounds up for D and down for D′).

    - *absorption*: the end ``e`` of larger magnitude followed by small records just
      above half an ulp of ``e`` (each rounds the running sum up by a whole ulp), and
      its neighbour with ``e`` replaced by the other end (or removed);
    - *cancellation*: ``e``, the other end and a small record, summed in the orders
      that cancel first or last;
    - *orderings*: records with 53 significant bits in every order, and sixteen small
      records before and after ``e`` (sequential against pairwise summation).

    Categorical settings yield nothing.
    """
    if setting.records == "categorical":
        return
    cols = max(stat.columns, 1)
    per_col = [_trap_values(*_vertices(setting, j)) for j in range(cols)]

    def rec(vals: Sequence[float]) -> Any:
        return vals[0] if cols == 1 else tuple(vals)

    def column_sets(pick: Callable[[tuple[float, float, list[float]]], list[float]]) -> list[Any]:
        seqs = [pick(c) for c in per_col]
        size = min(map(len, seqs))
        return [rec([s[i] for s in seqs]) for i in range(size)]

    def small(k: int) -> Callable[[tuple[float, float, list[float]]], list[float]]:
        return lambda c: [c[2][min(k, len(c[2]) - 1)] if c[2] else c[1]]

    for k, _ in enumerate(per_col[0][2][:4]):
        e = column_sets(lambda c: [c[0]])[0]
        o = column_sets(lambda c: [c[1]])[0]
        s = column_sets(small(k))[0]
        for m in (1, 3):
            d = [e, *[s] * m]
            if relation is Neighbouring.REPLACE:
                yield (
                    f"absorption: e then {m} small record(s), e replaced",
                    "neighbours",
                    d,
                    [o, *[s] * m],
                )
            else:
                yield (
                    f"absorption: e then {m} small record(s), e removed",
                    "neighbours",
                    d,
                    [*[s] * m],
                )
            yield (
                f"absorption: e first or last, {m} small record(s)",
                "reordered",
                d,
                [*[s] * m, e],
            )
        yield ("cancellation: e, other end, small", "reordered", [e, o, s], [e, s, o])
        yield ("cancellation: small first", "reordered", [e, o, s], [s, o, e])
        yield (
            "orderings: sixteen small records around e",
            "reordered",
            [e, *[s] * 16],
            [*[s] * 8, e, *[s] * 8],
        )
    inner = column_sets(lambda c: c[2][-5:] if len(c[2]) >= 3 else [])
    if len(inner) >= 3:
        trio = inner[:3]
        for perm in itertools.islice(itertools.permutations(trio), 1, None):
            yield (
                "orderings: three records of 53 significant bits",
                "reordered",
                trio,
                list(perm),
            )
        e = column_sets(lambda c: [c[0]])[0]
        yield (
            "orderings: full-mantissa records and e",
            "reordered",
            [e, *inner],
            [*inner[::-1], e],
        )
