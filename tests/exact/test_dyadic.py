"""Rules that change ordinary outputs, each checked directly as a property.

- **Ties to even** (docs/semantics.md, rounding ``RN``): every backend-independent
  caller of the core's rounding (:func:`snapcore.exact._dyadic.round_ratio`,
  :func:`~snapcore.exact._dyadic.round_fraction`, :func:`~snapcore.exact._dyadic.round_dyadic`,
  the *add* stage and the calibration's ``b = RN(B/Δ)``) is given exact ties and
  compared with the independent reference ``snapref.round_p``.
- **The endpoint rule** (docs/semantics.md [S9]): a clamped ``z′ = ±b`` gives the user's endpoint
  itself, bit for bit, for any ε, Δ and bounds (floats and Fractions), e.g. ε = 1,
  Δ = 0.7, bounds (−2, 0) gives 0.0, not c + Δ·b ≈ −1.67e−36.
- **The grid path needs no output clamp**: ``c + Δ·k·Λ`` for the outermost grid points
  strictly inside ``(−b, b)`` lies strictly inside the interval (the premise of the
  proof in :meth:`snapcore.pipeline._stages.Pipeline._grid_output`), and its double lies in
  ``[lower, upper]``.

Reproduce a failure with the ``@reproduce_failure`` line hypothesis prints.
"""

from __future__ import annotations

import struct
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from snapref import RN, reference_calibration, reference_stages, round_p

from snapcore import SnappingMechanism
from snapcore.calibration._params import derive_calibration
from snapcore.exact._dyadic import round_dyadic, round_fraction, round_ratio, to_fraction
from snapcore.pipeline._stages import Pipeline, add

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRECISIONS = st.sampled_from([2, 3, 8, 24, 53, 64, 118, 119, 200])


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


@st.composite
def ties(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(n, E, p)``: the exact tie ``n·2**E`` halfway between two p-bit floats
    (``n`` has ``p + 1`` bits and is odd), with either parity of the lower one."""
    p = draw(PRECISIONS)
    q = draw(st.integers(1 << (p - 1), (1 << p) - 1))  # the lower neighbour's mantissa
    n = 2 * q + 1
    E = draw(st.integers(-400, 400))
    sign = draw(st.sampled_from([1, -1]))
    return sign * n, E, p


@SETTINGS
@given(t=ties(), scale=st.integers(1, 10**30))
def test_round_ratio_ties_go_to_even(t, scale):
    n, E, p = t
    value = Fraction(n) * Fraction(2) ** E
    want = round_p(value, p, RN)
    # The reference's tie goes to the neighbour with an even mantissa.
    m_want = abs(want) / Fraction(2) ** (E + 1)
    assert m_want.denominator == 1 and (m_want.numerator % 2 == 0 or m_want == 1 << p)
    # round_ratio with an arbitrary (not only power-of-two) common factor.
    num, den = (n * scale << E, scale) if E >= 0 else (n * scale, scale << -E)
    assert to_fraction(*round_ratio(num, den, p)) == want
    assert to_fraction(*round_ratio(-num, -den, p)) == want
    assert to_fraction(*round_fraction(value, p)) == want
    assert to_fraction(*round_dyadic(n, E, p)) == want


@SETTINGS
@given(t=ties(), share=st.sampled_from([Fraction(3, 7), Fraction(-5, 2), Fraction(1, 2**70)]))
def test_add_stage_ties_go_to_even(t, share):
    """Stage *add*: an exact sum x + N that is a tie rounds to even."""
    n, E, p = t
    value = Fraction(n) * Fraction(2) ** E
    N = round_p(value * share, p, RN)  # a p-bit noise; x takes the rest, exactly
    x = value - N
    ne = 1 - N.denominator.bit_length() if N.denominator > 1 else 0
    nm = int(N * Fraction(2) ** -ne)
    assert Fraction(nm) * Fraction(2) ** ne == N
    y = add((x.numerator, x.denominator), (nm, ne), p)
    assert to_fraction(*y) == round_p(value, p, RN)


@settings(SETTINGS, max_examples=100)
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


# -- the endpoint rule ------------------------------------------------------------------

SENS = st.sampled_from([0.7, 0.1, 3.0, 1.0, 1e-3, 1 / 3]) | st.builds(
    Fraction, st.integers(1, 10**6), st.integers(1, 10**6)
)
ENDS = st.sampled_from([0.0, -2.0, 1.0, 100.0, -1e-300, 1e15, 0.1, -0.3])


@settings(SETTINGS, max_examples=200)
@given(
    eps=st.sampled_from([1.0, 0.1, 2.0, 8.0])
    | st.builds(Fraction, st.integers(1, 99), st.integers(1, 99)),
    delta=SENS,
    lo=ENDS,
    width=st.sampled_from([2.0, 0.5, 1e3, 7.25, 2.0**-20]),
    value=st.floats(-1e20, 1e20),
    sign=st.sampled_from([1, -1]),
    as_fractions=st.booleans(),
)
@example(eps=1.0, delta=0.7, lo=-2.0, width=2.0, value=5.0, sign=-1, as_fractions=False)
def test_clamped_output_is_the_endpoint_itself(eps, delta, lo, width, value, sign, as_fractions):
    """A draw deep in the tail clamps z′ to ±b; the output is the endpoint, exactly."""
    hi = lo + width
    assume(lo < hi)
    bounds = (Fraction(lo), Fraction(hi)) if as_fractions else (lo, hi)
    try:
        mech = SnappingMechanism(epsilon=eps, sensitivity=delta, clamp_bounds=bounds)
    except ValueError:
        assume(False)
    ref = reference_calibration(epsilon=eps, sensitivity=delta, lower=lo, upper=hi)
    depth = max(3000, int(3 * ref.b / ref.scale) + 64)  # |noise| ≈ depth·λ·ln 2 > 2b
    assume(depth < 1 << 16)
    u = Fraction(1, 1 << depth)
    want = hi if sign == -1 else lo  # N = S·λ·ln U*: S = −1 pushes up
    assert abs(reference_stages(ref, value, u, sign)["z"]) == ref.b
    assert bits(mech.transform(value, u, sign)) == bits(want), (eps, delta, lo, hi, sign)


def test_endpoint_rule_hand_case():
    """ε = 1, Δ = 0.7, bounds (−2, 0): c − Δ·b is about −1.67e−36, the endpoint 0.0."""
    mech = SnappingMechanism(epsilon=1, sensitivity=0.7, clamp_bounds=(-2.0, 0.0))
    b = mech.calibration.unit_clamp_bound
    c_plus = float(Fraction(-1) + Fraction(0.7) * b)
    assert c_plus != 0.0 and abs(c_plus) < 1e-30  # what a missing endpoint rule gives
    u = Fraction(1, 1 << 3000)
    assert bits(mech.transform(-1.0, u, -1)) == bits(0.0)
    assert bits(mech.transform(-1.0, u, 1)) == bits(-2.0)


# -- the grid path needs no clamp -------------------------------------------------------


@settings(SETTINGS, max_examples=150)
@given(
    eps=st.sampled_from([1.0, 0.1, 64.0, 2.0**-40])
    | st.builds(Fraction, st.integers(1, 10**9), st.integers(1, 10**9)),
    delta=SENS,
    lo=ENDS | st.floats(-1e6, 1e6),
    width=st.floats(2.0**-30, 1e9) | st.sampled_from([1.4, 2.0, 0.7]),
    extra=st.sampled_from([0, 0, 1, 60]),
)
def test_outermost_grid_points_lie_inside_the_interval(eps, delta, lo, width, extra):
    hi = lo + width
    assume(lo < hi)
    try:
        mech = SnappingMechanism(epsilon=eps, sensitivity=delta, clamp_bounds=(lo, hi))
        if extra:
            mech = SnappingMechanism(
                epsilon=eps,
                sensitivity=delta,
                clamp_bounds=(lo, hi),
                precision=mech.precision + extra,
            )
    except ValueError:
        assume(False)
    cal = mech.calibration
    pipe = Pipeline(cal, mech.backend.arithmetic(cal.precision))
    b, Lam = cal.unit_clamp_bound, cal.granularity
    kmax = int(b / Lam)
    for k in {kmax, kmax - 1, -kmax, 1 - kmax, 0}:
        z = k * Lam
        if not abs(z) < b:
            continue
        exact = cal.centre + cal.sensitivity * z
        assert cal.lower < exact < cal.upper  # the premise: strictly inside
        out = pipe._grid_output(k, cal.granularity_log2)
        assert float(cal.lower) <= out <= float(cal.upper)
        assert out == float(exact)  # one rounding of the exact value
    # Through the public path too: the outermost grid point, reached with tiny noise.
    u = 1 - Fraction(1, 1 << cal.precision)
    for value in (float(cal.lower), float(cal.upper)):
        out = mech.transform(value, u, 1)
        assert float(cal.lower) <= out <= float(cal.upper)


# -- the small exact helpers -------------------------------------------------------------


@SETTINGS
@given(
    m=st.integers(-(2**300), 2**300)
    | st.builds(lambda k, s: k << s, st.integers(-9, 9), st.integers(0, 400)),
    p=PRECISIONS,
)
def test_is_p_bit_matches_reference(m, p):
    from snapref import is_p_bit as ref_is_p_bit

    from snapcore.exact._dyadic import is_p_bit

    assert is_p_bit(m, p) == (m == 0 or ref_is_p_bit(Fraction(m), p))


@SETTINGS
@given(
    m1=st.integers(-(2**80), 2**80),
    e1=st.integers(-300, 300),
    m2=st.integers(-(2**80), 2**80),
    e2=st.integers(-300, 300),
)
def test_dyadic_cmp_and_to_fraction_are_exact(m1, e1, m2, e2):
    from snapcore.exact._dyadic import dyadic_cmp

    a, b = Fraction(m1) * Fraction(2) ** e1, Fraction(m2) * Fraction(2) ** e2
    got = to_fraction(m1, e1)
    assert (got.numerator, got.denominator) == (a.numerator, a.denominator)  # lowest terms
    assert dyadic_cmp(m1, e1, m2, e2) == (a > b) - (a < b)
    assert dyadic_cmp(m1, e1, m1, e1) == 0


#: Mantissas of every kind: any size and sign, and multiples of large powers of two.
MANTISSAS = st.integers(-(2**80), 2**80) | st.builds(
    lambda k, s: k << s, st.integers(-9, 9), st.integers(0, 300)
)


@SETTINGS
@given(m1=MANTISSAS, e1=st.integers(-300, 300), m2=MANTISSAS, e2=st.integers(-300, 300))
@example(m1=0, e1=-7, m2=0, e2=5)
@example(m1=3, e1=-2, m2=-3, e2=-2)  # the sum is zero
@example(m1=1, e1=-1, m2=1, e2=-1)  # the sum carries into a new power of two
def test_dyadic_normalise_and_add_are_exact(m1, e1, m2, e2):
    from snapcore.exact._dyadic import dyadic_add, dyadic_normalise

    a, b = Fraction(m1) * Fraction(2) ** e1, Fraction(m2) * Fraction(2) ** e2
    for (m, e), want in ((dyadic_normalise(m1, e1), a), (dyadic_add(m1, e1, m2, e2), a + b)):
        assert Fraction(m) * Fraction(2) ** e == want
        # the normal form: an odd mantissa, or (0, 0) for zero
        assert (m, e) == (0, 0) if want == 0 else m % 2 == 1


@pytest.mark.parametrize("e", [-5, 0, 7])
def test_zero_is_the_pair_0_0(e):
    """The documented form of zero, whatever the exponent asked for."""
    assert round_dyadic(0, e, 118) == (0, 0)
    assert round_ratio(0, 3 << 7, 118) == (0, 0)
    assert round_fraction(Fraction(0), 53) == (0, 0)


# -- the snapping stage and the list path ------------------------------------------------


@SETTINGS
@given(m=st.integers(-(2**130), 2**130), e=st.integers(-200, 60), L=st.integers(-150, 60))
def test_snap_is_floor_of_y_over_lambda_plus_half(m, e, L):
    """Stage *snap* ([S7]) for any dyadic y, also when y's exponent is at or above L."""
    import math

    from snapcore.pipeline._stages import snap

    y = Fraction(m) * Fraction(2) ** e
    assert snap(m, e, L) == math.floor(y / Fraction(2) ** L + Fraction(1, 2))


@pytest.mark.parametrize(
    "kw",
    [
        # b = RN(B/Δ) = 2 = Λ exactly while B/Δ is not: k = ±kmax is an endpoint.
        dict(epsilon=1, sensitivity=1 / (2 * (1 + Fraction(1, 2**125))), clamp_bounds=(-2.0, 0.0)),
        dict(epsilon=1, sensitivity=0.7, clamp_bounds=(-2.0, 0.0)),
        dict(epsilon=Fraction(1, 3), sensitivity=Fraction(10, 3), clamp_bounds=(-5.0, 9.5)),
    ],
)
def test_run_many_equals_run_element_by_element(kw):
    from snapcore.randomness._sources import SeededSource

    mech = SnappingMechanism(**kw)
    cal = mech.calibration
    pipe = Pipeline(cal, mech.backend.arithmetic(cal.precision))
    p = cal.precision
    near_one = (1, (1 << p) - 1, -p)  # U* = 1 − 2**-p: noise of about λ·2**-p
    lo, hi = Fraction(cal.lower), Fraction(cal.upper)
    values = [lo, hi, (lo + hi) / 2, lo - 100, hi + 100, Fraction(1, 3)]
    xs = [pipe.centre(v) for v in values] * 3
    draws = [near_one] * len(values) + [(-1, *near_one[1:])] * len(values)
    draws += SeededSource(5).draws_raw(len(values), p)
    assert pipe.run_many(xs, draws) == [pipe.run(x, d) for x, d in zip(xs, draws, strict=True)]
    want = [
        reference_stages(_ref(kw), v, Fraction(d[1], 1 << -d[2]), d[0])["output"]
        for v, d in zip(values * 3, draws, strict=True)
    ]
    assert [bits(o) for o in pipe.run_many(xs, draws)] == [bits(o) for o in want]


def _ref(kw):
    lo, hi = kw["clamp_bounds"]
    return reference_calibration(
        epsilon=kw["epsilon"], sensitivity=kw["sensitivity"], lower=lo, upper=hi
    )
