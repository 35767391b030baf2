"""Every validation error path of calibrate / SnappingMechanism / transform / release.

For each bad input: the exception type (every error is a SnapcoreError; parameter
errors are also ValueError), that the message names the parameter and the value,
that no randomness was drawn (a counting source proves it, and the next valid
release equals a fresh mechanism's first), and that nothing partial is returned.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from snapcore import (
    ParameterError,
    ReplaySource,
    SeededSource,
    SnapcoreError,
    SnappingMechanism,
    SourceExhaustedError,
)
from snapcore.calibration._params import calibrate
from snapcore.testing.sources import CountingSource

NAN, INF = float("nan"), float("inf")


def raises_param(match_all: list[str]):
    """Context manager: a ParameterError whose message contains every string."""

    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(ParameterError)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            out = self.cm.__exit__(*exc)
            err = self.info.value
            assert isinstance(err, ValueError) and isinstance(err, SnapcoreError)
            msg = str(err)
            for s in match_all:
                assert s in msg, f"{s!r} not in message {msg!r}"
            return out

    return _Ctx()


GOOD = {"epsilon": 1.0, "sensitivity": 1.0, "clamp_bound": 8.0}


# -- the hierarchy -------------------------------------------------------------------


def test_error_hierarchy():
    from snapcore import BackendUnavailableError, PluginError

    for cls in (ParameterError, PluginError, BackendUnavailableError, SourceExhaustedError):
        assert issubclass(cls, SnapcoreError)
    assert issubclass(ParameterError, ValueError)
    assert issubclass(BackendUnavailableError, ImportError)


# -- numeric parameters ----------------------------------------------------------------

NON_FINITE = [NAN, INF, -INF, np.float64("nan"), np.float32("inf")]
NOT_NUMBERS = [True, False, np.bool_(True), "1", b"1", None, [1.0], 1j, Fraction]


@pytest.mark.parametrize("name", ["epsilon", "sensitivity", "clamp_bound"])
@pytest.mark.parametrize("bad", NON_FINITE, ids=repr)
def test_non_finite_parameters(name, bad):
    src = CountingSource()
    with raises_param([name, repr(float(bad))]):
        SnappingMechanism(**(GOOD | {name: bad}), source=src)
    assert src.drawn == 0


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
    src = CountingSource()
    with raises_param([name, repr(bad)]):
        SnappingMechanism(**(GOOD | {name: bad}), source=src)
    assert src.drawn == 0


@pytest.mark.parametrize("name", ["epsilon", "sensitivity", "clamp_bound"])
@pytest.mark.parametrize("bad", [0, 0.0, -0.0, -1, -1e-300, Fraction(-1, 4)], ids=repr)
def test_non_positive_parameters(name, bad):
    with raises_param([name, "> 0", repr(bad)]):
        SnappingMechanism(**(GOOD | {name: bad}))


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
        SnappingMechanism(epsilon=1.0, clamp_bounds=bounds)


@pytest.mark.parametrize("bounds", [(0.0, 0.0), (1.0, 0.0), (5, -5), (-0.0, 0.0)], ids=repr)
def test_lower_not_below_upper(bounds):
    with raises_param(["lower < upper", f"lower={bounds[0]!r}", f"upper={bounds[1]!r}"]):
        SnappingMechanism(epsilon=1.0, clamp_bounds=bounds)


@pytest.mark.parametrize(
    "bounds", [(0.0,), (0.0, 1.0, 2.0), "ab", b"ab", 5, 1.5, {0.0, 1.0}, iter([0, 1])], ids=repr
)
def test_bounds_not_a_pair(bounds):
    with pytest.raises(ParameterError, match=r"clamp_bounds must be a pair \(lower, upper\), got"):
        SnappingMechanism(epsilon=1.0, clamp_bounds=bounds)


def test_bounds_accepts_any_pair_and_refuses_non_doubles():
    assert SnappingMechanism(epsilon=1.0, clamp_bounds=[0.0, 1.0]).clamp_bounds == (0.0, 1.0)
    assert SnappingMechanism(epsilon=1.0, clamp_bounds=np.array([0.0, 1.0])).clamp_bounds == (
        0.0,
        1.0,
    )
    with raises_param(
        ["clamp_bounds[1] (upper)", "exactly representable as a double", "Fraction(1, 3)"]
    ):
        SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, Fraction(1, 3)))
    with raises_param(["bound", "exactly representable"]):
        SnappingMechanism(epsilon=1.0, clamp_bound=2**1100)


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
        SnappingMechanism(epsilon=1.0, **kw)


def test_keyword_only():
    with pytest.raises(TypeError):
        SnappingMechanism(1.0, 1.0, 8.0)  # type: ignore[misc]


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
        SnappingMechanism(**GOOD, precision=precision)


def test_precision_floor_depends_on_parameters():
    """ε = 2**-200 needs p >= 202 (ε > 2η); b = 2**80 needs p >= 132 (b·η <= 2**-52)."""
    with raises_param(["precision", ">= 202", "150"]):
        SnappingMechanism(epsilon=2.0**-200, clamp_bound=1.0, precision=150)
    assert SnappingMechanism(epsilon=2.0**-200, clamp_bound=1.0).precision == 202
    with raises_param(["precision", ">= 132", "131"]):
        SnappingMechanism(epsilon=2.0**-60, clamp_bound=2.0**80, precision=131)
    assert SnappingMechanism(epsilon=2.0**-60, clamp_bound=2.0**80, precision=500).precision == 500
    assert SnappingMechanism(**GOOD, precision=np.int64(300)).precision == 300


# -- the upper condition b <= 2**52·Λ ------------------------------------------------


def test_upper_condition_boundary():
    """ε = 1: λ is just above 1, Λ = 2, so b may be at most 2**53."""
    ok = SnappingMechanism(epsilon=1.0, clamp_bound=2.0**53)
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
        SnappingMechanism(epsilon=1.0, clamp_bound=2.0**53 + 2)


def test_upper_condition_with_sensitivity_and_asymmetric_bounds():
    # B = 3·2**52, Δ = 1/4 -> B/Δ = 3·2**54 > 2**53 = 2**52·Λ: refused ...
    with raises_param(
        ["clamp interval is too wide", "epsilon = 1.0", "B/sensitivity = 5.4043195528445952e+16"]
    ):
        SnappingMechanism(epsilon=1.0, sensitivity=0.25, clamp_bounds=(1e6, 1e6 + 6.0 * 2**52))
    # ... while Δ = 2 makes it 3·2**51 <= 2**53: allowed.
    SnappingMechanism(epsilon=1.0, sensitivity=2.0, clamp_bounds=(1e6, 1e6 + 6.0 * 2**52))


def test_upper_condition_huge_epsilon():
    """ε = 64: Λ = 2**-5 (λ just above 1/64), so b <= 2**47."""
    m = SnappingMechanism(epsilon=64.0, clamp_bound=2.0**47)
    assert m.granularity == Fraction(1, 32)
    with raises_param(["too wide", "64.0"]):
        SnappingMechanism(epsilon=64.0, clamp_bound=2.0**47 + 1)


def test_upper_condition_from_calibrate_directly():
    with pytest.raises(ParameterError, match="too wide"):
        calibrate(epsilon=1.0, clamp_bound=2.0**60)


def test_b_below_lambda_is_allowed():
    """B <= λ is outside Mironov's simplified bound but still private: allowed."""
    src = CountingSource(3)
    m = SnappingMechanism(epsilon=0.01, clamp_bound=1.0, source=src)  # λ ~ 100 >> B
    assert m.scale > m.unit_clamp_bound
    outs = m.release([0.0] * 200)
    assert set(outs) <= {-1.0, 0.0, 1.0} and {-1.0, 1.0} <= set(outs)


def test_out_of_range_values_are_clamped_not_refused():
    p = SnappingMechanism(**GOOD).precision
    near_one = 1 - Fraction(1, 2**p)
    m = SnappingMechanism(**GOOD, source=ReplaySource([(1, near_one), (-1, near_one)] * 3))
    assert m.release(1e300) == 8.0
    assert m.release(-1e300) == -8.0
    assert m.release([1e300, -1e300, 9.0, -9.0]) == [8.0, -8.0, 8.0, -8.0]
    assert m.transform(10**400, near_one, 1) == 8.0  # an int beyond any double, exactly


# -- backends and sources by name ---------------------------------------------------


def test_unknown_backend():
    with raises_param(["backend", "'nope'", "mpfr"]):
        SnappingMechanism(**GOOD, backend="nope")
    with raises_param(["backend", "3"]):
        SnappingMechanism(**GOOD, backend=3)  # type: ignore[arg-type]


def test_unknown_source():
    with raises_param(["source", "'nope'", "system", "seeded", "replay"]):
        SnappingMechanism(**GOOD, source="nope")
    with raises_param(["source", "RandomSource"]):
        SnappingMechanism(**GOOD, source=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["seeded", "replay"])
def test_source_name_needing_options(name):
    with raises_param(["source", repr(name), "needs options"]):
        SnappingMechanism(**GOOD, source=name)


def test_seed_validation():
    for bad in (-1, 1.5, None, True, [1]):
        with raises_param(["seed", repr(bad)]):
            SeededSource(bad)  # type: ignore[arg-type]


# -- transform ------------------------------------------------------------------------


@pytest.fixture
def mech():
    return SnappingMechanism(**GOOD, source=CountingSource())


P = 118


@pytest.mark.parametrize(
    ("u", "words"),
    [
        (0, ["u", "Fraction or float", "int 0"]),
        (1, ["u", "Fraction or float", "int 1"]),
        (0.0, ["u", "(0, 1)", "0.0"]),
        (1.0, ["u", "(0, 1)", "1.0"]),
        (Fraction(0), ["u", "(0, 1)"]),
        (Fraction(1), ["u", "(0, 1)"]),
        (-0.5, ["u", "(0, 1)", "-0.5"]),
        (1.5, ["u", "(0, 1)", "1.5"]),
        (NAN, ["u", "nan"]),
        (INF, ["u", "inf"]),
        (-INF, ["u", "-inf"]),
        (Fraction(1, 3), ["u", "dyadic", "Fraction(1, 3)"]),
        (1 - Fraction(1, 2 ** (P + 1)), ["u", "p = 118", "needs 119 bits"]),
        (Fraction(2**200 + 1, 2**300), ["u", "p = 118", "needs 201 bits"]),
        (True, ["u", "bool True"]),
        ("0.5", ["u", "str '0.5'"]),
        (None, ["u", "NoneType"]),
        (np.float32(0.5), ["u", "0.5"]),
        (Fraction(-1, 2), ["u", "(0, 1)"]),
    ],
    ids=repr,
)
def test_transform_bad_u(mech, u, words):
    with raises_param(words):
        mech.transform(1.0, u, 1)
    assert mech.source.drawn == 0


@pytest.mark.parametrize(
    "sign", [0, 2, -2, True, False, 1.0, -1.0, np.int64(1), "1", None, Fraction(1)], ids=repr
)
def test_transform_bad_sign(mech, sign):
    with raises_param(["sign", "1 or -1", repr(sign)]):
        mech.transform(1.0, 0.5, sign)
    assert mech.source.drawn == 0


@pytest.mark.parametrize(
    "value",
    [NAN, INF, -INF, True, np.bool_(False), "1", None, [1.0], 1j, np.float64("nan")],
    ids=repr,
)
def test_transform_bad_value(mech, value):
    with raises_param(["value"]):
        mech.transform(value, 0.5, 1)
    assert mech.source.drawn == 0


def test_transform_accepts_exact_inputs(mech):
    for u in (0.5, Fraction(1, 2), np.float64(0.5), 2.0**-1074, 1 - Fraction(1, 2**P)):
        for v in (1.0, 1, Fraction(3, 7), np.int64(1), np.float32(1.5)):
            out = mech.transform(v, u, -1)
            assert isinstance(out, float) and -8.0 <= out <= 8.0
    assert mech.source.drawn == 0  # transform never draws


# -- release: scalars, sequences, arrays -----------------------------------------------


BAD_SCALARS = [
    NAN,
    INF,
    -INF,
    True,
    False,
    np.bool_(True),
    "1",
    b"1",
    None,
    1j,
    np.float64("nan"),
    np.float32("-inf"),
    {1.0},
]


def fresh_first_release(value):
    return SnappingMechanism(**GOOD, source=CountingSource()).release(value)


@pytest.mark.parametrize("value", BAD_SCALARS, ids=repr)
def test_release_bad_scalar(mech, value):
    with pytest.raises(ParameterError) as info:
        mech.release(value)
    assert "value" in str(info.value)
    if isinstance(value, float):  # the problem is named; a private value is never shown
        assert ("NaN" if value != value else "infinite") in str(info.value)
    assert mech.source.drawn == 0
    # The stream was not advanced: the next release is a fresh mechanism's first.
    assert mech.release(2.5) == fresh_first_release(2.5)


BAD_SEQUENCES = [  # the message names the type or the problem, never the value
    ([1.0, NAN], "NaN"),
    ([1.0, 2.0, INF], "infinite"),
    ([-INF], "infinite"),
    ([1.0, True], "bool"),
    ([np.bool_(False), 1.0], "numpy.bool"),
    ([1.0, "x"], "str"),
    ([1.0, None], "None"),
    ([[1.0, 2.0], [3.0]], "ragged"),
    ([[1.0, NAN], [3.0, 4.0]], "NaN"),
    ((1.0, NAN), "NaN"),
    ([Fraction(1, 3), b"1"], "bytes"),
]


@pytest.mark.parametrize(("value", "shown"), BAD_SEQUENCES, ids=repr)
def test_release_bad_sequence_is_all_or_nothing(mech, value, shown):
    with pytest.raises(ParameterError) as info:
        mech.release(value)
    assert "value" in str(info.value) and shown in str(info.value)
    assert mech.source.drawn == 0
    assert mech.release([2.5, 0.5]) == fresh_first_release([2.5, 0.5])


BAD_ARRAYS = [
    (np.array([1.0, np.nan]), "NaN"),
    (np.array([[1.0, 2.0], [np.inf, 4.0]]), "infinite"),
    (np.array([1.0, -np.inf], dtype=np.float32), "infinite"),
    (np.array(np.nan), "NaN"),
    (np.array([True, False]), "bool"),
    (np.array(["a"]), "str"),
    (np.array([1.0, "2.0"], dtype=object), "str"),
    (np.array([1 + 0j]), "complex"),
]


@pytest.mark.parametrize(("value", "shown"), BAD_ARRAYS, ids=repr)
def test_release_bad_array_is_all_or_nothing(mech, value, shown):
    with pytest.raises(ParameterError) as info:
        mech.release(value)
    assert "value" in str(info.value) and shown in str(info.value)
    assert mech.source.drawn == 0
    np.testing.assert_array_equal(
        mech.release(np.array([2.5, 0.5])), fresh_first_release(np.array([2.5, 0.5]))
    )


def test_release_shapes_and_types(mech):
    assert mech.release([]) == []
    assert mech.release(np.array([])).shape == (0,)
    out = mech.release(np.zeros((2, 3)))
    assert isinstance(out, np.ndarray) and out.shape == (2, 3) and out.dtype == np.float64
    assert isinstance(mech.release((1.0, 2.0)), list)
    assert isinstance(mech.release(np.int64(3)), float)
    assert isinstance(mech.release(np.array([1, 2], dtype=np.int32)), np.ndarray)


def test_exhausted_replay_source_returns_nothing():
    p = SnappingMechanism(**GOOD).precision
    src = ReplaySource([(1, 0.5), (-1, 0.5)])
    m = SnappingMechanism(**GOOD, source=src)
    with pytest.raises(SourceExhaustedError, match=r"cannot supply 3 draws \(2 draws left\)"):
        m.release([1.0, 2.0, 3.0])
    assert src.remaining == 2  # all or nothing: no draw consumed
    assert m.release([1.0, 2.0]) == [m.transform(1.0, 0.5, 1), m.transform(2.0, 0.5, -1)]
    with pytest.raises(SourceExhaustedError):
        m.release(1.0)
    assert p == 118


def test_replay_draw_not_p_bit_fails_before_output():
    m = SnappingMechanism(**GOOD, source=ReplaySource([(1, 0.5), (1, Fraction(1, 3))]))
    with pytest.raises(ParameterError, match=re.escape("draws[1].u")):
        m.release([1.0, 2.0])
    with pytest.raises(ParameterError, match="sign"):
        SnappingMechanism(**GOOD, source=ReplaySource([(True, 0.5)])).release(1.0)


def test_precision_beyond_the_supported_range_is_refused():
    tiny = Fraction(1, 1 << (1 << 21))
    with pytest.raises(
        ParameterError,
        match=r"epsilon = 2\*\*-2097152.*"
        r"at most 1048576",
    ):
        SnappingMechanism(epsilon=tiny, clamp_bound=10.0)


def test_u_below_the_backends_exponent_range_is_refused():
    m = SnappingMechanism(epsilon=1.0, clamp_bound=10.0)
    with pytest.raises(ParameterError, match=r"u must be >= 2\*\*-536870912"):
        m.transform(1.0, Fraction(1, 1 << ((1 << 29) + 5)), 1)
    # Just inside the range the tail is computed (and clamped).
    assert m.transform(1.0, Fraction(1, 1 << (1 << 20)), 1) == -10.0


def test_pipeline_refuses_an_arithmetic_of_another_precision():
    from snapcore.calibration._params import calibrate
    from snapcore.pipeline._stages import Pipeline
    from snapcore.plugins._manager import get_registries

    cal = calibrate(epsilon=1.0, clamp_bound=8.0)
    arith = get_registries().backends.create("mpfr").arithmetic(cal.precision + 1)
    with raises_param(["arith", str(cal.precision), str(cal.precision + 1)]):
        Pipeline(cal, arith)
