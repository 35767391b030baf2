"""The one rule for values that enter (docs/semantics.md, "Values that enter").

Independent references: exact ``Fraction``s built from each type by hand (not by
``snapcore.data._values``), the scalar release path on the same draws, and exact audits.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

import gmpy2
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

import snapcore
from snapcore import SnappingMechanism, audit
from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import category_key, exact_ratio, key_positions
from snapcore.errors import MissingValueError, ParameterError, SourceExhaustedError, show
from snapcore.randomness._sources import RandomSource, ReplaySource, SeededSource
from snapcore.testing.sources import DrawTaken, NoDraws

LD = np.longdouble


def ref_fraction(v):
    """The exact value of an accepted number, derived by hand for each type."""
    if isinstance(v, np.floating) and v.dtype.itemsize > 8:
        m, e = np.frexp(v)  # v = m·2**e, 0.5 <= |m| < 1, m has 64 bits
        return Fraction(int(np.ldexp(m, 64)), 1) * Fraction(2) ** (int(e) - 64)
    if isinstance(v, np.floating):
        return Fraction(float(v))  # widening to a double is exact
    if isinstance(v, Decimal):
        return Fraction(v)
    if type(v).__name__ == "mpq":
        return Fraction(int(v.numerator), int(v.denominator))
    if type(v).__name__ == "mpfr":
        return Fraction(*(int(t) for t in v.as_integer_ratio()))
    if isinstance(v, float):
        return Fraction(v)
    if isinstance(v, Fraction):
        return v
    return Fraction(int(v))


# -- each accepted type is read exactly -----------------------------------------------

EXACT = [
    3,
    -(2**80) + 1,
    2**53 + 1,
    0.1,
    -5e-324,
    Fraction(1, 3),
    Decimal("0.1"),
    Decimal("-42.17E-3"),
    np.int8(-7),
    np.int64(2**62 + 1),
    np.uint64(2**64 - 1),
    np.float16(0.1),
    np.float32(0.1),
    np.float64(0.1),
    LD(1) + LD(2) ** -60,
    LD(1) / LD(3),
    gmpy2.mpz(2**70 + 3),
    gmpy2.mpq(1, 7),
    gmpy2.mpfr("0.1", 200),
]


@pytest.mark.parametrize("v", EXACT, ids=lambda v: f"{type(v).__name__}({v})")
def test_accepted_types_are_read_exactly(v):
    n, d = exact_ratio(v)
    assert Fraction(n, d) == ref_fraction(v) and d > 0
    assert snapcore.calibration._params.check_real("x", v) == ref_fraction(v)


REFUSED = [
    (True, "bool"),
    (np.bool_(False), "numpy.bool"),
    ("1", "str"),
    ("0.1", "str"),
    (b"1", "bytes"),
    (bytearray(b"1"), "bytearray"),
    (memoryview(b"1"), "memoryview"),
    ({"v": 1}, "dict"),
    (None, "None"),
    (pd.NA, "pandas.NAType"),
    (math.nan, "NaN"),
    (math.inf, "infinite"),
    (np.float32("-inf"), "infinite"),
    (Decimal("nan"), "NaN"),
    (Decimal("inf"), "infinite"),
    (gmpy2.mpfr("nan"), "NaN"),
    (1j, "complex"),
    (np.complex64(1), "numpy.complex64"),
    (np.str_("1"), "numpy.str_"),
    (np.datetime64("2020-01-01"), "numpy.datetime64"),
]


@pytest.mark.parametrize(("v", "kind"), REFUSED, ids=repr)
def test_refused_types_name_the_type(v, kind):
    with pytest.raises(ParameterError) as info:
        exact_ratio(v)
    assert kind in str(info.value)
    with pytest.raises(ParameterError, match=r"^epsilon must be a finite real number") as info:
        SnappingMechanism(epsilon=v, clamp_bound=1.0)
    assert info.value.__context__ is None


# -- no silent rounding; arrays release what scalars do ---------------------------------


def _scalar_outputs(mech_kw, values, seed):
    m = SnappingMechanism(**mech_kw, source=SeededSource(seed))
    return [m.release(v) for v in values]


def test_list_beyond_two_pow_53_is_released_exactly():
    kw = {"epsilon": 1, "clamp_bounds": (2**53 - 16, 2**53 + 16)}
    for container in (
        [0.5, 2**53 + 1],
        (0.5, 2**53 + 1),
        np.array([0, 2**53 + 1], dtype=np.int64),
        np.array([0, 2**53 + 1], dtype=np.uint64),
        np.array([0.5, 2**53 + 1], dtype=object),
    ):
        for seed in range(20):
            m = SnappingMechanism(**kw, source=SeededSource(seed))
            out = m.release(container)
            ref = _scalar_outputs(kw, list(container), seed)
            assert list(np.asarray(out).tolist()) == ref
    m = SnappingMechanism(**kw)
    r = audit(m, np.int64(2**53 + 1), np.uint64(2**53 + 2))
    assert r.private and r.distance == 1


def _x87(mant: int, biased: int) -> np.longdouble:
    """A positive x87 long double from its bits (64-bit significand, biased exponent),
    so that no long-double arithmetic (subject to the FPU's precision control, which a
    library loaded earlier in the process may have set to 53 bits) builds it.  Where
    long doubles are not x87 extended, the same value by arithmetic."""
    if np.finfo(LD).nmant != 63:
        return LD(mant) * LD(2) ** (biased - 16383 - 63)
    bits = (biased << 64) | mant
    return np.frombuffer(bits.to_bytes(10, "little") + bytes(LD().itemsize - 10), LD)[0]


def test_long_double_neighbours_audit_within_epsilon():
    m = SnappingMechanism(epsilon=1, clamp_bounds=(1, 1 + 2**-52), sensitivity=2**-60)
    one = 1 << 63
    a = _x87(one | (1 << 3), 16383)  # 1 + 2**-60
    b = _x87(one | (1 << 4), 16383)  # 1 + 2**-59
    assert exact_ratio(a) == (2**60 + 1, 2**60) and exact_ratio(b) == (2**59 + 1, 2**59)
    r = audit(m, a, b)
    assert r.distance == 1 and r.private, r.verdict
    kw = {"epsilon": 1, "clamp_bounds": (1, 1 + 2**-52), "sensitivity": 2**-60}
    vals = [a, b, _x87(one, 16383)]
    for seed in range(10):
        out = SnappingMechanism(**kw, source=SeededSource(seed)).release(np.array(vals))
        assert out.tolist() == _scalar_outputs(kw, vals, seed)
    # the exact centred values differ by exactly one sensitivity unit
    pipe = m.pipeline
    x0, x1 = (Fraction(*pipe.centre_ratio(*exact_ratio(v))) for v in vals[:2])
    assert x1 - x0 == 1


NEIGHBOUR_TYPES = [
    int,
    float,
    Fraction,
    Decimal,
    np.int64,
    np.int16,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    LD,
    gmpy2.mpz,
    gmpy2.mpq,
    lambda q: gmpy2.mpfr(q, 300),
]


@pytest.mark.parametrize("make", NEIGHBOUR_TYPES, ids=lambda t: getattr(t, "__name__", "mpfr"))
def test_neighbours_in_any_type_audit_within_epsilon(make):
    """Neighbours one Δ apart, given as each accepted type, stay <= ε (exact audit)."""
    m = SnappingMechanism(epsilon=1, clamp_bound=8.0)
    for v in (0, 3, 7) if make is np.uint64 else (0, 3, -8, 7):
        a = make(v)
        b = make(v + 1)
        assert ref_fraction(b) - ref_fraction(a) == 1
        r = audit(m, a, b)
        assert r.private and r.distance == 1, r.verdict


# A strategy for one value of an accepted type (and its exact value).
_NUMS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.fractions(max_denominator=10**6).filter(lambda q: abs(q) < 10**6),
    st.decimals(-(10**6), 10**6, allow_nan=False, allow_infinity=False, places=5),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.floats(-1e4, 1e4, width=16, allow_nan=False).map(np.float16),
    st.floats(-1e6, 1e6, width=32, allow_nan=False).map(np.float32),
    st.tuples(st.integers(-(2**20), 2**20), st.integers(0, 2**40)).map(
        lambda t: LD(t[0]) + LD(t[1]) * LD(2) ** -60
    ),
    st.integers(-(2**80), 2**80).map(gmpy2.mpz),
    st.fractions(max_denominator=1000).map(lambda q: gmpy2.mpq(q.numerator, q.denominator)),
)

_DTYPES = {
    int: None,
    np.int64: np.int64,
    np.uint64: np.uint64,
    np.float16: np.float16,
    np.float32: np.float32,
    float: np.float64,
    LD: LD,
}


@given(
    values=st.lists(_NUMS, min_size=0, max_size=12),
    container=st.sampled_from(["list", "tuple", "object", "typed", "nested"]),
    seed=st.integers(0, 2**32),
)
def test_container_release_equals_scalar_release(values, container, seed):
    """Every container gives, element for element, the scalar release on the same draws."""
    kw = {"epsilon": 1, "clamp_bounds": (-(2.0**20), 2.0**20)}
    if container == "list":
        given_ = list(values)
    elif container == "tuple":
        given_ = tuple(values)
    elif container == "object":
        given_ = np.empty(len(values), dtype=object)
        given_[:] = values
    elif container == "nested":
        given_ = [[v] for v in values]
    else:
        types = {type(v) for v in values}
        dt = _DTYPES.get(types.pop()) if len(types) == 1 else None
        if dt is None:
            return
        given_ = np.array(values, dtype=dt)
    out = SnappingMechanism(**kw, source=SeededSource(seed)).release(given_)
    ref = _scalar_outputs(kw, values, seed)
    flat = np.asarray(out, dtype=np.float64).reshape(-1).tolist()
    assert flat == ref
    # and each scalar output is the transform of its exact value on its draw
    draws = SeededSource(seed).draws(len(values), SnappingMechanism(**kw).precision)
    m = SnappingMechanism(**kw)
    assert ref == [
        m.transform(ref_fraction(v), d.u, d.sign) for v, d in zip(values, draws, strict=True)
    ]


def test_fast_path_list_of_mixed_doubles_equals_scalar():
    """Large enough for the vectorised path (mpfr backend): still the scalar outputs."""
    from snapcore.pipeline._engine import AUTO_MIN_SIZE

    rng = np.random.default_rng(5)
    base = rng.normal(0, 100, AUTO_MIN_SIZE + 10)
    vals = []
    for i, x in enumerate(base.tolist()):
        vals.append([x, np.float32(x), int(x), np.float16(x % 50), Fraction(x)][i % 5])
    kw = {"epsilon": 1, "clamp_bounds": (-512.0, 512.0)}
    out = SnappingMechanism(**kw, source=SeededSource(3)).release(vals)
    assert out == _scalar_outputs(kw, vals, 3)
    vals[7] = Fraction(1, 3)  # one non-double: the exact path, same outputs
    out = SnappingMechanism(**kw, source=SeededSource(3)).release(vals)
    assert out == _scalar_outputs(kw, vals, 3)


# -- categories matched by exact value -----------------------------------------------------

DATUMS = [
    1,
    1.0,
    np.float32(1),
    Fraction(1),
    Decimal("1.00"),
    np.int8(1),
    gmpy2.mpz(1),
    True,
    np.True_,
    False,
    "1",
    np.str_("1"),
    "True",
    0.1,
    float(np.float32(0.1)),
    np.float32(0.1),
    Decimal("0.1"),
    Fraction(1, 10),
    gmpy2.mpq(1, 10),
    "a",
    2,
]


def ref_key(v):
    if isinstance(v, bool | np.bool_):
        return ("b", bool(v))
    if isinstance(v, str):
        return ("s", str(v))
    return ("n", ref_fraction(v))


def _container(data, kind):
    if kind == "list":
        return list(data)
    if kind == "object":
        a = np.empty(len(data), dtype=object)
        a[:] = data
        return a
    if kind == "series":
        return pd.Series(data, dtype=object)
    return {"x": list(data)}


@given(
    data=st.lists(st.sampled_from(DATUMS), max_size=25),
    cats=st.lists(st.sampled_from(DATUMS), min_size=1, max_size=6),
    kind=st.sampled_from(["list", "object", "series", "mapping"]),
)
def test_every_record_counted_at_most_once_where_the_normalisation_says(data, cats, kind):
    from snapcore.statistics.counting import Histogram

    keys = [ref_key(c) for c in cats]
    ds = as_dataset(_container(data, kind), column="x" if kind == "mapping" else None)
    if len(set(keys)) < len(keys):
        with pytest.raises(ParameterError, match="distinct under exact-value matching"):
            Histogram().prepare(
                ds, data_bounds=None, n=None, relation=Neighbouring.REPLACE, categories=cats
            )
        return
    prep = Histogram().prepare(
        ds, data_bounds=None, n=None, relation=Neighbouring.REPLACE, categories=cats
    )
    expected = [sum(1 for d in data if ref_key(d) == k) for k in keys]
    assert list(prep.values) == expected
    assert sum(prep.values) <= len(data)


def test_issue11_float32_record_lands_in_one_bin():
    from snapcore.statistics.counting import Histogram

    cats = [0.1, float(np.float32(0.1))]
    for kind in ("object", "series", "mapping", "list"):
        ds = as_dataset(
            _container([np.float32(0.1)], kind), column="x" if kind == "mapping" else None
        )
        prep = Histogram().prepare(
            ds, data_bounds=None, n=None, relation=Neighbouring.REPLACE, categories=cats
        )
        assert list(prep.values) == [0, 1]
    with pytest.raises(ParameterError, match="distinct"):
        snapcore.release("histogram", [1], epsilon=1, categories=[1, np.float32(1.0)])
    assert category_key(1) == category_key(1.0) == category_key(np.float32(1))
    assert category_key("1") != category_key(1) and category_key(True) != category_key(1)


def _prep(stat, data, rel, **kw):
    return stat.prepare(as_dataset(data, columns=stat.columns), relation=Neighbouring(rel), **kw)


def test_issue19_string_record_does_not_change_the_others():
    from snapcore.statistics.counting import Histogram

    h = Histogram()
    for rel, n, d, d2 in (
        ("replace", None, [1] * 50 + [2], [1] * 50 + ["x"]),
        ("add-remove", 10, [2, 1, 1, 3], [2, 1, 1, 3, "x"]),
    ):
        a = _prep(h, d, rel, data_bounds=None, n=n, categories=[1, 2, 3]).values
        b = _prep(h, d2, rel, data_bounds=None, n=n, categories=[1, 2, 3]).values
        assert all(abs(x - y) <= 1 for x, y in zip(a, b, strict=True)), (a, b)
    assert _prep(
        h, [1] * 50 + ["x"], "replace", data_bounds=None, n=None, categories=[1, 2, 3]
    ).values == (
        50,
        0,
        0,
    )


def test_issue19_numeric_column_refuses_strings():
    from snapcore.statistics.moments import Sum

    b = ((0.1, float(np.float32(0.1))),)
    d = [np.float32(0.1)] * 8 + [0.1]
    good = _prep(Sum(), d, "replace", data_bounds=b, n=None).values[0]
    assert good == 8 * Fraction(float(np.float32(0.1))) + Fraction(0.1)
    with pytest.raises(ParameterError, match="got str") as info:
        _prep(Sum(), [np.float32(0.1)] * 8 + ["0.1"], "replace", data_bounds=b, n=None)
    assert "0.1" not in str(info.value)


def test_exact_non_double_records_are_summed_exactly():
    from snapcore.statistics.moments import Covariance, Mean, Sum, Variance

    data = [2**53 + 1, Fraction(1, 3), Decimal("0.1"), LD(1) + LD(2) ** -60, 1.5]
    lo, hi = 0.0, 2.0**54
    exact = [min(max(ref_fraction(v), Fraction(lo)), Fraction(hi)) for v in data]
    s = _prep(Sum(), data, "replace", data_bounds=((lo, hi),), n=None).values[0]
    assert s == sum(exact)
    m = _prep(Mean(), data, "replace", data_bounds=((lo, hi),), n=None).values[0]
    assert m == sum(exact) / 5
    var = _prep(Variance(), data, "replace", data_bounds=((lo, hi),), n=None).values[0]
    mu = sum(exact) / 5
    assert var == sum((x - mu) ** 2 for x in exact) / 4
    two = np.empty((5, 2), dtype=object)
    two[:, 0] = data
    two[:, 1] = [1.0, 2.0, 3.0, 4.0, 5.0]
    cov = _prep(Covariance(), two, "replace", data_bounds=((lo, hi), (0.0, 8.0)), n=None).values[0]
    ys = [Fraction(y) for y in (1, 2, 3, 4, 5)]
    assert cov == sum((x - mu) * (y - 3) for x, y in zip(exact, ys, strict=True)) / 4
    # histogram bins compare the exact value (2**53 + 1 is not 2**53)
    from snapcore.statistics.counting import Histogram

    prep = _prep(
        Histogram(),
        [2**53, 2**53 + 1],
        "replace",
        data_bounds=None,
        n=None,
        bins=[0.0, 2.0**53 + 2, 2.0**60],
    )
    assert prep.values == (2, 0)
    prep = _prep(
        Histogram(),
        [2**53, 2**53 + 1],
        "replace",
        data_bounds=None,
        n=None,
        bins=[0.0, 2.0**53, 2.0**60],
    )
    assert prep.values == (0, 2)
    # ... and clamp (or drop) exact values outside the outer edges by their exact value
    outside = [-(2**53 + 1), 2**53 + 1, 2**61 + 1]
    for how, want in (("clamp", (1, 2)), ("drop", (0, 1))):
        prep = _prep(
            Histogram(),
            outside,
            "replace",
            data_bounds=None,
            n=None,
            bins=[0.0, 2.0**53, 2.0**60],
            out_of_range=how,
        )
        assert prep.values == want
    with pytest.raises(ParameterError, match="not doubles"):
        as_dataset([2**53 + 1]).numeric(0)


# -- missing values -----------------------------------------------------------------------

MISSING_COLUMNS = [
    pd.Series(["a", pd.NA], dtype="string"),
    pd.Series([1, None], dtype="Int64"),
    pd.Series([1.0, None], dtype="Float64"),
    pd.Series([1.0, np.nan]),
    pd.Series(["a", None], dtype=object),
    pd.Series([1, pd.NA], dtype=object),
    pd.Series(pd.to_datetime(["2020-01-01", None])),
    np.array([1.0, np.nan]),
    np.array([1.0, None], dtype=object),
    [1, None],
    ["a", float("nan")],
    [Decimal("1"), Decimal("nan")],
    [np.datetime64("NaT")],
]


@pytest.mark.parametrize("col", MISSING_COLUMNS, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("stat", ["sum", "histogram"])
def test_missing_values_give_one_error(col, stat):
    kw = {"data_bounds": (0, 10)} if stat == "sum" else {"categories": ["a", 1]}
    with pytest.raises(MissingValueError) as info:
        snapcore.release(stat, col, epsilon=1, source=NoDraws(), **kw)
    msg = str(info.value)
    assert msg == (
        "column 'data' contains missing values (None, NaN, pandas NA or NaT); by default a "
        "release refuses them; choose a public policy with missing='drop' (add-remove "
        "relation only: removing a record is a neighbour there) or missing='impute' with "
        "impute=, a public constant (docs/statistics.md)"
    ) or msg.startswith(f"column {getattr(col, 'name', None)!r} contains missing values")
    assert info.value.__context__ is None


# -- errors never echo private data -------------------------------------------------------


SECRETS = [
    Decimal("42.17"),
    42.17,
    Fraction(4217, 100),
    LD("42.17"),
    np.float32(42.17),
    4217,
]
BAD_COMPANIONS = ["x", "42.17", b"42.17", None, math.nan, True, 1j, {"v": 42.17}, pd.NA]


@pytest.mark.parametrize("bad", BAD_COMPANIONS, ids=repr)
def test_errors_never_echo_private_values(bad):
    m = SnappingMechanism(epsilon=1, clamp_bound=100.0, source=NoDraws())
    for secret in SECRETS:
        cases = [
            lambda secret=secret: m.release([41.0, secret, bad]),
            lambda secret=secret: m.release(np.array([secret, bad], dtype=object)),
            lambda secret=secret: m.release((secret, [bad])),
            lambda secret=secret: snapcore.release(
                "sum", [secret, bad], epsilon=1, data_bounds=(0, 100)
            ),
            lambda secret=secret: snapcore.release(
                "mean", {"c": [secret, bad]}, epsilon=1, data_bounds=(0, 100)
            ),
        ]
        if not isinstance(bad, str | bool):  # strings and bools are valid category records
            cases.append(
                lambda secret=secret: snapcore.release(
                    "histogram", pd.Series([secret, bad], dtype=object), epsilon=1, categories=[1]
                )
            )
        if not isinstance(bad, str | bytes | dict):
            cases.append(lambda: m.release(bad))
        for case in cases:
            with pytest.raises(ParameterError) as info:
                case()
            msg = str(info.value)
            for digits in ("42", "4217", "17"):
                assert digits not in msg, msg
            assert not re.search(r"\[\d+\]|record \d|index", msg), msg
            assert info.value.__context__ is None


# -- parameters: only ParameterError, short, before any draw --------------------------------

EXTREMES = [
    0,
    -1,
    5e-324,
    -5e-324,
    1e308,
    10**400,
    -(10**400),
    Fraction(1, 10**400),
    Fraction(10**400 + 1, 10**400),
    math.nan,
    math.inf,
    -math.inf,
    True,
    "1",
    b"1",
    None,
    1j,
    Decimal("1e-400"),
    Decimal("nan"),
    2.0**-1100,
]


def _short(exc):
    assert isinstance(exc, ParameterError), repr(exc)
    assert len(str(exc)) < 600, str(exc)
    assert not re.search(r"\d{40}", str(exc)), str(exc)


@pytest.mark.parametrize("x", EXTREMES, ids=repr)
def test_parameter_extremes_give_only_parameter_errors(x):
    mech_cases = [
        {"epsilon": x, "clamp_bound": 1.0},
        {"epsilon": 1, "sensitivity": x, "clamp_bound": 1.0},
        {"epsilon": 1, "clamp_bound": x},
        {"epsilon": 1, "clamp_bounds": (x, 1.0)},
        {"epsilon": 1, "clamp_bounds": (-1.0, x)},
        {"epsilon": 1, "clamp_bound": 1.0, "precision": x},
    ]
    for kw in mech_cases:
        try:
            SnappingMechanism(**kw, source=NoDraws())
        except Exception as exc:
            _short(exc)
    api_cases = [
        {"epsilon": x, "data_bounds": (0, 1)},
        {"epsilon": 1, "data_bounds": (0, x)},
        {"epsilon": 1, "data_bounds": (0, 1), "gamma": x},
        {"epsilon": 1, "data_bounds": (0, 1), "clamp_bounds": (x, 2.0)},
        {"epsilon": 1, "data_bounds": (0, 1), "n": x},
    ]
    for kw in api_cases:
        try:
            snapcore.release("mean", [0.5, 0.25], source=NoDraws(), **kw)
        except DrawTaken:
            pass  # the parameters were valid: the release got as far as drawing
        except Exception as exc:
            _short(exc)
    try:
        snapcore.release("histogram", [0.5], epsilon=1, bins=[0.0, x], source=NoDraws())
    except DrawTaken:
        pass
    except Exception as exc:
        _short(exc)


def test_short_numbers_in_messages_and_repr():
    assert show(10**400) == "1e+400" and show(1e300) == "1e+300"
    assert show(Fraction(1, 3**2000)) == "≈5.721245194772949e-955"
    m = SnappingMechanism(epsilon=Fraction(1, 2**1100), clamp_bound=2.0**-1000)
    assert "epsilon=2**-1100" in repr(m) and "epsilon=0.0" not in repr(m)
    with pytest.raises(ParameterError) as info:
        SnappingMechanism(epsilon=10**400, clamp_bound=1.0)
    assert "1e+400" in str(info.value) and "0" * 50 not in str(info.value)
    with pytest.raises(ParameterError):
        SnappingMechanism(epsilon=1, sensitivity=5e-324, clamp_bound=1.0)


def test_audit_distance_is_not_rounded_to_one():
    m = SnappingMechanism(epsilon=1, clamp_bound=8.0)
    r = audit(m, 0, Fraction(1) + Fraction(8, 10**17))
    assert not r.neighbouring
    assert "1.0000000000000001" in r.verdict and "more than 1" in r.verdict


# -- all or nothing on the source -----------------------------------------------------------


def test_vector_release_draws_all_or_nothing():
    src = ReplaySource([(1, 0.5)])
    with pytest.raises(SourceExhaustedError):
        snapcore.release("histogram", ["a", "b"], epsilon=1, categories=["a", "b"], source=src)
    assert src.remaining == 1
    budget = snapcore.Budget(2)
    with pytest.raises(SourceExhaustedError):
        snapcore.release("histogram", [1.0], epsilon=1, bins=[0, 1, 2], source=src, budget=budget)
    assert src.remaining == 1 and budget.spent == 0
    m = SnappingMechanism(epsilon=1, clamp_bound=4.0, source=src)
    with pytest.raises(SourceExhaustedError):
        m.release(np.zeros(2))
    assert src.remaining == 1
    assert isinstance(m.release([1.0]), list) and src.remaining == 0
    assert RandomSource.can_draw(SeededSource(1), 10**9, 118)


def test_float64_columns_are_read_in_place_and_checked_even_when_their_sum_overflows():
    """A float64 column is viewed read-only, not copied; its finiteness check (a sum
    first) accepts finite columns whose float sum overflows and refuses NaN and ±inf
    wherever they are, also next to values whose sum overflows."""
    big = np.array([1.7e308, 1.7e308, -1.7e308, 5e-324])
    col = as_dataset({"x": big}, column="x").column(0)
    assert col.doubles is not None and np.shares_memory(col.doubles, big)
    assert not col.doubles.flags.writeable and big.flags.writeable
    assert col.fractions() == [Fraction(v) for v in big.tolist()]
    for bad, error in ((math.nan, MissingValueError), (math.inf, ParameterError)):
        for where in (0, 2, 3):
            x = big.copy()
            x[where] = bad
            with pytest.raises(error):
                as_dataset({"x": x}, column="x").column(0)
            with pytest.raises(error):
                as_dataset({"x": -x}, column="x").column(0)


def test_key_positions_match_by_kind_and_exact_value():
    keys = (True, 1, "1", 0.5, Decimal("0.1"))
    records = np.empty(14, dtype=object)
    records[:] = [1, True, 1.0, np.int64(1), "1", np.str_("1"), Fraction(1, 2), 0.1,
                  Decimal("0.10"), None, math.nan, pd.NA, [1], math.inf]  # fmt: skip
    assert key_positions(records, keys).tolist() == [1, 0, 1, 1, 2, 2, 3, -1, 4] + [-1] * 5
    assert key_positions(np.array([0.5, math.nan, 1.0, 0.5]), keys).tolist() == [3, -1, 1, 3]


# -- masked arrays: a masked element is missing, never the value under the mask -------


def test_a_masked_array_is_read_without_its_masked_values():
    from snapcore.data._values import read_values

    big = 2**62 + 1  # not a double: an exact read keeps it
    data = np.array([big, 12345, 7], dtype=np.int64)
    rv = read_values(np.ma.array(data, mask=[False, False, False]))
    assert rv.as_ratios() == [(big, 1), (12345, 1), (7, 1)]
    with pytest.raises(MissingValueError):
        read_values(np.ma.array(data, mask=[False, True, False]))
    floats = np.ma.array([0.5, np.inf, 0.25], mask=[False, True, False])  # inf is masked
    with pytest.raises(MissingValueError):
        read_values(floats)
    kw = {"epsilon": 1, "clamp_bounds": (0, 1)}
    masked = SnappingMechanism(**kw, source=SeededSource(4)).release(np.ma.array([0.5, 0.25]))
    plain = SnappingMechanism(**kw, source=SeededSource(4)).release(np.array([0.5, 0.25]))
    assert np.asarray(masked).tolist() == np.asarray(plain).tolist()
