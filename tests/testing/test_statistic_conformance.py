"""The statistic conformance suite catches what it exists to catch.

Four deliberately broken statistics (tests/helpers/planted_statistics.py): a halved
sensitivity, a value range one record too small, a clamp interval derived from the
data, and a reader that lets one record change how the others are read; and two that
compute in float64 (Casacuberta et al., CCS 2022).  The packaged suite, run in a fresh
pytest exactly as a plugin author runs it, must fail each of them, with the right
message; the unbroken sum in the same harness passes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fresh_pytest import run_fresh_pytest
from planted_statistics import FLOAT_PLANTED, PLANTED, DataClampMean

from snapcore.errors import StatisticConformanceError
from snapcore.testing import Setting, run_statistic_conformance
from snapcore.testing.statistic_checks import check_float_traps
from snapcore.testing.statistic_settings import default_settings

HELPERS = Path(__file__).parents[1] / "helpers"

F32_01 = 0.10000000149011612  # float(np.float32(0.1))
SETTINGS = {
    "HalvedSensitivitySum": [Setting(data_bounds=(0.0, 1.0)), Setting(data_bounds=(-3.0, 5.5))],
    "ShortRangeCount": [Setting()],
    "DataClampMean": [Setting(data_bounds=(0.0, 1.0))],
    "OneTypeReaderSum": [Setting(data_bounds=(0.1, F32_01))],
    "Sum": [Setting(data_bounds=(0.0, 1.0)), Setting(data_bounds=(-3.0, 5.5))],
    "FloatSum": [Setting(data_bounds=(0.0, 1.0)), Setting(data_bounds=(-3.0, 5.5))],
    "FloatSquaresVariance": [Setting(data_bounds=(0.0, 1.0))],
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Run the packaged suite over the planted statistics (and the unbroken sum) in
    one fresh pytest; returns {test id: (status, message)}."""
    tmp = tmp_path_factory.mktemp("planted")
    lines = [
        "from planted_statistics import *",
        "from snapcore.statistics.moments import Sum",
        "from snapcore.testing import Setting, statistic_suite",
    ]
    for cls, sets in SETTINGS.items():
        lines.append(f"Test{cls} = statistic_suite({cls}, settings={sets!r}, max_examples=10)")
    (tmp / "test_planted.py").write_text("\n".join(lines) + "\n")
    junit = tmp / "out.xml"
    proc = run_fresh_pytest(
        HELPERS,
        tmp,
        tmp,
        junit,
        tmp,
        "-k",
        "value_range_extremal or (extremal_neighbours and not every_container) or float_traps",
        timeout=900,
    )
    assert junit.exists(), proc.stdout + proc.stderr
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        status, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status, message = child.tag, (child.get("message") or "") + (child.text or "")
        out[f"{case.get('classname').rsplit('.', 1)[-1]}::{case.get('name')}"] = (status, message)
    assert proc.returncode == 1, proc.stdout[-3000:]
    return out


def _failed(outcomes, cls, test, fragment):
    status, message = outcomes[f"Test{cls}::{test}"]
    assert status == "failure", (cls, test, status)
    assert fragment in message, message[:2000]
    assert "reproduce: " in message


def test_halved_sensitivity_fails(outcomes):
    for rel in ("replace", "add-remove"):
        for i in (0, 1):
            _failed(
                outcomes,
                "HalvedSensitivitySum",
                f"test_extremal_neighbours[halved_sum-{rel}-{i}]",
                "> Δ",
            )
    # the value range is right: that test passes
    assert (
        outcomes["TestHalvedSensitivitySum::test_value_range_extremal[halved_sum-replace-0]"][0]
        == "passed"
    )


def test_short_value_range_fails(outcomes):
    _failed(
        outcomes,
        "ShortRangeCount",
        "test_value_range_extremal[short_count-add-remove-0]",
        "lies outside the declared value range",
    )
    # under replace the count's range [n, n] is unchanged by the plant: it passes
    assert (
        outcomes["TestShortRangeCount::test_value_range_extremal[short_count-replace-0]"][0]
        == "passed"
    )


def test_clamp_interval_from_the_data_fails(outcomes):
    _failed(
        outcomes,
        "DataClampMean",
        "test_extremal_neighbours[data_clamp_mean-replace-0]",
        "Prepared.value_range depends on the data",
    )
    # deterministic: the constructed neighbours have different minima and maxima
    _failed(
        outcomes,
        "DataClampMean",
        "test_float_traps[data_clamp_mean-replace-0]",
        "Prepared.value_range depends on the data",
    )


def test_reader_changing_other_records_fails(outcomes):
    # D = [0.1, 0.1], D′ = [np.float32(0.1), 0.1]: the float32 record turns the other
    # 0.1 into float32(0.1), so the sum moves by two widths of the bounds.
    _failed(
        outcomes, "OneTypeReaderSum", "test_extremal_neighbours[one_type_sum-replace-0]", "(2 Δ)"
    )
    _failed(
        outcomes, "OneTypeReaderSum", "test_extremal_neighbours[one_type_sum-add-remove-0]", "> Δ"
    )


def test_unbroken_sum_passes_the_same_harness(outcomes):
    mine = {k: v for k, v in outcomes.items() if k.startswith("TestSum::")}
    assert len(mine) == 12
    assert {s for s, _ in mine.values()} == {"passed"}, mine


@pytest.mark.parametrize("planted", PLANTED, ids=lambda c: c.name)
def test_quick_run_without_pytest_fails_each(planted):
    report = run_statistic_conformance(planted, SETTINGS[planted.__name__], random_pairs=20)
    assert not report.passed
    assert "reproduce: " in report.failures[0]


def test_float_statistics_fail_the_default_run_naming_the_pair(outcomes):
    for rel in ("replace", "add-remove"):
        for i in (0, 1):
            _failed(
                outcomes, "FloatSum", f"test_float_traps[float_sum-{rel}-{i}]", "constructed pair"
            )
    _failed(
        outcomes,
        "FloatSquaresVariance",
        "test_float_traps[float_squares_variance-replace-0]",
        "constructed pair",
    )


@pytest.mark.parametrize("planted", FLOAT_PLANTED, ids=lambda c: c.name)
def test_a_float_statistic_is_caught_in_every_one_of_20_runs(planted):
    """The default settings a plugin gets (no settings given): every run fails, on a
    named constructed pair, and the checks are deterministic (the same message each
    time)."""
    stat = planted()
    messages = set()
    for _ in range(20):
        caught = []
        for setting in default_settings(stat):
            for rel in stat.relations:
                try:
                    check_float_traps(stat, setting, rel)
                except StatisticConformanceError as exc:
                    caught.append(str(exc))
        assert caught, "a float-summing statistic passed the constructed datasets"
        assert all(m.startswith("constructed pair '") for m in caught)
        assert all("D = [" in m and "D′ = [" in m and "reproduce: " in m for m in caught)
        messages.add(tuple(caught))
    assert len(messages) == 1


def test_a_float_statistic_fails_the_quick_run_on_a_constructed_pair():
    for planted in FLOAT_PLANTED:
        report = run_statistic_conformance(planted, random_pairs=0)
        assert not report.passed
        assert any(f.startswith("constructed pair '") for f in report.failures)


def test_the_data_clamp_mean_fails_the_constructed_pairs_deterministically():
    with pytest.raises(StatisticConformanceError, match="value_range depends on the data"):
        check_float_traps(
            DataClampMean(), Setting(data_bounds=(0.0, 1.0)), DataClampMean.relations[0]
        )
