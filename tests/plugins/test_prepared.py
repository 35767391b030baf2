"""Every built-in statistic's Prepared names itself and its n (with the note saying
where n comes from), and refuses a wrong n.

The fields the release reports besides the values (``statistic``, ``n``) are checked
against the request, for data whose number of records is known here; a public n that
differs from the number of records under the replace relation, too few records, and
a missing cap under add-remove are refused with an error naming the statistic or the
rule.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from snapcore.statistics.counting import Count, Histogram
from snapcore.statistics.moments import Covariance, Mean, Sum, Variance

from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE

ONE = ((0.0, 4.0),)
TWO = ((0.0, 4.0), (-1.0, 1.0))
CASES = [
    (Sum(), [1.0, 2.5, 3.0], ONE, 1, {}),
    (Mean(), [1.0, 2.5, 3.0], ONE, 1, {}),
    (Variance(), [1.0, 2.5, 3.0], ONE, 1, {}),
    (Covariance(), [(1.0, 0.5), (2.5, -0.5), (3.0, 0.0)], TWO, 2, {}),
    (Count(), [1.0, 2.5, 3.0], None, 0, {}),
    (Histogram(), [1.0, 2.5, 3.0], None, 1, {"bins": [0.0, 2.0, 4.0]}),
]
IDS = [c[0].name for c in CASES]


def prepare(stat, xs, bounds, columns, opts, relation=REPLACE, n=None):
    ds = as_dataset(xs, columns=columns)
    return stat.prepare(ds, data_bounds=bounds, n=n, relation=relation, **opts)


@pytest.mark.parametrize(("stat", "xs", "bounds", "columns", "opts"), CASES, ids=IDS)
def test_prepared_names_the_statistic_and_n(stat, xs, bounds, columns, opts):
    for n in (None, len(xs)):
        p = prepare(stat, xs, bounds, columns, opts, n=n)
        assert p.statistic == stat.name
        assert p.n == len(xs)
        # the note saying where n comes from (public under the replace relation)
        assert p.notes[0].startswith(f"n = {len(xs)} ")
        assert "public" in p.notes[0]


@pytest.mark.parametrize(("stat", "xs", "bounds", "columns", "opts"), CASES, ids=IDS)
def test_a_public_n_other_than_the_records_is_refused(stat, xs, bounds, columns, opts):
    for n in (len(xs) - 1, len(xs) + 1):
        with pytest.raises(ParameterError, match=r"^n must equal the number of records"):
            prepare(stat, xs, bounds, columns, opts, n=n)


@pytest.mark.parametrize(
    ("stat", "xs", "bounds", "columns", "need"),
    [
        (Mean(), [], ONE, 1, 1),
        (Variance(), [2.0], ONE, 1, 2),
        (Covariance(), [(1.0, 0.5)], TWO, 2, 2),
    ],
    ids=["mean", "variance", "covariance"],
)
def test_too_few_records_are_refused_by_name(stat, xs, bounds, columns, need):
    msg = rf"^statistic '{stat.name}' needs n >= {need} records, got n={len(xs)}$"
    with pytest.raises(ParameterError, match=msg):
        prepare(stat, xs, bounds, columns, {})


@pytest.mark.parametrize("stat", [Sum(), Count()], ids=["sum", "count"])
def test_add_remove_without_a_cap_names_the_statistic(stat):
    bounds, columns = (ONE, 1) if stat.name == "sum" else (None, 0)
    with pytest.raises(ParameterError, match=rf"^statistic '{stat.name}' under the add-remove"):
        prepare(stat, [1.0, 2.0], bounds, columns, {}, relation=ADD_REMOVE)


@pytest.mark.parametrize("x", [2.5, -3.0, 7.0])
def test_mean_of_one_record_is_that_record_clamped(x):
    """n = 1 is enough for a mean (n >= 1): the value is the one clamped record, Δ = w."""
    p = prepare(Mean(), [x], ONE, 1, {})
    assert p.values == (min(max(Fraction(x), Fraction(0)), Fraction(4)),)
    assert p.sensitivity == 4 and p.n == 1
