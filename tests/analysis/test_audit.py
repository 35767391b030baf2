"""The exact privacy audit (snapcore.analysis._audit): against brute force, against the
analytic snapped-Laplace law, and over a grid of parameters for every backend."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, strategies as st
from tiny_mechanism import TinyMechanism, brute_force

import snapcore
from snapcore import SnappingMechanism
from snapcore.analysis._audit import (
    ExactOutputDistribution,
    UGrid,
    _dyadic_sum,
    audit,
    compare_ln,
    exact_output_distribution,
)
from snapcore.errors import AuditError, AuditLimitError, ParameterError
from snapcore.exact._dyadic import to_fraction
from snapcore.plugins._manager import get_registries

BACKENDS = get_registries().backends.available()


# ----------------------------------------------------------------------------------
# The grid of U*
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [2, 3, 5, 53])
def test_ugrid_enumerates_q_bit_floats_in_order_with_ulp_masses(q):
    g = UGrid(q)
    # Independent listing of the q-bit floats in [2**-6, 1), increasing (for large q,
    # only the 100 largest).
    ms = range(1 << (q - 1), 1 << q) if q <= 5 else range((1 << q) - 100, 1 << q)
    listed = sorted(Fraction(m, 1 << (q - 1 + e)) for e in range(1, 7) for m in ms)
    if q > 5:
        listed = listed[-100:]
    first = g.top - len(listed) + 1
    assert [g.value(i) for i in range(first, g.top + 1)] == listed
    assert g.value(g.top) == 1 - Fraction(1, 1 << q)
    assert g.cdf(g.top) == 1
    for i in range(first, g.top + 1):
        u = g.value(i)
        assert g.index_floor(u) == i
        # P(U* = u) = ulp_q(u): the gap to the next q-bit float above u.
        assert g.cdf(i) - g.cdf(i - 1) == (g.value(i + 1) if i < g.top else 1) - u
    assert g.value(g.index_of_power(9)) == Fraction(1, 2**9)


def test_ugrid_index_floor_between_points():
    g = UGrid(4)
    u = Fraction(1, 3)
    i = g.index_floor(u)
    assert g.value(i) <= u < g.value(i + 1)


# ----------------------------------------------------------------------------------
# Certified comparison
# ----------------------------------------------------------------------------------


def test_compare_ln_decides_tiny_gaps():
    eps = Fraction(1)
    mpmath.mp.prec = 600
    e_hi = Fraction(mpmath.nstr(mpmath.e, 170, min_fixed=0, max_fixed=0)) + Fraction(1, 10**160)
    e_lo = e_hi - Fraction(2, 10**160)
    s_hi, d_hi = compare_ln(e_hi, eps)
    s_lo, d_lo = compare_ln(e_lo, eps)
    assert (s_hi, s_lo) == (1, -1)
    assert 0 < d_hi < 1e-159 and -1e-159 < d_lo < 0
    assert compare_ln(Fraction(1), Fraction(0)) == (0, 0.0)
    s, d = compare_ln(Fraction(2), Fraction(0))
    assert s == 1 and d == math.log(2)


# ----------------------------------------------------------------------------------
# Brute force at tiny precision
# ----------------------------------------------------------------------------------


TINY = [
    # epsilon, lower, upper, sensitivity, precision, values
    (1, -8, 8, 1, 8, [0, 1, 8, 9, -8, Fraction(1, 3)]),
    (Fraction(1, 2), -3, 21, 2, 7, [0, 2, 21, 23, -5]),
    (4, 0, 3, Fraction(1, 4), 6, [Fraction(3, 2), Fraction(7, 4), 3, Fraction(13, 4)]),
    (Fraction(1, 8), -2, 2, 1, 8, [0, 1, 2, 3]),  # B < lambda: mostly clamped
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eps, lo, hi, delta, p, values", TINY)
def test_audit_matches_brute_force_at_tiny_precision(backend, eps, lo, hi, delta, p, values):
    mech = TinyMechanism(
        epsilon=eps, lower=lo, upper=hi, sensitivity=delta, precision=p, backend=backend
    )
    for v in values:
        got = exact_output_distribution(mech, v)
        assert got.as_dict() == brute_force(mech, v, p), (backend, eps, lo, hi, delta, p, v)


@pytest.mark.parametrize("q", [3, 5])
def test_audit_matches_brute_force_on_a_coarser_sampler_grid(q):
    mech = TinyMechanism(epsilon=1, lower=-8, upper=8, precision=8)
    for v in (0, Fraction(1, 3), 8):
        got = exact_output_distribution(mech, v, sampler_precision=q)
        assert got.as_dict() == brute_force(mech, v, q)


def test_tiny_brute_force_finds_what_audit_reports_as_loss():
    mech = TinyMechanism(epsilon=1, lower=-8, upper=8, precision=8)
    r = audit(mech, 0, 1)
    a, b = brute_force(mech, 0, 8), brute_force(mech, 1, 8)
    ratios = {o: max(a[o] / b[o], b[o] / a[o]) for o in a}
    assert set(a) == set(b)
    assert r.max_ratio == max(ratios.values())
    assert set(r.attained_at) == {o for o, x in ratios.items() if x == r.max_ratio}


# ----------------------------------------------------------------------------------
# At the real precision: against the analytic law of the snapped Laplace
# ----------------------------------------------------------------------------------


def snapped_laplace(x, lam, gran, b):
    """P(output = k·Λ) and P(output = ±b) for exact Laplace noise (no rounding)."""
    mpmath.mp.prec = 300

    def cdf(t):  # P(x + Lap(lam) <= t)
        t = mpmath.mpf(t.numerator) / t.denominator
        d = (t - (mpmath.mpf(x.numerator) / x.denominator)) / (
            mpmath.mpf(lam.numerator) / lam.denominator
        )
        return mpmath.exp(d) / 2 if d < 0 else 1 - mpmath.exp(-d) / 2

    kmax = math.floor(b / gran)
    out = {}
    for k in range(-kmax, kmax + 1):
        lo_t = gran * (k - Fraction(1, 2))
        hi_t = gran * (k + Fraction(1, 2))
        lo = 0 if k == -kmax and k * gran == -b else cdf(lo_t)
        hi = 1 if k == kmax and k * gran == b else cdf(hi_t)
        out[k * gran] = hi - lo
    if kmax * gran != b:
        out[b] = 1 - cdf(gran * (kmax + Fraction(1, 2)))
        out[-b] = cdf(-gran * (kmax + Fraction(1, 2)))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "kw, value",
    [
        (dict(epsilon=1.0, clamp_bound=8.0), 0.0),
        (dict(epsilon=1.0, clamp_bound=8.0), 5.25),
        (dict(epsilon=0.75, clamp_bound=10.0), -3.5),  # b not a multiple of Λ
        (dict(epsilon=4.0, clamp_bound=2.0), 1.0),
    ],
)
def test_audit_matches_analytic_snapped_laplace(backend, kw, value):
    m = SnappingMechanism(**kw, backend=backend)
    got = exact_output_distribution(m, value)
    x = Fraction(value)
    want = snapped_laplace(x, m.scale, m.granularity, m.unit_clamp_bound)
    assert sorted(got.as_dict()) == sorted(float(o) for o in want)
    for o, q in want.items():
        pq = got.probability(float(o))
        rel = abs(mpmath.mpf(pq.numerator) / pq.denominator - q) / q
        assert rel < mpmath.mpf(2) ** -100, (o, rel)


# ----------------------------------------------------------------------------------
# The grid: every audited loss <= epsilon, for every backend
# ----------------------------------------------------------------------------------

EPSILONS = [2.0**-10, 0.25, 1.0, 8.0]


def grid_configs(eps):
    """Bounds and sensitivities: symmetric/asymmetric, Δ != 1, B <= λ and B >> λ."""
    lam = 1 / eps
    small = lam / 2  # B <= lambda
    big = 40 * 2.0 ** math.ceil(math.log2(lam))  # B = 40 Λ >> lambda
    return [
        dict(clamp_bound=small),
        dict(clamp_bound=big),
        dict(clamp_bounds=(-big / 4, big), sensitivity=3.0),
        dict(clamp_bounds=(0.0, small * 0.75), sensitivity=0.5),
        dict(clamp_bound=big / 2, sensitivity=0.25),
    ]


def value_pairs(m):
    """Inside, at and outside the bounds; neighbours exactly one sensitivity apart."""
    lo, hi = m.clamp_bounds
    d = float(m.sensitivity)
    mid = (lo + hi) / 2
    pts = [mid, lo + (hi - lo) / 3, hi, lo, hi + d, lo - 2 * d, hi - d / 2]
    pairs = []
    for v in pts:
        for w in (v + d, v - d):
            if Fraction(w) - Fraction(v) in (Fraction(d), -Fraction(d)):
                pairs.append((v, w))
    return pairs


def _grid_cases():
    for eps in EPSILONS:
        for kw in grid_configs(eps):
            yield pytest.param(eps, kw, id=f"eps={eps}-{kw}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eps, kw", list(_grid_cases()))
def test_audited_loss_at_most_epsilon_on_grid(backend, eps, kw):
    m = SnappingMechanism(epsilon=eps, backend=backend, **kw)
    pairs = value_pairs(m)
    assert len(pairs) >= 10
    for v, w in pairs:
        r = audit(m, v, w)
        assert r.neighbouring and r.distance == 1
        assert r.max_ratio is not None, (v, w, r.verdict)
        assert r.private and r.excess < 0, (backend, eps, kw, v, w, r.verdict)
        assert r.loss <= eps
        # The worst case is within rounding of Laplace's e**(1/λ) (or 1: fully clamped).
        assert r.max_ratio <= Fraction(math.exp(float(1 / m.scale))) * (1 + Fraction(1, 10**12))
        assert r.distribution.total == 1 and r.neighbour_distribution.total == 1
        grid = m.granularity * m.sensitivity
        for o, _ in r.distribution.pmf:
            on_grid = ((Fraction(o) - m.calibration.centre) / grid).denominator == 1
            assert on_grid or o in m.clamp_bounds


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eps", [2.0**-10, 2.0**-4, 0.5, 1.0, 2.0, 8.0])
def test_audited_loss_at_most_epsilon_wide_grid(backend, eps, slow_size):
    lam = 1 / eps
    for B in slow_size((lam / 8, lam, 300 * 2.0 ** math.ceil(math.log2(lam))), (lam,)):
        for delta in slow_size((1.0, 7.0, 0.125), (7.0,)):
            m = SnappingMechanism(
                epsilon=eps, clamp_bounds=(-B / 3, B), sensitivity=delta, backend=backend
            )
            for v, w in value_pairs(m):
                r = audit(m, v, w)
                assert r.private, (backend, eps, B, delta, v, w, r.verdict)


# ----------------------------------------------------------------------------------
# The audit finds violations
# ----------------------------------------------------------------------------------


def test_seed_sampler_exceeds_epsilon():
    """docs/semantics.md [SD]: a double U* with eta = 2**-p leaks about 1e-16 beyond epsilon."""
    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    seed = audit(m, 0.0, 1.0, sampler_precision=53)
    assert not seed.private and 0 < seed.excess < 1e-15
    assert seed.loss >= 1.0
    ours = audit(m, 0.0, 1.0)
    assert ours.private and -1e-32 < ours.excess < 0


class _Misclaimed:
    """A mechanism whose noise is calibrated for a larger epsilon than it claims."""

    def __init__(self, claimed, actual, **kw):
        self._m = SnappingMechanism(epsilon=actual, **kw)
        self.calibration = SnappingMechanism(epsilon=claimed, **kw).calibration
        self.calibration = self._m.calibration.__class__(
            **{**_fields(self._m.calibration), "epsilon": Fraction(claimed)}
        )
        self.precision = self._m.precision
        self.backend = self._m.backend

    def transform(self, value, u, sign):
        return self._m.transform(value, u, sign)


def _fields(cal):
    import attrs

    return attrs.asdict(cal, recurse=False)


def test_audit_flags_a_mechanism_with_too_little_noise():
    m = _Misclaimed(1.0, 1.5, clamp_bound=8.0)
    r = audit(m, 0.0, 1.0)
    assert not r.private
    assert 0.49 < r.excess <= 0.5  # loss about 1.5 - 3e-34
    assert "NOT PRIVATE" in r.verdict


class _NonMonotone:
    def __init__(self):
        self._m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
        self.calibration, self.precision, self.backend = (
            self._m.calibration,
            self._m.precision,
            self._m.backend,
        )

    def transform(self, value, u, sign):
        out = self._m.transform(value, u, sign)
        if Fraction(1, 8) < u < Fraction(1, 4):  # swap two outputs in a band
            return -out
        return out


def test_audit_detects_non_monotone_map():
    with pytest.raises(AuditError, match="monotone"):
        audit(_NonMonotone(), 0.0, 1.0)


def test_infinite_loss_reported_when_supports_differ():
    mech = TinyMechanism(epsilon=1, lower=-8, upper=8, precision=8)

    class Shifted(TinyMechanism):
        def transform(self, value, u, sign):
            out = super().transform(value, u, sign)
            return out + (0.5 if value == 1 else 0.0)

    s = Shifted(epsilon=1, lower=-8, upper=8, precision=8)
    r = audit(s, 0, 1)
    assert r.max_ratio is None and r.loss == math.inf and not r.private
    assert "infinite" in r.verdict
    assert audit(mech, 0, 1).max_ratio is not None


# ----------------------------------------------------------------------------------
# Limits and bad input
# ----------------------------------------------------------------------------------


def test_refuses_too_many_outputs_before_any_work():
    m = SnappingMechanism(epsilon=8.0, clamp_bound=2.0**20)
    with pytest.raises(AuditLimitError, match=r"max_outputs = 32768"):
        audit(m, 0.0, 1.0)

    class Counting:
        calls = 0
        calibration, precision, backend = m.calibration, m.precision, m.backend

        def transform(self, *a):
            Counting.calls += 1
            return m.transform(*a)

    with pytest.raises(AuditLimitError):
        audit(Counting(), 0.0, 1.0, max_outputs=100)
    assert Counting.calls == 0


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1", None])
def test_rejects_bad_values(bad):
    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    with pytest.raises(ParameterError, match=r"value|neighbour"):
        audit(m, bad, 1.0)
    with pytest.raises(ParameterError, match="neighbour"):
        audit(m, 0.0, bad)


@pytest.mark.parametrize("q", [1, 119, 53.0, True])
def test_rejects_bad_sampler_precision(q):
    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    with pytest.raises(ParameterError, match="sampler_precision"):
        audit(m, 0.0, 1.0, sampler_precision=q)


def test_not_neighbours_is_said():
    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    r = audit(m, 0.0, 2.0)
    assert not r.neighbouring and r.distance == 2
    clamped = audit(m, 8.0, 9.0)  # both clamp to b: identical distributions
    assert clamped.max_ratio == 1 and clamped.loss == 0 and clamped.loss_decimal == "0"
    assert clamped.more_likely_under == "neither" and len(clamped.attained_at) == 9
    assert "not neighbours" in r.verdict


def test_exported():
    assert snapcore.audit is audit
    assert "audit" in snapcore.__all__


def test_progress_bar_runs(capsys):
    pytest.importorskip("tqdm")
    m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    r = audit(m, 0.0, 1.0, progress=True)
    assert r.private
    assert "audit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kw, value",
    [
        (dict(epsilon=1.0, clamp_bounds=(-3.0, 13.0), sensitivity=2.0), 5.5),
        (dict(epsilon=0.5, clamp_bound=6.0), 6.0),
    ],
)
def test_exact_distribution_is_the_same_on_every_backend(kw, value):
    dists = {
        be: exact_output_distribution(SnappingMechanism(backend=be, **kw), value).pmf
        for be in BACKENDS
    }
    assert len(set(dists.values())) == 1, list(dists)


def test_clamped_outputs_are_the_user_endpoints():
    """A clamped z′ = ±b is released as the interval's endpoint (docs/semantics.md [S9]: outputs
    are grid points inside the interval plus the two endpoints), even when
    b = RN(B/Δ) differs from B/Δ."""
    m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), sensitivity=3.0)
    outs = [o for o, _ in exact_output_distribution(m, 50.0).pmf]
    assert outs[0] == 0.0 and outs[-1] == 100.0


@pytest.mark.parametrize(
    "kw, values, q",
    [
        # Fractions for ε and Δ, Δ not a power of two: x = (v − c)/Δ is not dyadic.
        (
            dict(epsilon=Fraction(3, 4), sensitivity=Fraction(5, 3), clamp_bound=12.0),
            [0.0, 7],
            None,
        ),
        # values at and beyond the clamp bounds: both signs reach the clamped endpoints.
        (dict(epsilon=1.0, clamp_bounds=(-3.0, 13.0), sensitivity=3.0), [-3.0, 13.0, 40], None),
        # b a multiple of Λ (the index ±b/Λ is itself the endpoint), a Fraction value.
        (dict(epsilon=2.0, clamp_bound=8.0), [Fraction(-13, 4), 8.0], None),
        # a coarse sampler grid (q = 53) and a wide ε.
        (dict(epsilon=Fraction(1, 3), clamp_bounds=(0.0, 40.0), sensitivity=7), [21.5], 53),
    ],
)
def test_direct_walk_gives_the_same_distribution_as_transform(kw, values, q):
    """The fast path (grid indices through Pipeline.snap_index, boundaries guessed with MPFR)
    gives exactly the distribution of the straightforward walk over ``transform``."""
    from snapcore.analysis import _audit as auditing

    m = SnappingMechanism(**kw)
    for v in values:
        assert auditing._DirectRun.of(m, Fraction(v), q or m.precision) is not None
        fast = exact_output_distribution(m, v, sampler_precision=q)
        slow = exact_output_distribution(m, v, sampler_precision=q, fast=False)
        assert fast.pmf == slow.pmf, (kw, v)
        assert fast.value == slow.value and fast.total == 1
        outs = [o for o, _ in fast.pmf]
        lo, hi = m.calibration.lower, m.calibration.upper
        assert outs[0] == lo and outs[-1] == hi  # the clamped endpoints have mass
        # Exact guesses (up to ties): each boundary costs two evaluations, one per side.
        assert fast.evaluations <= 2 * len(fast) + 4


@pytest.mark.parametrize("value", [0.0, 1.0, 999.5])
def test_audit_costs_two_evaluations_per_output(value):
    """The boundary guesses are exact, so the walk's cost is linear in b/Λ."""
    m = SnappingMechanism(epsilon=1.0, clamp_bound=1000.0)
    d = exact_output_distribution(m, value)
    assert len(d) == 1001 and d.total == 1
    assert d.evaluations <= 2 * len(d) + 4


def test_exact_moments_are_the_fraction_sums():
    mech = TinyMechanism(epsilon=4, lower=0, upper=3, sensitivity=Fraction(1, 4), precision=6)
    for v in (Fraction(7, 4), 3, Fraction(-1, 3)):
        d = exact_output_distribution(mech, v)
        assert any(Fraction(o).denominator > 1 for o, _ in d.pmf)  # fractional outputs
        mean = sum((Fraction(o) * q for o, q in d.pmf), Fraction(0))
        var = sum(((Fraction(o) - mean) ** 2 * q for o, q in d.pmf), Fraction(0))
        assert d.moments() == (mean, var)
    with pytest.raises(AuditError, match="dyadic"):
        ExactOutputDistribution(
            value=0.0, pmf=((0.0, Fraction(1, 3)), (1.0, Fraction(2, 3)))
        ).moments()
    with pytest.raises(AuditError, match="sum to"):
        ExactOutputDistribution(
            value=0.0, pmf=((0.0, Fraction(1, 4)), (1.0, Fraction(1, 2)))
        ).moments()


@given(
    st.lists(st.tuples(st.integers(-(1 << 130), 1 << 130), st.integers(-20000, 200)), max_size=40)
)
def test_dyadic_sum_is_the_exact_sum(terms: list[tuple[int, int]]) -> None:
    m, e = _dyadic_sum(terms)
    assert Fraction(m) * Fraction(2) ** e == sum(
        (Fraction(a) * Fraction(2) ** b for a, b in terms), Fraction(0)
    )


# ----------------------------------------------------------------------------------
# The dyadic probabilities against plain Fraction arithmetic
# ----------------------------------------------------------------------------------


def _cdf(u: Fraction, q: int) -> Fraction:
    """``P(U* <= u)`` for a q-bit grid point ``u`` in (0, 1): ``u`` plus the gap to
    the next q-bit float above, ``2**(floor(log2 u) + 1 − q)``."""
    n, d = u.numerator, u.denominator
    assert d & (d - 1) == 0  # grid points are dyadic
    floor_log2 = n.bit_length() - d.bit_length()
    return u + Fraction(2) ** (floor_log2 + 1 - q)


def fraction_distribution(mech, value, q=None):
    """The output distribution computed with Fractions only, from the intervals of
    ``U*`` that ``transform`` maps to one output (the walk over ``transform``): each
    interval ``[low, high]`` of grid points has mass ``(P(U* <= high) − P(U* < low))/2``
    (the sign is ±1 with probability 1/2), and the last one of a sign everything below
    ``high``."""
    from snapcore.analysis._audit import _boundary_guesser, _Walker, tail_exponent

    q = mech.precision if q is None else q
    grid = UGrid(q)
    tail = grid.index_of_power(tail_exponent(mech.calibration))
    pmf: dict[float, Fraction] = {}
    for sign in (1, -1):

        def f(i, sign=sign):
            return mech.transform(value, grid.value(i), sign)

        guess = _boundary_guesser(mech.calibration, Fraction(value), sign, grid)
        for o, low, high in _Walker(f, grid, sign, tail, guess, 1 << 15).walk():
            below = Fraction(0) if low is None else _cdf(grid.value(low - 1), q)
            pmf[o] = pmf.get(o, Fraction(0)) + (_cdf(grid.value(high), q) - below) / 2
    return tuple(sorted(pmf.items()))


def fraction_audit(pv: dict, pw: dict):
    """``(R, attained_at, more_likely_under)`` by Fraction division; R None (infinite)
    when the supports differ."""
    only = [o for o in sorted(set(pv) | set(pw)) if (o in pv) != (o in pw)]
    if only:
        return None, tuple(only), "value" if only[0] in pv else "neighbour"
    ratios = {o: max(pv[o] / pw[o], pw[o] / pv[o]) for o in pv}
    r = max(ratios.values())
    attained = tuple(o for o in sorted(ratios) if ratios[o] == r)
    under = "neither" if r == 1 else "value" if pv[attained[0]] > pw[attained[0]] else "neighbour"
    return r, attained, under


class _ShiftedTiny(TinyMechanism):
    """Moves the outputs of the input 1 by 0.5: the two supports are disjoint."""

    def transform(self, value, u, sign):
        out = super().transform(value, u, sign)
        return out + (0.5 if value == 1 else 0.0)


DYADIC_CASES = [
    # tails down to about e**-200 = 2**-289, far below a p-bit ulp of 1
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=200.0), 0.0, 1.0, None,
                 True, id="tails"),
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=200.0), 199.5, 200.5, None,
                 True, id="tails-at-the-bound"),
    pytest.param(lambda: SnappingMechanism(epsilon=Fraction(3, 4), sensitivity=Fraction(5, 3),
                                           clamp_bounds=(-7.0, 30.0), backend="mpmath"),
                 Fraction(2), Fraction(11, 3), None, True, id="fraction-parameters-mpmath"),
    # three sensitivities apart: a loss of about 3
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=40.0), 0.0, 3.0, None,
                 False, id="not-private-far-pair"),
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=40.0), 0.0, 1.0, 53,
                 False, id="not-private-double-sampler"),
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=40.0), 0.5, 1.5, 12,
                 False, id="not-private-12-bit-sampler"),
    pytest.param(lambda: SnappingMechanism(epsilon=1.0, clamp_bound=40.0), 40.0, 41.0, None,
                 True, id="both-clamped"),
    pytest.param(lambda: _ShiftedTiny(epsilon=1, lower=-8, upper=8, precision=8), 0, 1, None,
                 False, id="infinite"),
]  # fmt: skip


@pytest.mark.parametrize("make, v, w, q, private", DYADIC_CASES)
def test_dyadic_audit_equals_fraction_arithmetic(make, v, w, q, private):
    """Every public number of an audit equals the same quantity computed with plain
    Fractions from the same intervals of ``U*`` (the probabilities, the pmf's sum, the
    moments, the largest ratio and where it is attained, the loss and the verdict)."""
    m = make()
    ref_v, ref_w = fraction_distribution(m, v, q), fraction_distribution(m, w, q)
    r = audit(m, v, w, sampler_precision=q)
    for ref, value, d in ((ref_v, v, r.distribution), (ref_w, w, r.neighbour_distribution)):
        assert d.pmf == ref and d.as_dict() == dict(ref) and len(d) == len(ref)
        assert d.value == float(value)
        assert d == exact_output_distribution(m, value, sampler_precision=q)
        assert sum(p for _, p in ref) == 1 == d.total
        for o, p in ref[:3] + ref[-3:] + ref[len(ref) // 2 : len(ref) // 2 + 1]:
            assert d.probability(o) == p
        assert d.probability(0.1234) == 0 and d.probability(math.nan) == 0
        mean = sum((Fraction(o) * p for o, p in ref), Fraction(0))
        var = sum(((Fraction(o) - mean) ** 2 * p for o, p in ref), Fraction(0))
        assert d.moments() == (mean, var)
        # The same distribution built from the reference's Fractions is equal to it.
        same = ExactOutputDistribution(value=d.value, pmf=ref, evaluations=d.evaluations)
        assert same == d and hash(same) == hash(d) and repr(same) == repr(d)
    want_r, want_at, want_under = fraction_audit(dict(ref_v), dict(ref_w))
    assert r.max_ratio == want_r
    assert r.attained_at == want_at and r.more_likely_under == want_under
    assert r.private is private
    if want_r is None:
        assert r.loss == r.excess == math.inf and r.loss_decimal == "inf"
        return
    mpmath.mp.prec = 400
    ln_r = mpmath.log(mpmath.mpf(want_r.numerator) / want_r.denominator)
    eps = mpmath.mpf(r.epsilon.numerator) / r.epsilon.denominator
    assert (ln_r <= eps) is private
    tol = mpmath.mpf(2) ** -49
    assert abs(r.loss - ln_r) <= tol * abs(ln_r)
    assert abs(r.excess - (ln_r - eps)) <= tol * abs(ln_r - eps)
    if want_r == 1:
        assert r.loss_decimal == "0"
    else:
        assert abs(mpmath.mpf(r.loss_decimal) - ln_r) <= abs(ln_r) * mpmath.mpf(10) ** -39
    assert r.verdict.startswith("private: " if private else "NOT PRIVATE: ")


def test_distribution_from_fractions_keeps_them():
    """A pmf given as Fractions: dyadic ones are held as the audit holds its own (equal
    to it); a non-dyadic one is kept as given, and only its moments are refused."""
    pmf = ((-1.0, Fraction(1, 4)), (0.5, Fraction(5, 8)), (3.0, Fraction(1, 8)))
    d = ExactOutputDistribution(value=0.0, pmf=list(pmf), evaluations=2)
    assert d.pmf == pmf and d.pmf is d.pmf and d.total == 1 and len(d) == 3
    assert d.probability(0.5) == Fraction(5, 8) and d.probability(1.0) == 0
    assert repr(d) == f"ExactOutputDistribution(value=0.0, pmf={pmf!r}, evaluations=2)"
    # E[out] = −1/4 + 5/16 + 3/8; E[out²] = 1/4 + 5/32 + 9/8 = 49/32
    assert d.moments() == (Fraction(7, 16), Fraction(49, 32) - Fraction(7, 16) ** 2)
    assert d != ExactOutputDistribution(value=0.0, pmf=pmf, evaluations=3)
    odd = ((0.0, Fraction(1, 3)), (1.0, Fraction(2, 3)))
    n = ExactOutputDistribution(value=0.0, pmf=odd)
    assert n.pmf == odd and n.total == 1 and n.probability(1.0) == Fraction(2, 3)
    assert n.as_dict() == dict(odd) and len(n) == 2
    assert n != ExactOutputDistribution(
        value=0.0, pmf=((0.0, Fraction(1, 4)), (1.0, Fraction(3, 4)))
    )
    with pytest.raises(AuditError, match="dyadic"):
        n.moments()
    third = ExactOutputDistribution(
        value=0.0, pmf=((Fraction(1, 3), Fraction(1, 2)), (1, Fraction(1, 2)))
    )
    with pytest.raises(AuditError, match=r"output Fraction\(1, 3\) is not a dyadic"):
        third.moments()
    for bad, rule in [
        (((1.0, Fraction(1, 2)), (0.0, Fraction(1, 2))), "distinct and sorted"),
        (((0.0, Fraction(1, 2)), (0.0, Fraction(1, 2))), "distinct and sorted"),
        (((0.0, Fraction(0)), (1.0, Fraction(1))), "positive Fractions"),
        (((0.0, 0.5), (1.0, Fraction(1, 2))), "positive Fractions"),
    ]:
        with pytest.raises(ValueError, match=rule):
            ExactOutputDistribution(value=0.0, pmf=bad)


def test_audit_builds_no_fraction_per_output(monkeypatch):
    """The audit's probabilities stay dyadic; a distribution's Fractions are built on
    the first access of its pmf, once."""
    from snapcore.analysis import _audit as auditing

    calls = []

    def counting(m, e):
        calls.append(e)
        return to_fraction(m, e)

    monkeypatch.setattr(auditing, "to_fraction", counting)
    m = SnappingMechanism(epsilon=1.0, clamp_bound=100.0)
    r = audit(m, 0.0, 1.0)
    assert r.private and calls == []
    pmf = r.distribution.pmf
    assert len(calls) == len(pmf) == len(r.distribution) and r.distribution.pmf is pmf


@pytest.mark.slow
def test_audit_memory_grows_linearly(slow_size):
    """The peak memory of an audit (result included) grows about ×4 for ×4 in b/Λ; with
    a Fraction per output, whose denominator grows with its depth in the tail, it grew
    ×5.3 from b/Λ = 250 to 1,000 and ×6.4 from 500 to 2,000."""
    import gc
    import tracemalloc

    def peak(clamp_bound):
        m = SnappingMechanism(epsilon=1.0, clamp_bound=clamp_bound)
        audit(m, 0.0, 1.0)  # caches filled outside the measurement
        gc.collect()
        tracemalloc.start()
        try:
            r = audit(m, 0.0, 1.0)
            top = tracemalloc.get_traced_memory()[1]  # the result still held: it counts
            assert r.private
            return top
        finally:
            tracemalloc.stop()

    small = slow_size(1000.0, 500.0)
    assert peak(4 * small) < 4.5 * peak(small)
