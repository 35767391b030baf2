"""snapcore.release (snapcore.releases._api): the record it fills, the data types, the
errors, the budget split."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import snapcore
from snapcore import Neighbouring, ReplaySource, SeededSource, SnappingMechanism
from snapcore.errors import ParameterError

AGES = [23.0, 35.0, 41.0, 58.0, 62.0, 19.0, 77.0, 45.0, 30.0, 51.0]


def test_record_fields():
    r = snapcore.release("mean", AGES, epsilon=1, data_bounds=(0, 100), source=SeededSource(1))
    assert r.statistic == "mean" and r.relation is Neighbouring.REPLACE
    assert r.epsilon_spent == 1 and r.epsilon_per_value == 1
    assert r.sensitivity == Fraction(100, 10) and r.n == 10
    assert r.value_range == (0, 100) and r.b_prime == 100
    lo, hi = r.clamp_bounds
    assert lo < 0 and hi > 100 and lo <= r.value <= hi
    assert r.precision == 118 and r.backend == "mpfr" and r.source == "seeded"
    assert r.gamma == Fraction(0.05) and "gamma" in r.clamp_reason
    m = SnappingMechanism(epsilon=1, sensitivity=r.sensitivity, clamp_bounds=r.clamp_bounds)
    assert r.granularity == m.granularity and r.grid_step == m.granularity * r.sensitivity
    # outputs lie on the grid c + Δ·Λ·ℤ
    c = (Fraction(lo) + Fraction(hi)) / 2
    k = (Fraction(r.value) - c) / r.grid_step
    assert abs(k - round(k)) < Fraction(1, 10**9)


def test_value_is_the_mechanism_applied_to_the_exact_statistic():
    # A replayed draw: the release equals the mechanism's pure transform of the exact
    # mean (sum 441 / 10), with the clamp interval the release chose.
    u = Fraction(3, 8)
    r = snapcore.release(
        "mean", AGES, epsilon=1, data_bounds=(0, 100), source=ReplaySource([(1, u)])
    )
    m = SnappingMechanism(epsilon=1, sensitivity=10, clamp_bounds=r.clamp_bounds)
    assert r.value == m.transform(Fraction(441, 10), u, 1)


@pytest.mark.parametrize(
    "data",
    [
        AGES,
        tuple(AGES),
        np.array(AGES),
        np.array(AGES, dtype=np.int64),
        pd.Series(AGES, name="age"),
        pd.Series([int(a) for a in AGES], dtype="Int64"),
        {"age": AGES},
        pd.DataFrame({"age": AGES}),
    ],
    ids=["list", "tuple", "ndarray", "int-array", "series", "nullable-int", "dict", "frame"],
)
def test_data_types_give_the_same_release(data):
    r = snapcore.release("sum", data, epsilon=1, data_bounds=(0, 100), source=SeededSource(7))
    ref = snapcore.release("sum", AGES, epsilon=1, data_bounds=(0, 100), source=SeededSource(7))
    assert r.value == ref.value


def test_dataframe_columns():
    df = pd.DataFrame({"age": AGES, "income": [a * 1000 for a in AGES], "region": ["n"] * 10})
    r = snapcore.release("mean", df, column="age", epsilon=1, data_bounds=(0, 100))
    assert r.n == 10
    r = snapcore.release(
        "covariance",
        df,
        column=("age", "income"),
        epsilon=1,
        data_bounds=((0, 100), (0, 1e5)),
        source=SeededSource(2),
    )
    assert r.sensitivity == Fraction(100 * 100000, 10)
    h = snapcore.release("histogram", df["region"], epsilon=1, categories=["n", "s"])
    assert h.labels == ("n", "s") and len(h.value) == 2
    with pytest.raises(ParameterError, match="column 'agee' not found"):
        snapcore.release("mean", df, column="agee", epsilon=1, data_bounds=(0, 100))
    with pytest.raises(ParameterError, match="choose with column"):
        snapcore.release("mean", df, epsilon=1, data_bounds=(0, 100))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None])
def test_non_finite_data_error_reveals_nothing(bad):
    secret = [12.5, 99.25, bad, 31.0]
    for data, name in (
        (secret, "data"),
        (np.array(secret, dtype=float), "data"),
        (pd.Series(secret, name="salary", dtype=float), "salary"),
        (pd.DataFrame({"salary": secret}), "salary"),
    ):
        with pytest.raises(ParameterError) as info:
            snapcore.release(
                "mean",
                data,
                epsilon=1,
                data_bounds=(0, 100),
                column=None if name == "data" or isinstance(data, pd.Series) else "salary",
            )
        msg = str(info.value)
        # Missing values give the one documented message, whatever the marker; an
        # infinity names its type.  Neither names a record, its position or a value.
        missing = msg.startswith(f"column {name!r} contains missing values (None, NaN,")
        infinite = msg.startswith(f"column {name!r}") and "got an infinite" in msg
        assert missing == (bad is None or bad != bad) and infinite == (not missing)
        assert info.value.__context__ is None  # no chained exception carries a value
        for leaked in ("12.5", "99.25", "31"):
            assert leaked not in msg
        assert not re.search(r"(?<![A-Za-z])2(?![0-9])", msg)  # the position of the bad one


def test_non_numeric_error_reveals_nothing():
    with pytest.raises(ParameterError) as info:
        snapcore.release("mean", ["12", "secret-value", "3"], epsilon=1, data_bounds=(0, 100))
    msg = str(info.value)
    assert msg.startswith("column 'data': every record must be a finite real number")
    assert msg.endswith("got str") and "secret" not in msg and "12" not in msg
    assert info.value.__context__ is None


def test_histogram_budget_split():
    xs = [1.0, 2.0, 2.5, 7.0]
    rep = snapcore.release("histogram", xs, epsilon=1, bins=[0, 2, 4, 8], source=SeededSource(1))
    assert rep.relation is Neighbouring.REPLACE
    assert rep.epsilon_spent == 1 and rep.epsilon_per_value == Fraction(1, 2)
    assert "ε/2" in rep.composition and len(rep.value) == 3
    half = SnappingMechanism(epsilon=Fraction(1, 2), clamp_bounds=rep.clamp_bounds)
    assert rep.granularity == half.granularity and rep.grid_step == half.grid_step
    add = snapcore.release(
        "histogram", xs, epsilon=1, bins=[0, 2, 4, 8], relation="add-remove", n=100
    )
    assert add.epsilon_spent == 1 and add.epsilon_per_value == 1
    assert "parallel composition" in add.composition
    full = SnappingMechanism(epsilon=1, clamp_bounds=add.clamp_bounds)
    assert add.granularity == full.granularity


def test_count_relations():
    r = snapcore.release("count", AGES, epsilon=1, n=50, source=SeededSource(3))
    assert r.relation is Neighbouring.ADD_REMOVE and r.sensitivity == 1 and r.b_prime == 50
    pub = snapcore.release("count", AGES, epsilon=1, relation="replace")
    assert pub.value == 10.0 and pub.epsilon_spent == 0 and pub.sensitivity == 0
    assert pub.clamp_bounds is None and pub.granularity is None and pub.grid_step is None
    b = snapcore.Budget(1)
    snapcore.release("count", AGES, epsilon=1, relation="replace", budget=b)
    assert b.spent == 0


def test_clamp_bounds_given_directly():
    r = snapcore.release("mean", AGES, epsilon=1, data_bounds=(0, 100), clamp_bounds=(20, 60))
    assert r.clamp_bounds == (20.0, 60.0) and r.gamma is None
    assert 20 <= r.value <= 60 and "given directly" in r.clamp_reason
    with pytest.raises(ParameterError, match="at most one of gamma"):
        snapcore.release(
            "mean", AGES, epsilon=1, data_bounds=(0, 100), clamp_bounds=(0, 1), gamma=0.1
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"statistic": "median"}, "statistic must be one of"),
        ({"epsilon": 0}, "epsilon must be a finite number > 0"),
        ({"epsilon": math.nan}, "epsilon must be a finite real number"),
        ({"data_bounds": None}, "needs data_bounds="),
        ({"data_bounds": (5, 1)}, "lower < upper"),
        ({"data_bounds": (0, math.inf)}, r"data_bounds\[1\] \(upper\)"),
        ({"gamma": 0}, "gamma must be a number in"),
        ({"relation": "add-remove"}, "supports relation"),
        ({"relation": "swap"}, "relation must be one of"),
        ({"n": -1}, "n must be an int"),
        ({"n": 11}, "n must equal the number of records"),
        ({"bins": [0, 1]}, "unknown option"),
        ({"backend": "nope"}, "backend must be one of"),
        ({"budget": 3}, "budget must be"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"statistic": "mean", "epsilon": 1, "data_bounds": (0, 100)}
    args.update(kwargs)
    stat = args.pop("statistic")
    src = ReplaySource([])
    with pytest.raises(ParameterError, match=match):
        snapcore.release(stat, AGES, source=src, **args)


def test_statistic_object_and_registry():
    from snapcore.plugins._manager import get_registries

    reg = get_registries().statistics
    assert {"count", "sum", "mean", "variance", "covariance", "histogram"} <= set(reg.names())
    assert reg.origin("mean") == "moments" and reg.origin("histogram") == "counting"
    r = snapcore.release(reg.get("variance"), AGES, epsilon=2, data_bounds=(0, 100))
    assert r.statistic == "variance" and r.sensitivity == Fraction(100**2, 10)
