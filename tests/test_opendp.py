"""snapcore as OpenDP measurements: maps for every d_in, exactness, composition, refusals."""

from __future__ import annotations

import math
from fractions import Fraction

import gmpy2
import opendp.prelude as dp
import pytest
from opendp.mod import OpenDPException

import snapcore
from snapcore import SeededSource, SnappingMechanism
from snapcore.errors import ParameterError
from snapcore.opendp import (
    make_snapping,
    make_statistic,
    round_up,
    then_snapping,
    then_statistic,
)

FLOATS = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float))
DATA = [float(v) for v in range(0, 100, 3)]


def ru(q: Fraction) -> float:
    """Independent reference: q rounded up to a double by MPFR."""
    with gmpy2.context(gmpy2.ieee(64), round=gmpy2.RoundUp):
        return float(gmpy2.mpfr(gmpy2.mpq(q.numerator, q.denominator)))


def steps(d: Fraction, delta: Fraction) -> int:
    """The least k >= 0 with k·Δ >= d, checked on both sides."""
    k = int(d // delta)
    while k * delta < d:
        k += 1
    while k > 0 and (k - 1) * delta >= d:
        k -= 1
    return k


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [(Fraction(1, 2), Fraction(1)), (Fraction(1, 3), Fraction(7, 4)), (0.1, Fraction(100))],
)
def test_scalar_map_every_d_in(epsilon, delta) -> None:
    m = FLOATS >> then_snapping(
        epsilon=epsilon, sensitivity=delta, clamp_bounds=(-1000, 1000), source=SeededSource(1)
    )
    eps = Fraction(epsilon)
    ds = [0.0, 5e-324, 1e-300, 0.5, 1.0, 2.0, 3.0, 99.99, 1e6]
    for k in (1, 2, 3, 7):  # exactly k·Δ, and the doubles either side of it
        x = float(k * delta)
        ds += [math.nextafter(x, 0), x, math.nextafter(x, math.inf)]
    for d in ds:
        want = ru(eps * steps(Fraction(d), delta))
        got = m.map(d)
        assert got == want, (d, got, want)
        assert Fraction(got) >= eps * steps(Fraction(d), delta)  # never understated


def test_round_up_is_least_double_above() -> None:
    for q in (Fraction(1, 3), Fraction(1, 10), Fraction(2, 3) * 10**300, Fraction(1, 2)):
        f = round_up(q)
        assert f == ru(q) and Fraction(f) >= q and Fraction(math.nextafter(f, 0)) < q
    with pytest.raises(ParameterError, match="double"):
        round_up(Fraction(10) ** 400)


def test_scalar_releases_what_snapcore_releases() -> None:
    m = make_snapping(*FLOATS, Fraction(1, 3), 2, (-50, 50), source=SeededSource(9))
    ref = SnappingMechanism(
        epsilon=Fraction(1, 3), sensitivity=2, clamp_bounds=(-50, 50), source=SeededSource(9)
    )
    for x in (0.0, 1.5, -49.0, 1e9):
        assert m(x) == float(ref.release(x))
    ints = make_snapping(
        dp.atom_domain(T=int), dp.absolute_distance(T=int), 1, 1, (0, 10), source=SeededSource(3)
    )
    assert ints.map(3) == 3.0 and 0 <= ints(4) <= 10


def test_float_sum_slack_versus_exact_statistic() -> None:
    # OpenDP's float sum reports a stability of 100.00000000000148 for one record of
    # [0, 100] (its rounding slack); chained into snapping calibrated for Δ = 100 that
    # crosses into a second group step: 2ε.  The whole snapcore statistic costs ε.
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0), nan=False), size=len(DATA))
    chained = (
        (domain, dp.symmetric_distance())
        >> dp.t.then_sum()
        >> then_snapping(epsilon=1, sensitivity=100, clamp_bounds=(-1e5, 1e5))
    )
    assert chained.map(2) == 2.0  # one replaced record is symmetric distance 2
    whole = (domain, dp.change_one_distance()) >> then_statistic("sum", 1)
    assert whole.map(1) == 1.0


@pytest.mark.parametrize(
    ("metric", "statistic", "options"),
    [
        (dp.change_one_distance(), "mean", {}),
        (dp.change_one_distance(), "variance", {}),
        (dp.change_one_distance(), "sum", {}),
        (dp.symmetric_distance(), "sum", {"n": 1000}),
        (dp.symmetric_distance(), "count", {"n": 1000}),
        (dp.symmetric_distance(), "histogram", {"n": 1000, "bins": [0, 30, 60, 100]}),
    ],
)
def test_statistic_maps_match_snapcore_accounting(metric, statistic, options) -> None:
    eps = Fraction(2, 7)
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0), nan=False))
    m = make_statistic(domain, metric, statistic, eps, source=SeededSource(4), **options)
    r = snapcore.release(
        statistic,
        DATA,
        epsilon=eps,
        data_bounds=(0, 100) if statistic in ("mean", "variance", "sum") else None,
        source=SeededSource(4),
        relation="replace" if "ChangeOne" in str(metric) else "add-remove",
        **options,
    )
    # The same exact release, bit for bit.
    assert m(DATA) == (list(r.value) if isinstance(r.value, tuple) else r.value)
    # d_in neighbours cost d_in releases' worth (group privacy): d_in·ε, rounded up,
    # with ε the one release's cost; both against the hand-derived exact value.
    assert r.epsilon_spent == eps
    for d in range(0, 60):
        assert m.map(d) == ru(d * eps), (d, m.map(d))


def test_composition_filter_odometer_and_zcdp() -> None:
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0), nan=False))
    metric = dp.change_one_distance()
    mean = make_statistic(domain, metric, "mean", Fraction(1, 3), source=SeededSource(1))
    var = make_statistic(domain, metric, "variance", 0.25, source=SeededSource(2))
    both = dp.c.make_composition([mean, var])
    want = Fraction(1, 3) + Fraction(0.25)
    for d in (1, 2, 5):
        assert both.map(d) >= ru(d * want) and Fraction(both.map(d)) >= d * want
    assert len(both(DATA)) == 2

    adaptive = dp.c.make_adaptive_composition(
        domain, metric, dp.max_divergence(), d_in=1, d_mids=[mean.map(1), var.map(1)]
    )
    q = adaptive(DATA)
    q(mean), q(var)
    with pytest.raises(OpenDPException):
        q(mean)  # out of queries

    odometer = dp.c.make_fully_adaptive_composition(domain, metric, dp.max_divergence())
    filt = dp.c.make_privacy_filter(odometer, d_in=1, d_out=mean.map(1) * 2)
    fq = filt(DATA)
    fq(mean), fq(mean)
    with pytest.raises(OpenDPException, match="exhausted"):
        fq(var)
    oq = odometer(DATA)
    oq(mean), oq(var)
    assert oq.privacy_loss(1) >= float(want)

    zcdp = dp.c.make_pureDP_to_zCDP(mean)
    assert zcdp.map(1) >= float(Fraction(1, 3) ** 2 / 2)


def test_refusals() -> None:
    build = then_snapping(epsilon=1, sensitivity=1, clamp_bounds=(0, 1))
    with pytest.raises(ParameterError, match="admits NaN"):
        (dp.atom_domain(T=float), dp.absolute_distance(T=float)) >> build
    with pytest.raises(ParameterError, match="atom_domain"):
        (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()) >> build
    with pytest.raises(ParameterError, match="absolute_distance"):
        make_snapping(dp.atom_domain(T=int), dp.absolute_distance(T=float), 1, 1, (0, 1))
    with pytest.raises(ParameterError, match="sensitivity"):
        make_snapping(*FLOATS, 1, 0, (0, 1))
    m = make_snapping(*FLOATS, 1, 1, (0, 1))
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(OpenDPException, match="d_in"):
            m.map(bad)

    vec = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False))
    with pytest.raises(ParameterError, match="change_one_distance"):
        make_statistic(vec, dp.insert_delete_distance(), "mean", 1)
    with pytest.raises(ParameterError, match="supports relation"):
        make_statistic(vec, dp.symmetric_distance(), "mean", 1)  # mean is replace-only
    with pytest.raises(ParameterError, match="columns"):
        make_statistic(vec, dp.change_one_distance(), "covariance", 1)
    with pytest.raises(ParameterError, match="vector_domain"):
        make_statistic(dp.atom_domain(T=float, nan=False), dp.change_one_distance(), "mean", 1)
    with pytest.raises(ParameterError, match="admits NaN"):
        make_statistic(
            dp.vector_domain(dp.atom_domain(T=float)), dp.change_one_distance(), "mean", 1
        )
    # Parameters are checked at construction (on public stand-in data, no draw).
    with pytest.raises(ParameterError, match="needs n="):
        make_statistic(vec, dp.symmetric_distance(), "sum", 1)
    with pytest.raises(ParameterError, match="epsilon"):
        make_statistic(vec, dp.change_one_distance(), "mean", -1)
    with pytest.raises(ParameterError, match="bounds"):
        make_statistic(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.change_one_distance(),
            "mean",
            1,
        )
    with pytest.raises(ParameterError, match="size"):
        make_statistic(
            dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=5),
            dp.change_one_distance(),
            "mean",
            1,
            n=6,
        )
