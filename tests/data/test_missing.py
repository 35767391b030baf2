"""The missing-value policy (snapcore.data._missing): checked against the relation,
then applied to a dataset before a statistic reads it (Dataset.apply_missing).

``"error"`` leaves the refusal to the reading of the column (its message is tested in
``tests/data/test_values.py``); ``"drop"`` removes every record with a missing value
in a column the statistic reads, and only under add-remove; ``"impute"`` replaces each
missing value by a public constant.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from param_errors import raises_param

import snapcore
from snapcore.data._columns import Dataset
from snapcore.data._missing import MissingPolicy, check_missing_policy
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import category_key
from snapcore.errors import ParameterError

REPLACE, ADD_REMOVE = Neighbouring.REPLACE, Neighbouring.ADD_REMOVE
NAN = math.nan


# -- the policy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "impute", "relation"),
    [
        ("error", None, REPLACE),
        ("error", None, ADD_REMOVE),
        ("drop", None, ADD_REMOVE),
        ("impute", 0, REPLACE),
        ("impute", Fraction(1, 3), ADD_REMOVE),
        ("impute", "unknown", REPLACE),  # a category is a public constant too
    ],
    ids=str,
)
def test_a_valid_policy_is_kept_as_given(missing, impute, relation):
    policy = check_missing_policy(missing, impute, relation)
    assert policy == MissingPolicy(kind=missing, constant=impute)


@pytest.mark.parametrize(
    ("missing", "impute", "relation", "parameter", "words"),
    [
        ("skip", None, REPLACE, "missing", ["missing must be one of", "'drop'", "'skip'"]),
        (None, None, REPLACE, "missing", ["missing must be one of", "None"]),
        ("error", 0, REPLACE, "impute", ["impute= is used only with missing='impute'"]),
        ("drop", 0, ADD_REMOVE, "impute", ["missing='drop'"]),
        ("drop", None, REPLACE, "missing", ["not a neighbour under the replace relation"]),
        ("impute", None, REPLACE, "impute", ["needs impute=", "public constant"]),
        ("impute", NAN, REPLACE, "impute", ["needs impute="]),
        ("impute", pd.NA, ADD_REMOVE, "impute", ["needs impute="]),
        ("impute", math.inf, REPLACE, "impute", ["impute must be finite", "inf"]),
        ("impute", -math.inf, REPLACE, "impute", ["impute must be finite", "-inf"]),
    ],
    ids=str,
)
def test_a_policy_that_breaks_its_rules_is_refused(missing, impute, relation, parameter, words):
    with raises_param(words) as info:
        check_missing_policy(missing, impute, relation)
    assert info.value.parameter == parameter


# -- applied to a dataset -----------------------------------------------------------


def two_columns() -> Dataset:
    """Records 0 (y None), 1 (x NaN) and 3 (y NA) have a missing value; 2 and 4 none."""
    x = np.array([1.0, NAN, 3.0, 4.0, 5.0])
    y = pd.Series(["a", "b", "c", pd.NA, "e"], dtype=object)
    y[0] = None
    return Dataset([x, y], ["x", "y"], 5)


def test_drop_removes_every_record_with_a_missing_value():
    ds = two_columns()
    out = ds.apply_missing(MissingPolicy(kind="drop"))
    assert out.size == 2 and out.names == ("x", "y")
    assert out.column(0).doubles.tolist() == [3.0, 5.0]
    assert out.categorical(1) == [category_key("c"), category_key("e")]


def test_impute_replaces_each_missing_value_and_leaves_the_data_alone():
    ds = two_columns()
    out = ds.apply_missing(MissingPolicy(kind="impute", constant=0))
    assert out.size == 5
    assert out.column(0).fractions() == [1, 0, 3, 4, 5]
    assert out.categorical(1) == [category_key(v) for v in (0, "b", "c", 0, "e")]
    assert math.isnan(ds.float64_view(0)[1])  # the caller's column is unchanged


def test_error_and_no_columns_leave_the_dataset_as_it_is():
    ds = two_columns()
    assert ds.apply_missing(MissingPolicy(kind="error")) is ds
    counted = Dataset([], [], 7)  # a count reads no column: nothing can be missing
    assert counted.apply_missing(MissingPolicy(kind="drop")) is counted


def test_columns_that_cannot_hold_a_missing_value_are_kept_whole():
    ds = Dataset([np.arange(4, dtype=np.int64), [1.0, 2.0, None, 4.0]], ["i", "f"], 4)
    out = ds.apply_missing(MissingPolicy(kind="drop"))
    assert out.column(0).fractions() == [0, 1, 3]
    assert out.column(1).fractions() == [1, 2, 4]


def test_drop_removes_a_record_whose_datetime_is_nat():
    # NaT is missing (is_missing) in a datetime64 column too, so drop removes its record
    # as the reading of the column would refuse it.
    when = np.array(["2020-01-01", "NaT", "2020-01-03"], dtype="datetime64[D]")
    ds = Dataset([when, [1.0, 2.0, 3.0]], ["t", "x"], 3)
    out = ds.apply_missing(MissingPolicy(kind="drop"))
    assert out.column(1).fractions() == [1, 3]
    assert not np.isnat(out.arrays()[0]).any()


# -- through a release --------------------------------------------------------------


def test_missing_error_is_the_default():
    with pytest.raises(ParameterError, match=r"contains missing values.*missing=.drop"):
        snapcore.release("sum", [1.0, math.nan], data_bounds=(0, 1), epsilon=1)


def test_missing_drop_is_record_removal_under_add_remove():
    with_nan = [3.0, None, 4.0, math.nan, 5.0]
    r = snapcore.release(
        "sum", with_nan, data_bounds=(0, 10), n=10, relation="add-remove", missing="drop",
        epsilon=1, source=snapcore.SeededSource(2),
    )  # fmt: skip
    s = snapcore.release(
        "sum", [3.0, 4.0, 5.0], data_bounds=(0, 10), n=10, relation="add-remove",
        epsilon=1, source=snapcore.SeededSource(2),
    )  # fmt: skip
    assert r.value == s.value
    with pytest.raises(ParameterError, match="not a neighbour under the replace"):
        snapcore.release("mean", with_nan, data_bounds=(0, 10), missing="drop", epsilon=1)


def test_missing_impute_public_constant():
    arr = np.array([3.0, np.nan, 4.0])
    r = snapcore.release(
        "mean", arr, data_bounds=(0, 10), missing="impute", impute=5, epsilon=1,
        source=snapcore.SeededSource(2),
    )  # fmt: skip
    s = snapcore.release(
        "mean", [3.0, 5.0, 4.0], data_bounds=(0, 10), epsilon=1,
        source=snapcore.SeededSource(2),
    )  # fmt: skip
    assert r.value == s.value and r.n == 3
    with pytest.raises(ParameterError, match="needs impute="):
        snapcore.release("mean", arr, data_bounds=(0, 10), missing="impute", epsilon=1)
    with pytest.raises(ParameterError, match="missing must be one of"):
        snapcore.release("mean", arr, data_bounds=(0, 10), missing="skip", epsilon=1)
