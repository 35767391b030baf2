"""Step 1 and steps 8-9 of the pipeline against exact ``Fraction`` arithmetic.

``Pipeline.centre_ratio`` computes ``x = clamp_b((v − c)/Δ)`` exactly by one of three
routes (``c = 0`` and ``Δ = 1``; a power-of-two Δ and a dyadic value, by shifts; the
general rational formula), then clamps with a cheap bit-length test before the exact
comparison.  ``Pipeline.index_output`` releases grid index ``k`` through the grid
points ``±kmax`` computed when the pipeline is built.  Both are checked here against
the definitions of docs/semantics.md ([S7]–[S9]), computed with ``Fraction``s only,
over centres (0, 1 and others), sensitivities (1, 2, other powers of two, non-powers,
non-dyadic rationals), values at, just inside and just beyond ``±b``, and precisions
from 6 bits (where ``b``'s exponent can be positive: ``TinyMechanism``) to 118.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from tiny_mechanism import TinyMechanism

from snapcore.calibration._params import derive_calibration
from snapcore.pipeline._stages import Pipeline, add
from snapcore.plugins._manager import get_registries

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
    want = _round_nearest_even(exact, p)
    assert m * TWO**e == want and abs(m).bit_length() <= p


def _round_nearest_even(q: Fraction, p: int) -> Fraction:
    """``q`` rounded to ``p`` significant bits, to nearest, ties to even (Fractions only)."""
    if q == 0:
        return q
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < TWO**e:
        e -= 1
    ulp = TWO ** (e - p + 1)  # 2**e <= a < 2**(e+1)
    k, r = divmod(a / ulp, 1)
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and k % 2):
        k += 1
    return (k * ulp) if q > 0 else -(k * ulp)
