"""The statistic conformance suite over every built-in statistic, in every relation it
supports (snapcore.testing.statistic_suite)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from snapcore.data._neighbouring import Neighbouring
from snapcore.plugins._manager import resolve_statistic
from snapcore.testing import RegisteredStatisticsConformance
from snapcore.testing.statistic_checks import check_pair
from snapcore.testing.statistic_containers import containers
from snapcore.testing.statistic_evaluation import evaluate
from snapcore.testing.statistic_settings import Case, Setting

BUILTINS = ("count", "sum", "mean", "variance", "covariance", "histogram")


class TestBuiltinStatistics(RegisteredStatisticsConformance):
    names = BUILTINS


# -- one record must not change how the other records are read ---------------------------
# Checked with the suite's own functions, on the suite's list container, against exact
# values derived by hand.

F32_01 = float(np.float32(0.1))


def _outcome(stat, data, relation, n=None, **setting):
    case = Case(setting=Setting(**setting), relation=Neighbouring.parse(relation), n=n)
    return evaluate(resolve_statistic(stat), case, data, containers(1, "categorical")[0])


@pytest.mark.parametrize(
    ("relation", "d", "d2", "n", "want"),
    [
        ("replace", [1] * 50 + [2], [1] * 50 + ["x"], None, (50, 1, 0)),
        ("add-remove", [2, 1, 1, 3], [2, 1, 1, 3, "x"], 5, (2, 1, 1)),
    ],
)
def test_histogram_string_record_does_not_turn_the_others_into_text(relation, d, d2, n, want):
    opts = {"categories": [1, 2, 3]}
    a = _outcome("histogram", d, relation, n, options=opts, records="categorical")
    b = _outcome("histogram", d2, relation, n, options=opts, records="categorical")
    assert a.prepared.values == want
    # 'x' is in no bin: if the column is accepted, the other records keep their bins.
    if b.prepared is not None:
        assert b.prepared.values == ((50, 0, 0) if relation == "replace" else (2, 1, 1))
    check_pair(resolve_statistic("histogram"), a, b)


def test_string_record_does_not_change_how_float32_records_are_read():
    bounds = (0.1, F32_01)
    d = [np.float32(0.1)] * 8 + ["0.1"]
    d2 = [np.float32(0.1)] * 8 + [0.1]
    a = _outcome("sum", d, "replace", data_bounds=bounds)
    b = _outcome("sum", d2, "replace", data_bounds=bounds)
    assert b.prepared.values == (8 * Fraction(F32_01) + Fraction(0.1),)
    # The string is not a number: refused, or read without touching the float32 records.
    if a.prepared is not None:
        assert a.prepared.values[0] >= 8 * Fraction(F32_01)
    check_pair(resolve_statistic("sum"), a, b)


def test_statistic_suite_is_one_line_whichever_way_it_is_imported():
    import snapcore.testing
    from snapcore.testing import StatisticConformance, statistic_suite
    from snapcore.testing.statistic_conformance import statistic_suite as from_module

    for factory in (statistic_suite, from_module, snapcore.testing.statistic_suite):
        cls = factory("count", max_examples=3)
        assert issubclass(cls, StatisticConformance)
        assert cls.statistic == "count" and cls.max_examples == 3
    with pytest.raises(ValueError, match="unknown option"):
        statistic_suite("count", max_example=3)
    # option_sets become settings with the statistic's data bounds
    cls = statistic_suite("histogram", option_sets=[{"bins": [0.0, 1.0]}])
    assert [s.options for s in cls.settings] == [{"bins": [0.0, 1.0]}]
