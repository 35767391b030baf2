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
