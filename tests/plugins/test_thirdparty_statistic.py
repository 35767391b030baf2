"""A third-party statistic plugin found through real entry-point discovery.

The plugin (examples/snapcore-rangecount) is copied into a temporary directory with
a ``*.dist-info`` declaring its entry point, that directory is put on ``sys.path``,
and the registries are rebuilt: exactly what ``pip install`` of the plugin gives.
"""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner
from fresh_pytest import run_fresh_pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import snapcore
import snapcore.cli
from snapcore.data._columns import as_dataset
from snapcore.errors import ParameterError
from snapcore.plugins import _manager as plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "snapcore-rangecount"


@pytest.fixture
def installed_plugin(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(EXAMPLE / "snapcore_rangecount.py", site)
    dist = site / "snapcore_rangecount-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: snapcore-rangecount\nVersion: 0.1.0\n"
    )
    (dist / "entry_points.txt").write_text("[snapcore]\nrangecount = snapcore_rangecount\n")
    sys.path.insert(0, str(site))
    plugins.reset()
    try:
        yield plugins.get_registries()
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("snapcore_rangecount", None)
        plugins.reset()


def test_discovered_through_entry_point(installed_plugin):
    reg = installed_plugin.statistics
    assert "range_count" in reg.names()
    assert reg.origin("range_count") == "rangecount"  # the entry-point name
    assert {"count", "mean", "histogram"} <= set(reg.names())  # built-ins still there


def test_release_with_the_plugin(installed_plugin):
    ages = [15.0, 22.0, 29.0, 30.0, 31.0, 64.0, 18.0]
    r = snapcore.release(
        "range_count", ages, epsilon=1, low=18, high=30, source=snapcore.SeededSource(5)
    )
    assert r.statistic == "range_count" and r.sensitivity == 1 and r.value_range == (0, 7)
    lo, hi = r.clamp_bounds
    assert lo <= r.value <= hi
    with pytest.raises(ParameterError, match="unknown option"):
        snapcore.release("range_count", ages, epsilon=1, low=1, high=2, width=3)
    with pytest.raises(ParameterError, match="needs both options"):
        snapcore.release("range_count", ages, epsilon=1, low=1)


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
    new=st.floats(allow_nan=False, allow_infinity=False),
    i=st.integers(0, 39),
    low=st.floats(-1e6, 1e6),
    width=st.floats(0, 1e6),
)
def test_plugin_sensitivity_property(xs, new, i, low, width):
    # The plugin is ordinary code: import it from the example directory.
    sys.path.insert(0, str(EXAMPLE))
    try:
        import snapcore_rangecount as rc
    finally:
        sys.path.remove(str(EXAMPLE))
    stat = rc.RangeCount()
    ys = list(xs)
    ys[i % len(xs)] = new
    hi = low + width
    for rel, n in ((snapcore.Neighbouring.REPLACE, None), (snapcore.Neighbouring.ADD_REMOVE, 30)):
        p = stat.prepare(as_dataset(xs), data_bounds=None, n=n, relation=rel, low=low, high=hi)
        q = stat.prepare(as_dataset(ys), data_bounds=None, n=n, relation=rel, low=low, high=hi)
        assert abs(Fraction(p.values[0]) - Fraction(q.values[0])) <= p.sensitivity == 1
        assert 0 <= p.values[0] <= p.b_prime
        if rel is snapcore.Neighbouring.REPLACE:
            assert p.values[0] == sum(low <= x <= hi for x in xs)


def test_plugin_from_the_cli(installed_plugin):
    r = CliRunner().invoke(
        snapcore.cli.main,
        ["release", "range_count", "-c", "age", "-o", "low=18", "-o", "high=30", "-e", "1"],
    )
    assert r.exit_code == 0, r.output
    assert "range_count" in r.output and "released value" in r.output


def test_the_plugin_passes_the_statistic_suite_from_its_own_tests(tmp_path):
    # The example's tests/ holds one line, `TestRangeCount = statistic_suite(RangeCount)`;
    # run them as the plugin's author would, in a fresh pytest.
    junit = tmp_path / "out.xml"
    proc = run_fresh_pytest(
        EXAMPLE, EXAMPLE, EXAMPLE / "tests", junit, tmp_path, "-m", "not slow", timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    # 6 default tests x 2 option sets x 2 relations (the slow one deselected)
    assert len(cases) == 6 * 2 * 2, [c.get("name") for c in cases]
    assert not [c for c in cases if len(c)], "a test did not pass"
