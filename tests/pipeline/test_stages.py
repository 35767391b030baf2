"""The mechanism's exact stages as one Pipeline (snapcore.pipeline._stages).

- **Ties to even** in the *add* stage: an exact sum ``x + N`` on a tie rounds to the
  neighbour with an even mantissa (``snapref.round_p``).
- **The endpoint rule** (docs/semantics.md [S9]): a clamped ``z′ = ±b`` gives the user's
  endpoint itself, bit for bit, for any ε, Δ and bounds (floats and Fractions), e.g.
  ε = 1, Δ = 0.7, bounds (−2, 0) gives 0.0, not c + Δ·b ≈ −1.67e−36.
- **The grid path needs no output clamp**: ``c + Δ·k·Λ`` for the outermost grid points
  strictly inside ``(−b, b)`` lies strictly inside the interval (the premise of the
  proof in :meth:`snapcore.pipeline._stages.Pipeline.grid_output`), and its double lies
  in ``[lower, upper]``.
- *snap* is ``⌊y/Λ + 1/2⌋`` for any dyadic ``y``; ``run_many`` is ``run`` element by
  element, against the reference's outputs.
- **Centring and output against Fractions** (docs/semantics.md [S7]–[S9]):
  ``Pipeline.centre_ratio`` computes ``x = clamp_b((v − c)/Δ)`` exactly by one of three
  routes (``c = 0`` and ``Δ = 1``; a power-of-two Δ and a dyadic value, by shifts; the
  general rational formula), then clamps with a cheap bit-length test before the exact
  comparison; ``Pipeline.index_output`` releases grid index ``k`` through the grid
  points ``±kmax`` computed when the pipeline is built.  Both are checked over centres
  (0, 1 and others), sensitivities (1, 2, other powers of two, non-powers, non-dyadic
  rationals), values at, just inside and just beyond ``±b``, and precisions from 6 bits
  (where ``b``'s exponent can be positive: ``TinyMechanism``) to 118.

The stages' outputs for generated parameters and draws are compared with the reference
in ``tests/pipeline/test_reference.py``.
Reproduce a failure with the ``@reproduce_failure`` line hypothesis prints.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st
from param_errors import raises_param
from rounding_cases import ties
from snapref import RN, reference_calibration, reference_stages, round_p
from tiny_mechanism import TinyMechanism

from snapcore import SnappingMechanism
from snapcore.calibration._params import calibrate, derive_calibration
from snapcore.exact._dyadic import to_fraction
from snapcore.pipeline._stages import Pipeline, add, snap
from snapcore.plugins._manager import get_registries
from snapcore.randomness._sources import SeededSource

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_pipeline_refuses_an_arithmetic_of_another_precision():
    cal = calibrate(epsilon=1.0, clamp_bound=8.0)
    arith = get_registries().backends.create("mpfr").arithmetic(cal.precision + 1)
    with raises_param(["arith", str(cal.precision), str(cal.precision + 1)]):
        Pipeline(cal, arith)


# -- the add stage ----------------------------------------------------------------------


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


# -- the endpoint rule (docs/semantics.md [S9]) ----------------------------------------

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
        out = pipe.grid_output(k, cal.granularity_log2)
        assert float(cal.lower) <= out <= float(cal.upper)
        assert out == float(exact)  # one rounding of the exact value
    # Through the public path too: the outermost grid point, reached with tiny noise.
    u = 1 - Fraction(1, 1 << cal.precision)
    for value in (float(cal.lower), float(cal.upper)):
        out = mech.transform(value, u, 1)
        assert float(cal.lower) <= out <= float(cal.upper)


# -- the snapping stage and the list path ------------------------------------------------


@SETTINGS
@given(m=st.integers(-(2**130), 2**130), e=st.integers(-200, 60), L=st.integers(-150, 60))
def test_snap_is_floor_of_y_over_lambda_plus_half(m, e, L):
    """Stage *snap* ([S7]) for any dyadic y, also when y's exponent is at or above L."""
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


# -- centring and output against Fractions -------------------------------------------


TWO = Fraction(2)

#: (lower, upper): centres 0, 1, −1, a large one, a tiny one, and an odd dyadic one.
BOUNDS = st.sampled_from(
    [
        (-1.0, 1.0),
        (0.0, 2.0),
        (-1.0, 3.0),
        (-3.0, 1.0),
        (-1e6, 3e6),
        (2.0**-30, 2.0**-20),
        (-0.3, 0.7),
        (1e15, 1e15 + 2**20),
        (-8.0, 8.0),
        (2.0**-40, 2.0**-39),  # with Δ = 2**30: b = 2**-71, exponent far below -p
    ]
)
#: Δ: 1 and 2 (the routes that test Δ's value), other powers of two above and below
#: 1, non-powers of two, non-dyadic rationals.
DELTAS = st.sampled_from(
    [
        Fraction(1),
        Fraction(2),
        Fraction(1, 2),
        TWO**-20,
        TWO**30,
        Fraction(3),
        Fraction(1, 3),
        Fraction(0.1),
        Fraction(5, 4),
        Fraction(7, 10),
    ]
)
PRECISIONS = st.sampled_from([6, 8, 12, 53, 118])


def _pipeline(lower: float, upper: float, delta: Fraction, p: int, epsilon: Fraction):
    cal = derive_calibration(
        epsilon=epsilon,
        lower=Fraction(lower),
        upper=Fraction(upper),
        sensitivity=delta,
        precision=p,
    )
    arith = get_registries().backends.create("mpfr").arithmetic(p)
    return cal, Pipeline(cal, arith)


def _values(c: Fraction, delta: Fraction, b: Fraction, extra: list[Fraction]) -> list[Fraction]:
    """Values at, just inside and just beyond ``c ± Δ·b``, the centre, and ``extra``."""
    out = [c, c + delta, c - delta, *extra]
    for s in (1, -1):
        edge = c + s * delta * b
        for t in (Fraction(0), TWO**-60, -(TWO**-60), Fraction(1, 3), -Fraction(1, 3)):
            out.append(edge + s * t * delta)  # t from the edge, in units of Δ
            out.append(edge + s * t * delta * b)  # and relative to b
        out += [edge * 2, edge + s * delta * b * 1000]
    return out


@settings(max_examples=150, deadline=None)
@given(
    bounds=BOUNDS,
    delta=DELTAS,
    p=PRECISIONS,
    extra=st.lists(
        st.floats(-1e16, 1e16, allow_nan=False).map(Fraction)
        | st.builds(Fraction, st.integers(-(10**12), 10**12), st.integers(1, 10**6)),
        max_size=6,
    ),
)
@example(bounds=(2.0**-40, 2.0**-39), delta=TWO**30, p=6, extra=[])  # |b's exponent| > 2**p
def test_centre_is_the_exact_clamped_quotient(bounds, delta, p, extra):
    lower, upper = bounds
    cal, pipe = _pipeline(lower, upper, delta, p, Fraction(1))
    assert pipe.calibration is cal
    c = (Fraction(lower) + Fraction(upper)) / 2
    b = cal.unit_clamp_bound
    for v in _values(c, delta, b, extra):
        want = min(max((v - c) / delta, -b), b)
        n, d = pipe.centre_ratio(v.numerator, v.denominator)
        assert d > 0 and Fraction(n, d) == want, (v, n, d)
        assert Fraction(*pipe.centre(v)) == want


def _reference_output(k: int, L: int, b: Fraction, c: Fraction, delta: Fraction, lo, hi):
    """[S8]–[S9]: ``z′ = clamp_b(kΛ)``; ``±b`` gives the endpoint, else ``RN(c + Δ·z′)``."""
    z = min(max(k * TWO**L, -b), b)
    if z == b:
        return hi
    if z == -b:
        return lo
    return float(c + delta * z)


@settings(max_examples=60, deadline=None)
@given(
    bounds=BOUNDS,
    delta=DELTAS,
    p=st.sampled_from([6, 7, 8, 10, 118]),
    eps_log2=st.integers(-6, 12),
    ks=st.lists(st.integers(-(2**70), 2**70), max_size=4),
)
def test_index_output_is_the_clamped_grid_output(bounds, delta, p, eps_log2, ks):
    """``index_output(k) == output(clamp(k))`` by the definition, for ``k`` around
    ``±kmax`` (``kmax = ⌊b/Λ⌋``) — at small precisions ``b``'s exponent can exceed
    ``L``, and ``kmax`` is then ``b``'s mantissa shifted up."""
    assume(TWO**eps_log2 > 4 * TWO**-p)  # ε > 2η, else ε′ is not positive
    lower, upper = bounds
    cal, pipe = _pipeline(lower, upper, delta, p, TWO**eps_log2)
    L, b = cal.granularity_log2, cal.unit_clamp_bound
    c = (Fraction(lower) + Fraction(upper)) / 2
    kmax = (b / TWO**L).__floor__()
    window = [j * s for s in (1, -1) for j in (kmax - 1, kmax, kmax + 1, kmax + 2, 2 * kmax + 5)]
    for k in [0, 1, -1, *window, *ks]:
        want = _reference_output(k, L, b, c, delta, float(lower), float(upper))
        assert pipe.index_output(k) == want, (k, kmax)


def test_index_output_with_a_positive_bound_exponent():
    """A 6-bit calibration whose ``b = 48·2**3`` has an exponent above ``L = 0``
    (ε = 100, so ``λ = RU(1/ε′) < 1``): ``kmax = b/Λ = 384`` exactly, the grid point
    ``384·Λ = b`` is the endpoint, ``383`` is not."""
    mech = TinyMechanism(epsilon=100, lower=-384, upper=384, precision=6)
    cal, pipe = mech.calibration, mech._pipe
    bm, be = cal.unit_clamp_bound_dyadic
    assert (bm, be) == (48, 3) and cal.granularity_log2 == 0
    assert pipe.index_output(384) == 384.0 and pipe.index_output(-384) == -384.0
    assert pipe.index_output(383) == 383.0 and pipe.index_output(-383) == -383.0
    assert pipe.index_output(385) == 384.0 and pipe.index_output(-(10**9)) == -384.0


@settings(max_examples=100, deadline=None)
@given(
    p=st.sampled_from([6, 8, 53, 118]),
    xn=st.integers(-(2**80), 2**80),
    xd=st.integers(1, 10**6).map(lambda d: 3 * d),
    ne=st.integers(-8, 40),
    data=st.data(),
)
def test_add_rounds_a_non_dyadic_x_plus_a_large_noise_once(p, xn, xd, ne, data):
    """Stage 6 for a non-dyadic ``x`` (Δ not a power of two) and a p-bit noise
    ``N = nm·2**ne`` with ``ne >= 0`` as often as not (a noise at least ``2**(p−1)``,
    which small precisions reach): ``y = RN_p(x + N)``, to nearest, ties to even."""
    nm = data.draw(st.integers(2 ** (p - 1), 2**p - 1)) * data.draw(st.sampled_from([1, -1]))
    m, e = add((xn, xd), (nm, ne), p)
    exact = Fraction(xn, xd) + nm * TWO**ne
    want = round_p(exact, p, RN)
    assert m * TWO**e == want and abs(m).bit_length() <= p
