"""Parameter validation and the exact calibration (snapcore.calibration._params).

Every bad parameter gives a ParameterError (also a ValueError) whose message names the
parameter, the rule and the value.  The constants are checked against hand-derived
values and against the independent rounding of ``tests/helpers/snapref.py``; the
mechanism's whole calibration is also compared with the reference in
``tests/pipeline/test_reference.py``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from param_errors import raises_param
from rounding_cases import ties
from snapref import RN, RU, RZ, ceil_log2 as ref_ceil_log2, round_p

import snapcore
from snapcore.calibration._params import (
    MAX_PRECISION,
    MIN_PRECISION,
    calibrate,
    ceil_log2,
    derive_calibration,
    parse_epsilon,
    record_calibration,
    required_precision,
)
from snapcore.errors import ParameterError

NAN, INF = float("nan"), float("inf")

GOOD = {"epsilon": 1.0, "sensitivity": 1.0, "clamp_bound": 8.0}


# -- numeric parameters ----------------------------------------------------------------

NON_FINITE = [NAN, INF, -INF, np.float64("nan"), np.float32("inf")]
NOT_NUMBERS = [True, False, np.bool_(True), "1", b"1", None, [1.0], 1j, Fraction]


@pytest.mark.parametrize("name", ["epsilon", "sensitivity", "clamp_bound"])
@pytest.mark.parametrize("bad", NON_FINITE, ids=repr)
def test_non_finite_parameters(name, bad):
    with raises_param([name, repr(float(bad))]):
        calibrate(**(GOOD | {name: bad}))


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        (name, bad)
        for name in ("epsilon", "sensitivity", "clamp_bound")
        for bad in NOT_NUMBERS
        # clamp_bound=None means "not given": see test_bounds_and_bound_exclusive
        if not (name == "clamp_bound" and bad is None)
    ],
    ids=repr,
)
def test_non_numbers_and_bools(name, bad):
    with raises_param([name, repr(bad)]):
        calibrate(**(GOOD | {name: bad}))


@pytest.mark.parametrize("name", ["epsilon", "sensitivity", "clamp_bound"])
@pytest.mark.parametrize("bad", [0, 0.0, -0.0, -1, -1e-300, Fraction(-1, 4)], ids=repr)
def test_non_positive_parameters(name, bad):
    with raises_param([name, "> 0", repr(bad)]):
        calibrate(**(GOOD | {name: bad}))


@pytest.mark.parametrize(
    "bounds",
    [(NAN, 1.0), (0.0, NAN), (-INF, 0.0), (0.0, INF), (True, 2.0), (0.0, "1"), (None, 1.0)],
    ids=repr,
)
def test_bad_bounds_elements(bounds):
    which = (
        "clamp_bounds[0] (lower)"
        if not isinstance(bounds[1], str)
        and (
            bounds[0] is None
            or isinstance(bounds[0], bool)
            or math.isnan(bounds[0])
            or math.isinf(bounds[0])
        )
        else "clamp_bounds[1] (upper)"
    )
    bad = bounds[0] if which.startswith("clamp_bounds[0]") else bounds[1]
    text = repr(float(bad)) if isinstance(bad, float) else repr(bad)
    with raises_param([which, text]):
        calibrate(epsilon=1.0, clamp_bounds=bounds)


@pytest.mark.parametrize("bounds", [(0.0, 0.0), (1.0, 0.0), (5, -5), (-0.0, 0.0)], ids=repr)
def test_lower_not_below_upper(bounds):
    with raises_param(["lower < upper", f"lower={bounds[0]!r}", f"upper={bounds[1]!r}"]):
        calibrate(epsilon=1.0, clamp_bounds=bounds)


@pytest.mark.parametrize(
    "bounds", [(0.0,), (0.0, 1.0, 2.0), "ab", b"ab", 5, 1.5, {0.0, 1.0}, iter([0, 1])], ids=repr
)
def test_bounds_not_a_pair(bounds):
    with pytest.raises(ParameterError, match=r"clamp_bounds must be a pair \(lower, upper\), got"):
        calibrate(epsilon=1.0, clamp_bounds=bounds)


def test_bounds_accepts_any_pair_and_refuses_non_doubles():
    cal = calibrate(epsilon=1.0, clamp_bounds=[0.0, 1.0])
    assert (cal.lower, cal.upper) == (0, 1)
    cal = calibrate(epsilon=1.0, clamp_bounds=np.array([0.0, 1.0]))
    assert (cal.lower, cal.upper) == (0, 1)
    with raises_param(
        ["clamp_bounds[1] (upper)", "exactly representable as a double", "Fraction(1, 3)"]
    ):
        calibrate(epsilon=1.0, clamp_bounds=(0.0, Fraction(1, 3)))
    with raises_param(["bound", "exactly representable"]):
        calibrate(epsilon=1.0, clamp_bound=2**1100)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"clamp_bounds": (0, 1), "clamp_bound": 1.0},
        {"clamp_bounds": None, "clamp_bound": None},
    ],
    ids=str,
)
def test_bounds_and_bound_exclusive(kw):
    with raises_param(["exactly one of clamp_bounds", "clamp_bound="]):
        calibrate(epsilon=1.0, **kw)


# -- precision ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "words"),
    [
        (117, ["precision", ">= 118", "117"]),
        (2, ["precision", ">= 118", "2"]),
        (-5, ["precision", "-5"]),
        (118.0, ["precision", "int", "118.0"]),
        (True, ["precision", "int", "True"]),
        (np.bool_(True), ["precision", "int", "True"]),
        ("200", ["precision", "int", "'200'"]),
        (Fraction(200), ["precision", "int"]),
        (2**21, ["precision", "<=", str(2**21)]),
    ],
    ids=repr,
)
def test_bad_precision(precision, words):
    with raises_param(words):
        calibrate(**GOOD, precision=precision)


def test_precision_floor_depends_on_parameters():
    """ε = 2**-200 needs p >= 202 (ε > 2η); b = 2**80 needs p >= 132 (b·η <= 2**-52)."""
    with raises_param(["precision", ">= 202", "150"]):
        calibrate(epsilon=2.0**-200, clamp_bound=1.0, precision=150)
    assert calibrate(epsilon=2.0**-200, clamp_bound=1.0).precision == 202
    with raises_param(["precision", ">= 132", "131"]):
        calibrate(epsilon=2.0**-60, clamp_bound=2.0**80, precision=131)
    assert calibrate(epsilon=2.0**-60, clamp_bound=2.0**80, precision=500).precision == 500
    assert calibrate(**GOOD, precision=np.int64(300)).precision == 300


def test_precision_beyond_the_supported_range_is_refused():
    tiny = Fraction(1, 1 << (1 << 21))
    with pytest.raises(
        ParameterError,
        match=r"epsilon = 2\*\*-2097152.*"
        r"at most 1048576",
    ):
        calibrate(epsilon=tiny, clamp_bound=10.0)


@pytest.mark.parametrize(
    ("epsilon", "ratio", "want"),
    [
        # max(118, m + 2, ceil(log2 b) + 52) with 2**-m the least power of two >= ε
        (Fraction(1), Fraction(50), 118),
        (Fraction(3), Fraction(1, 10**9), 118),  # m = -2: the floor wins
        (Fraction(1, 2**116), Fraction(1), 118),  # m = 116
        (Fraction(1, 2**117), Fraction(1), 119),  # m = 117
        (Fraction(1, 2**117) + Fraction(1, 2**300), Fraction(1), 118),  # still m = 116
        (Fraction(1, 2**200), Fraction(1), 202),
        (Fraction(1), Fraction(2**80), 132),  # ceil(log2 b) = 80
        (Fraction(1), Fraction(2**80 + 1), 133),  # ceil(log2 b) = 81
        (Fraction(1, 2**200), Fraction(2**200), 252),  # the larger of the two terms
    ],
    ids=str,
)
def test_required_precision_hand_values(epsilon, ratio, want):
    assert required_precision(epsilon, ratio) == want
    assert MIN_PRECISION == 118 and MAX_PRECISION == 2**20


@given(
    st.fractions(min_value=Fraction(1, 10**40), max_value=Fraction(10**40)).filter(lambda q: q > 0)
    | st.builds(lambda k: Fraction(2) ** k, st.integers(-300, 300))
)
def test_ceil_log2_is_the_least_power_of_two_at_or_above(q):
    k = ceil_log2(q)
    assert Fraction(2) ** (k - 1) < q <= Fraction(2) ** k


# -- the upper condition b <= 2**52·Λ ------------------------------------------------


def test_upper_condition_boundary():
    """ε = 1: λ is just above 1, Λ = 2, so b may be at most 2**53."""
    ok = calibrate(epsilon=1.0, clamp_bound=2.0**53)
    assert ok.granularity == 2 and ok.unit_clamp_bound == 2**53
    with raises_param(
        [
            "clamp interval is too wide",
            "epsilon = 1.0",
            "B/sensitivity = 9.007199254740994e+15",
            "2**52",
            "Lambda",
        ]
    ):
        calibrate(epsilon=1.0, clamp_bound=2.0**53 + 2)
    with raises_param(["too wide"]):
        calibrate(epsilon=1.0, clamp_bound=2.0**60)


def test_upper_condition_with_sensitivity_and_asymmetric_bounds():
    # B = 3·2**52, Δ = 1/4 -> B/Δ = 3·2**54 > 2**53 = 2**52·Λ: refused ...
    with raises_param(
        ["clamp interval is too wide", "epsilon = 1.0", "B/sensitivity = 5.4043195528445952e+16"]
    ):
        calibrate(epsilon=1.0, sensitivity=0.25, clamp_bounds=(1e6, 1e6 + 6.0 * 2**52))
    # ... while Δ = 2 makes it 3·2**51 <= 2**53: allowed.
    calibrate(epsilon=1.0, sensitivity=2.0, clamp_bounds=(1e6, 1e6 + 6.0 * 2**52))


def test_upper_condition_huge_epsilon():
    """ε = 64: Λ = 2**-5 (λ just above 1/64), so b <= 2**47."""
    cal = calibrate(epsilon=64.0, clamp_bound=2.0**47)
    assert cal.granularity == Fraction(1, 32)
    with raises_param(["too wide", "64.0"]):
        calibrate(epsilon=64.0, clamp_bound=2.0**47 + 1)


# -- the constants --------------------------------------------------------------------


def test_calibration_of_epsilon_one_on_0_100_by_hand():
    """ε = 1, [0, 100], Δ = 1: p = 118, b = 50, ε′ = RZ((1 − 2η)/(1 + 600η)) lies in
    (1 − 2**-108, 1), so λ = RU(1/ε′) lies in (1, 1 + 2**-107) and Λ = 2."""
    cal = calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    assert cal.precision == 118 and cal.epsilon == 1 and cal.sensitivity == 1
    assert (cal.lower, cal.upper, cal.centre, cal.half_width) == (0, 100, 50, 50)
    assert cal.unit_clamp_bound == 50
    assert 1 - Fraction(1, 2**108) < cal.epsilon_prime < 1
    assert 1 < cal.scale < 1 + Fraction(1, 2**107) and cal.scale * cal.epsilon_prime >= 1
    assert cal.granularity == 2 and cal.granularity_log2 == 1


def test_granularity_when_lambda_is_a_power_of_two():
    """ε = 2**-3·(1 + 12·b·η) + 2η makes ε′ = 2**-3 exactly, so λ = 8 = Λ; ε = 1/8
    itself gives ε′ just below 1/8, λ just above 8 and Λ = 16."""
    eta = Fraction(1, 2**118)
    exact = calibrate(epsilon=Fraction(1, 8) * (1 + 12 * 50 * eta) + 2 * eta, clamp_bound=50.0)
    assert exact.precision == 118
    assert exact.epsilon_prime == Fraction(1, 8) and exact.scale == 8
    assert exact.granularity == 8 and exact.granularity_log2 == 3
    above = calibrate(epsilon=Fraction(1, 8), clamp_bound=50.0)
    assert above.scale > 8 and above.granularity == 16 and above.granularity_log2 == 4


def test_asymmetric_interval_and_non_dyadic_clamp_bound():
    """[-3, 5] with Δ = 3: c = 1, B = 4 and b = RN(4/3), which is not 4/3 itself."""
    cal = calibrate(epsilon=0.5, sensitivity=3, clamp_bounds=(-3.0, 5.0))
    assert (cal.centre, cal.half_width, cal.sensitivity) == (1, 4, 3)
    assert cal.unit_clamp_bound == round_p(Fraction(4, 3), cal.precision, RN)
    assert cal.unit_clamp_bound != Fraction(4, 3)
    assert abs(cal.unit_clamp_bound - Fraction(4, 3)) <= Fraction(4, 3) / 2**cal.precision


@st.composite
def exact_parameters(draw: st.DrawFn) -> dict:
    """Exact parameters of derive_calibration at any precision, including ε that makes
    ε′ a power of two (λ = Λ exactly)."""
    p = draw(st.integers(2, 300))
    half = draw(st.fractions(Fraction(1, 2**20), Fraction(2**20)).filter(lambda q: q > 0))
    centre = draw(st.fractions(Fraction(-(2**20)), Fraction(2**20)))
    delta = draw(
        st.fractions(Fraction(1, 2**10), Fraction(2**10)).filter(lambda q: q > 0)
        | st.sampled_from([Fraction(1), Fraction(3), Fraction(1, 10)])
    )
    eta = Fraction(1, 2**p)
    if draw(st.booleans()):
        k = draw(st.integers(-10, 60))
        b = round_p(half / delta, p, RN)
        eps = Fraction(2) ** -k * (1 + 12 * b * eta) + 2 * eta
    else:
        eps = draw(st.fractions(Fraction(1, 2**40), Fraction(64)).filter(lambda q: q > 2 * eta))
    return {
        "epsilon": eps,
        "lower": centre - half,
        "upper": centre + half,
        "sensitivity": delta,
        "precision": p,
    }


@settings(max_examples=300)
@given(kw=exact_parameters())
def test_derive_calibration_is_s1_to_s3_at_any_precision(kw):
    """[S1]–[S3] of docs/semantics.md, by the reference's own rounding."""
    p, eta = kw["precision"], Fraction(1, 2 ** kw["precision"])
    assume(kw["epsilon"] > 2 * eta)
    cal = derive_calibration(**kw)
    half = (kw["upper"] - kw["lower"]) / 2
    b = round_p(half / kw["sensitivity"], p, RN)
    eps_p = round_p((kw["epsilon"] - 2 * eta) / (1 + 12 * b * eta), p, RZ)
    lam = round_p(1 / eps_p, p, RU)
    assert cal.precision == p and cal.epsilon == kw["epsilon"]
    assert cal.centre == (kw["lower"] + kw["upper"]) / 2 and cal.half_width == half
    assert cal.unit_clamp_bound == b
    assert cal.epsilon_prime == eps_p
    assert cal.scale == lam
    assert cal.granularity == Fraction(2) ** ref_ceil_log2(lam)


@settings(max_examples=100, deadline=None)
@given(t=ties(), half=st.sampled_from([Fraction(1), Fraction(3, 2), Fraction(2**30)]))
def test_calibration_clamp_bound_ties_go_to_even(t, half):
    """``b = RN(B/Δ)`` for a Δ that puts B/Δ exactly on a tie."""
    n, E, p = t
    assume(p >= 8 and n > 0)
    tie = Fraction(n) * Fraction(2) ** E
    cal = derive_calibration(
        epsilon=Fraction(1),
        lower=-half,
        upper=half,
        sensitivity=half / tie,
        precision=p,
    )
    assert cal.unit_clamp_bound == round_p(tie, p, RN)


# -- the privacy analysis and a record's calibration ----------------------------------


def test_privacy_analysis_repr_shows_short_decimals_and_the_margin():
    """ε = 1, b = 50, p = 118: ε′ = RZ(q) with q = (1 − 2η)/(1 + 600η), so the bound
    ε′·(1 + 600η) + 2η is at most 1 and at least 1 − 2**-117; Liu's is 1 + 1150η."""
    pa = calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0)).privacy()
    margin = pa.epsilon - pa.bound
    assert 0 < margin <= Fraction(1, 2**117)
    assert pa.liu_bound == 1 + Fraction(1150, 2**118)
    found = re.match(
        r"PrivacyAnalysis\(epsilon=1, bound=≈1 \(epsilon - bound = (\S+)\), liu_bound=≈1, "
        r"theorem='Mironov \(2012\), Theorem 1",
        repr(pa),
    )
    assert found, repr(pa)
    assert float(found[1]) == pytest.approx(float(margin), rel=5e-3)


def test_record_calibration_is_the_calibration_the_record_reports():
    r = snapcore.release(
        "mean",
        [23.0, 35.0, 41.0, 58.0],
        epsilon=Fraction(1, 3),
        data_bounds=(0, 100),
        source=snapcore.SeededSource(1),
    )
    cal = record_calibration(r)
    assert (float(cal.lower), float(cal.upper)) == r.clamp_bounds
    assert cal.epsilon == r.epsilon_per_value == Fraction(1, 3)
    assert cal.sensitivity == r.sensitivity == 25
    assert cal.precision == r.precision
    assert cal.granularity == r.granularity and cal.sensitivity * cal.granularity == r.grid_step


def test_record_calibration_refuses_a_record_without_noise():
    r = snapcore.release("count", [1, 2, 3], epsilon=1, relation="replace")
    assert r.clamp_bounds is None
    with pytest.raises(ParameterError, match=r"no clamp interval \(clamp_bounds is None\)"):
        record_calibration(r)


# -- epsilon as text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0.2", Fraction(1, 5)),  # the decimal, not the double nearest to it
        ("1/3", Fraction(1, 3)),
        (" 0.5\n", Fraction(1, 2)),
        ("1e-3", Fraction(1, 1000)),
        ("7", Fraction(7)),
    ],
)
def test_parse_epsilon_reads_decimals_and_fractions_exactly(text, want):
    got = parse_epsilon(text)
    assert got == want and isinstance(got, Fraction)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("a lot", "a decimal number or a fraction"),
        ("", "a decimal number or a fraction"),
        ("nan", "a decimal number or a fraction"),
        ("inf", "a decimal number or a fraction"),
        ("1/0", "a decimal number or a fraction"),
        ("0", "> 0"),
        ("-0.5", "> 0"),
    ],
)
def test_parse_epsilon_refuses_what_is_not_a_positive_number(text, rule):
    with raises_param(["epsilon", rule, repr(text)]):
        parse_epsilon(text)
