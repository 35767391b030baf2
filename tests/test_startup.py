"""What a one-shot release costs before it draws: which source it builds, and which
libraries a command-line release imports (benchmarks/compare.py times the start-up)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import snapcore
from snapcore.randomness._sources import SeededSource
from snapcore.releases._api import SYSTEM_SOURCE_MAX_VALUES

XS = [float(x) for x in np.random.default_rng(5).uniform(0, 100, 200)]


def _histogram_source(bins: int, **kw) -> str:
    edges = np.linspace(0.0, 100.0, bins + 1).tolist()
    r = snapcore.release("histogram", XS, epsilon=1, bins=edges, timing="off", **kw)
    assert len(r.value) == bins
    return r.source


def test_a_small_release_reads_the_os_and_a_large_one_chacha20():
    r = snapcore.release("mean", XS, epsilon=1, data_bounds=(0, 100), timing="off")
    assert r.source == "system"
    assert SYSTEM_SOURCE_MAX_VALUES == 1024
    assert _histogram_source(SYSTEM_SOURCE_MAX_VALUES - 1) == "system"
    assert _histogram_source(SYSTEM_SOURCE_MAX_VALUES) == "chacha20"


def test_a_given_source_is_always_the_one_used():
    kw = {"epsilon": 1, "data_bounds": (0, 100), "timing": "off"}
    assert snapcore.release("mean", XS, source="chacha20", **kw).source == "chacha20"
    assert snapcore.release("mean", XS, source=SeededSource(1), **kw).source == "seeded"
    assert _histogram_source(SYSTEM_SOURCE_MAX_VALUES, source="system") == "system"


def test_each_group_of_a_grouped_release_reads_the_os():
    data = {"g": ["a", "b"] * 50, "x": XS[:100]}
    g = snapcore.release(
        "mean",
        data,
        column="x",
        by="g",
        keys=["a", "b"],
        group_sizes={"a": 50, "b": 50},
        epsilon=1,
        data_bounds=(0, 100),
        timing="off",
    )
    assert {r.source for _, r in g.items()} == {"system"}


def test_the_os_source_is_padded_by_default_as_chacha20_is():
    for source in ("system", "chacha20"):
        m = snapcore.SnappingMechanism(epsilon=1, clamp_bounds=(0, 10), source=source)
        assert m.padding is not None  # the scalar releases are padded


# Libraries a command-line release of a scalar statistic from a small CSV never uses
# (pyarrow parses every CSV source when installed, docs/semantics.md "CSV files"; its
# conversions that import pandas are avoided, and its compute functions are called by
# name without pyarrow.compute's wrappers); difflib serves only the suggestion for a
# refused name; the timing padding draws its calibration orders and synthetic data from
# Python's random.SystemRandom, not numpy.random (which would also load secrets' HMAC).
NOT_IMPORTED = (
    "pandas",
    "pyarrow.compute",
    "difflib",
    "numpy.random",
    "secrets",
    "hmac",
    "snapcore.analysis._guarantees",
    "snapcore.analysis._estimates",
    "narwhals",
    "numba",
    "llvmlite",
    "cryptography",
    "mpmath",
    "flint",
    "matplotlib",
    "snapcore.randomness._chacha",
    "snapcore.plugins._chacha20",
    "snapcore.backends.mpmath_backend",
    "snapcore.backends.arb",
    "snapcore.backends.fast",
    "snapcore.statistics.counting",
    "snapcore.releases._ledger",
)


def test_a_command_line_release_imports_only_what_it_uses(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from snapcore.cli import main
        try:
            main(["release", "mean", "--column", "age", "--data-bounds", "0", "100",
                  "--epsilon", "1"])
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        print("MODULES", sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules))
        print("LOADED", "gmpy2" in sys.modules, "snapcore.backends.mpfr" in sys.modules)
        """
    )
    env = dict(os.environ, SNAPCORE_TIMING_STORE=str(tmp_path / "quanta.sqlite3"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert "released value" in out and "source           system" in out
    assert "MODULES []" in out, out
    assert "LOADED True True" in out  # the check above looks at the right names


@pytest.mark.parametrize("module", ["pandas", "cryptography"])
def test_the_module_check_sees_an_import(module, tmp_path):
    # The same check fails when the release does import one of them (here forced).
    pytest.importorskip(module)
    code = textwrap.dedent(
        f"""
        import sys, {module}
        print(sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert module in out


@pytest.mark.parametrize(
    "kw",
    [
        {"statistic": "mean", "data_bounds": (0, 100), "epsilon": 1},
        {"statistic": "sum", "data_bounds": (-3, 7.5), "epsilon": "1/3"},
        {"statistic": "variance", "data_bounds": (0, 100), "epsilon": 0.7, "gamma": 0.01},
        {"statistic": "mean", "data_bounds": (0, 100), "epsilon": 2, "clamp_bounds": (-1, 99)},
        {"statistic": "histogram", "bins": [0, 10, 50, 100], "epsilon": 1.5},
    ],
)
def test_a_records_accuracy_is_the_accuracy_of_its_calibration(kw):
    from fractions import Fraction

    from snapcore.analysis._guarantees import accuracy

    kw = dict(kw)
    if isinstance(kw["epsilon"], str):
        kw["epsilon"] = Fraction(kw["epsilon"])
    r = snapcore.release(kw.pop("statistic"), XS, timing="off", source=SeededSource(2), **kw)
    for alpha in (0.5, 0.05, 1e-9, Fraction(1, 3)):
        assert r.accuracy(alpha) == accuracy(r, alpha)
    for alpha in (0, 1, -0.1, float("nan")):
        with pytest.raises(snapcore.ParameterError) as mine:
            r.accuracy(alpha)
        with pytest.raises(snapcore.ParameterError) as theirs:
            accuracy(r, alpha)
        assert str(mine.value) == str(theirs.value)


def test_a_record_without_noise_has_no_accuracy_either_way():
    from snapcore.analysis._guarantees import accuracy

    r = snapcore.release("count", XS, n=len(XS), relation="replace", epsilon=1, timing="off")
    assert r.clamp_bounds is None
    with pytest.raises(snapcore.ParameterError) as mine:
        r.accuracy(0.05)
    with pytest.raises(snapcore.ParameterError) as theirs:
        accuracy(r, 0.05)
    assert str(mine.value) == str(theirs.value)
