"""snapcore as OpenDP measurements: maps for every d_in, exactness, composition, refusals."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np
import opendp.prelude as dp
import pytest
from opendp.mod import OpenDPException

import snapcore
from snapcore import SeededSource, SnappingMechanism
from snapcore.adapters.opendp import (
    make_snapping,
    make_statistic,
    then_snapping,
    then_statistic,
)
from snapcore.errors import ParameterError
from snapcore.testing.sources import CountingSource

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


def test_a_map_whose_epsilon_overflows_a_double_refuses() -> None:
    m = FLOATS >> then_snapping(
        epsilon=1.0, sensitivity=5e-324, clamp_bounds=(-1e-310, 1e-310), source=SeededSource(1)
    )
    assert m.map(5e-324) == 1.0  # one step of Δ = 2**-1074
    with pytest.raises(OpenDPException, match="does not fit a double"):
        m.map(1e300)


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


# ----------------------------------------------------------------------------------
# Covariance: records of two numbers, OpenDP's array2_domain
# ----------------------------------------------------------------------------------

PAIRS = dp.numpy.array2_domain(num_columns=2, nan=False, T=float)
COV_BOUNDS = ((0, 10), (-5, 5))


def pairs_data(n: int = 200, seed: int = 0) -> np.ndarray:
    """Correlated records in [0, 10] x [-5, 5] (a few outside, so the clamp acts)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 11.0, n)
    return np.column_stack([x, (x - 5.0) * 0.8 + rng.normal(0.0, 1.0, n)])


@pytest.mark.parametrize("epsilon", [Fraction(1, 3), 0.1, Fraction(2, 7), 1])
def test_covariance_map_every_d_in(epsilon) -> None:
    m = make_statistic(
        PAIRS, dp.change_one_distance(), "covariance", epsilon, data_bounds=COV_BOUNDS
    )
    eps = Fraction(epsilon)
    # change_one_distance counts records in a u32: every d_in up to 2**32 - 1.
    for d in [*range(0, 80), 1000, 123457, 2**31 + 1, 2**32 - 1]:
        want = ru(d * eps)  # MPFR, rounded up: the group-privacy cost of d changed records
        assert m.map(d) == want, (d, m.map(d), want)
        assert Fraction(m.map(d)) >= d * eps
    for bad in (-1, 1.5, 2**32):  # not a record count: OpenDP refuses before the map
        with pytest.raises((OpenDPException, ValueError, TypeError)):
            m.map(bad)


@pytest.mark.parametrize(
    ("data", "seed"),
    [
        (pairs_data(), 11),
        (pairs_data(57, seed=3), 12),
        (np.array([[0, -5], [10, 5], [3, 1], [7, -2]], dtype=np.int64), 13),
    ],
)
def test_covariance_releases_what_snapcore_releases(data, seed) -> None:
    domain = dp.numpy.array2_domain(num_columns=2, nan=False, T=str(data.dtype)[0] + "64")
    domain = PAIRS if data.dtype == np.float64 else domain
    m = (domain, dp.change_one_distance()) >> then_statistic(
        "covariance", Fraction(1, 2), data_bounds=COV_BOUNDS, source=SeededSource(seed)
    )
    r = snapcore.release(
        "covariance",
        data,
        epsilon=Fraction(1, 2),
        data_bounds=COV_BOUNDS,
        source=SeededSource(seed),
    )
    got = m(data)
    assert type(got) is float and got == r.value  # the same draws, the same output
    assert r.epsilon_spent == Fraction(1, 2) and m.map(1) == 0.5


def test_covariance_bounds_from_the_domains_norm_and_size() -> None:
    # Rows in the L2 ball of radius 5 around (5, 0) have x in [0, 10] and y in [-5, 5].
    data = pairs_data(40, seed=5)
    data = data[np.linalg.norm(data - [5.0, 0.0], axis=1) <= 5.0]
    domain = dp.numpy.array2_domain(
        num_columns=2,
        nan=False,
        T=float,
        norm=5.0,
        p=2,
        origin=np.array([5.0, 0.0]),
        size=len(data),
    )
    m = make_statistic(domain, dp.change_one_distance(), "covariance", 1, source=SeededSource(8))
    r = snapcore.release(
        "covariance", data, epsilon=1, data_bounds=COV_BOUNDS, source=SeededSource(8)
    )
    assert m(data) == r.value
    assert r.data_bounds == COV_BOUNDS and r.n == len(data)
    assert r.sensitivity == Fraction(10 * 10, len(data))  # (b−a)(d−c)/n
    with pytest.raises(ParameterError, match="size"):
        make_statistic(domain, dp.change_one_distance(), "covariance", 1, n=len(data) + 1)


def select_column(j: int) -> Any:
    """Column j of the records: 1-stable from change_one_distance to change_one_distance
    (changing one record changes one element)."""
    return dp.t.make_user_transformation(
        PAIRS,
        dp.change_one_distance(),
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.change_one_distance(),
        function=lambda x: [float(v) for v in x[:, j]],
        stability_map=lambda d: d,
    )


def test_covariance_composes_with_another_snapcore_measurement() -> None:
    data = pairs_data()
    space = (PAIRS, dp.change_one_distance())
    cov = space >> then_statistic(
        "covariance", Fraction(1, 3), data_bounds=COV_BOUNDS, source=SeededSource(21)
    )
    mean_x = select_column(0) >> then_statistic(
        "mean", Fraction(1, 4), data_bounds=(0, 10), source=SeededSource(22)
    )
    session = dp.c.make_composition([cov, mean_x])
    for d in (1, 2, 3, 10):
        want = d * (Fraction(1, 3) + Fraction(1, 4))
        assert Fraction(session.map(d)) >= want and session.map(d) >= ru(want)
    got = session(data)
    ref_cov = snapcore.release(
        "covariance", data, epsilon=Fraction(1, 3), data_bounds=COV_BOUNDS, source=SeededSource(21)
    )
    ref_mean = snapcore.release(
        "mean",
        list(data[:, 0]),
        epsilon=Fraction(1, 4),
        data_bounds=(0, 10),
        source=SeededSource(22),
    )
    assert got == [ref_cov.value, ref_mean.value]

    # Through an odometer and a privacy filter: the budget of 1 allows cov + mean + cov
    # (1/3 + 1/4 + 1/3 = 11/12) and refuses a third covariance.
    counter = CountingSource(23)
    cov_counted = space >> then_statistic(
        "covariance", Fraction(1, 3), data_bounds=COV_BOUNDS, source=counter
    )
    odometer = dp.c.make_fully_adaptive_composition(*space, dp.max_divergence())
    queries = dp.c.make_privacy_filter(odometer, d_in=1, d_out=1.0)(data)
    queries(cov_counted), queries(mean_x), queries(cov_counted)
    drawn = counter.drawn
    assert drawn >= 2
    with pytest.raises(OpenDPException, match="exhausted"):
        queries(cov_counted)
    # OpenDP 0.16's filter invokes the measurement, then compares the pending loss with
    # its budget and discards the output: the refused query did draw (docs/embedding.md).
    assert counter.drawn == drawn + 1
    watched = odometer(data)
    watched(cov), watched(mean_x)
    assert Fraction(watched.privacy_loss(1)) >= Fraction(1, 3) + Fraction(1, 4)
    assert dp.c.make_pureDP_to_zCDP(cov).map(1) >= float(Fraction(1, 3) ** 2 / 2)


def test_covariance_refusals() -> None:
    c1 = dp.change_one_distance()
    kw: dict[str, Any] = {"data_bounds": COV_BOUNDS}
    # Wrong domain: one-column records, a bare atom, or floats that admit NaN.
    for domain in (
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.atom_domain(T=float, nan=False),
    ):
        with pytest.raises(ParameterError, match="array2_domain"):
            make_statistic(domain, c1, "covariance", 1, **kw)
    with pytest.raises(ParameterError, match="admits NaN"):
        make_statistic(dp.numpy.array2_domain(num_columns=2, T=float), c1, "covariance", 1, **kw)
    # Wrong arity: records of 3 numbers, or of an unknown number.
    for k in (3, 1, None):
        domain = dp.numpy.array2_domain(num_columns=k, nan=False, T=float)
        with pytest.raises(ParameterError, match="2 columns per record"):
            make_statistic(domain, c1, "covariance", 1, **kw)
    # ... and a single-column statistic on records of two numbers.
    with pytest.raises(ParameterError, match="vector_domain"):
        make_statistic(PAIRS, c1, "mean", 1, data_bounds=(0, 10))
    # Wrong metric: covariance is replace-only; other metrics are not neighbouring relations.
    with pytest.raises(ParameterError, match="supports relation"):
        make_statistic(PAIRS, dp.symmetric_distance(), "covariance", 1, n=100, **kw)
    with pytest.raises(ParameterError, match="change_one_distance"):
        make_statistic(PAIRS, dp.insert_delete_distance(), "covariance", 1, **kw)
    # Parameters, at construction: bounds missing or not one pair per column.
    with pytest.raises(ParameterError, match="needs data_bounds"):
        make_statistic(PAIRS, c1, "covariance", 1)
    with pytest.raises(ParameterError, match=r"one \(lower, upper\) pair per column"):
        make_statistic(PAIRS, c1, "covariance", 1, data_bounds=(0, 10))
    with pytest.raises(ParameterError, match="epsilon"):
        make_statistic(PAIRS, c1, "covariance", 0, **kw)
    # Data of the wrong shape at invocation: refused before any draw, values not shown.
    counter = CountingSource(1)
    m = make_statistic(PAIRS, c1, "covariance", 1, source=counter, **kw)
    secret = np.full((4, 3), 1234.5678)
    for bad in (secret, secret[:, 0], np.array([[1.0, math.nan]] * 4)):
        with pytest.raises(OpenDPException) as info:
            m(bad)
        assert "1234.5678" not in str(info.value)
    assert counter.drawn == 0


def test_ledger_budget_charged_per_invocation_before_noise_not_at_construction(
    tmp_path,
) -> None:
    """Building the measurement checks its parameters without charging the budget;
    each invocation commits its ε to the ledger before drawing."""
    from snapcore.releases._ledger import Ledger

    path = tmp_path / "b.ledger"
    Ledger.init(path, 1)
    budget = snapcore.Budget.from_ledger(path)
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False, bounds=(0.0, 10.0)), size=3)
    src = CountingSource(3)
    m = make_statistic(domain, dp.symmetric_distance(), "sum", 0.5, budget=budget, source=src)
    assert Ledger(path).entries == () and src.drawn == 0
    m([1.0, 2.0, 3.0])
    (entry,) = Ledger(path).entries
    assert entry.epsilon == Fraction(1, 2) and entry.status == "completed"
    assert src.drawn == 1
    m([1.0, 2.0, 3.0])
    drawn = src.drawn
    with pytest.raises(OpenDPException, match="BudgetExceededError"):
        m([1.0, 2.0, 3.0])
    assert src.drawn == drawn and Ledger(path).spent == 1
    with pytest.raises(ParameterError, match="budget"):
        make_statistic(domain, dp.symmetric_distance(), "sum", 0.5, budget=1)


def _count_pads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count padded calls: a statistic's whole release, and the mechanism's releases."""
    from snapcore.mechanism import _padding as mechanism_padding
    from snapcore.releases import _padding as release_padding

    counts = {"whole": 0, "mechanism": 0}
    for module, name in ((release_padding, "whole"), (mechanism_padding, "mechanism")):
        real = module.pad

        def counting(
            start: int, q: int, stats: Any = None, dither: int = 0, _r=real, _n=name
        ) -> int:
            counts[_n] += 1
            return _r(start, q, stats, dither)

        monkeypatch.setattr(module, "pad", counting)
    return counts


def test_opendp_measurements_go_through_the_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _count_pads(monkeypatch)
    scalar = make_snapping(*FLOATS, 1.0, 1, (-50, 50))  # the default source: padded
    for x in (3.0, 1e300, 5e-324):
        scalar(x)
    assert counts == {"whole": 0, "mechanism": 3}
    domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0), nan=False))
    stat = make_statistic(domain, dp.symmetric_distance(), "sum", 1.0, n=1000)
    stat(DATA)  # (its calibration's synthetic releases pad their mechanisms too)
    assert counts["whole"] == 1 and counts["mechanism"] > 3
    before = dict(counts)
    seeded = make_snapping(*FLOATS, 1.0, 1, (-50, 50), source=SeededSource(1))
    seeded(3.0)  # a seeded source is not padded by default
    assert counts == before


# ----------------------------------------------------------------------------------
# The (epsilon, delta) measurement: the certified curve of the implemented mechanism
# ----------------------------------------------------------------------------------


def test_approx_measurement_reports_the_certified_curve_and_composes() -> None:
    from snapcore.adapters.opendp import make_snapping_approx
    from snapcore.analysis._accounting import ReleaseCurve

    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    m = make_snapping_approx(*space, 0.5, 2.0, (-10.0, 10.0), 1e-6, source=SeededSource(3))
    assert m.output_measure == dp.approximate(dp.max_divergence())
    # Inputs up to one sensitivity apart: the Laplace profile of 0.5 at 1e-6, which
    # is below the pure 0.5 and whose delta at that epsilon is at most 1e-6 (an
    # independent check of the inversion, through the closed-form profile).
    eps1, d1 = m.map(2.0)
    assert d1 == 1e-6 and eps1 < 0.5
    assert 0.5 + 2 * math.log1p(-1e-6) <= eps1 <= 0.5 + 2 * math.log1p(-1e-6) + 1e-12
    assert ReleaseCurve("snapping", Fraction(1, 2)).delta(eps1) <= 1e-6 * (1 + 1e-9)
    # Group privacy: three steps of the sensitivity cost the curve of 1.5.
    eps3, _ = m.map(5.0)
    assert eps3 == ReleaseCurve("snapping", Fraction(3, 2)).epsilon_for_delta(1e-6)
    assert m.map(0.0) == (0.0, 0.0)
    # The same draw as the pure measurement, and OpenDP composes it as (eps, delta).
    pure = make_snapping(*space, 0.5, 2.0, (-10.0, 10.0), source=SeededSource(3))
    assert m(1.25) == pure(1.25)
    comp = dp.c.make_composition([m, m])
    e2, d2 = comp.map(2.0)
    assert e2 == pytest.approx(2 * eps1) and d2 == pytest.approx(2e-6)
    with pytest.raises(ParameterError, match="delta"):
        make_snapping_approx(*space, 0.5, 2.0, (-10.0, 10.0), 1)
