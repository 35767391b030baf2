"""The random delay (snapcore.padding._pad): exact Bernoulli(exp(−γ)) and discrete
Laplace sampling (Canonne, Kamath and Steinke 2020), the delay's shift and its
(ε_t, δ_t) claim against independent references, and its use by a release."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import mpmath
import pytest

import snapcore
from snapcore.errors import BudgetExceededError, ParameterError
from snapcore.padding import _pad, _quanta
from snapcore.releases import _padding

MS = 1_000_000


def _rng(seed: int) -> Any:
    return random.Random(seed).randrange


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_has_probability_exp_minus_gamma(gamma: Fraction) -> None:
    draws = 8_000
    rng = _rng(17 + int(gamma * 6))
    hits = sum(_pad.bernoulli_exp(gamma, rng) for _ in range(draws))
    p = math.exp(-float(gamma))
    sd = math.sqrt(draws * p * (1 - p)) or 1.0
    assert abs(hits - draws * p) <= 5 * sd


def test_discrete_laplace_matches_its_exact_probabilities() -> None:
    """Frequencies of y in [-8, 8] against ``(1−α)/(1+α)·α**|y|``, α = exp(−1/scale),
    evaluated with mpmath at 50 digits (each within 5 standard deviations)."""
    scale = Fraction(3, 2)
    draws = 12_000
    rng = _rng(5)
    counts: dict[int, int] = {}
    for _ in range(draws):
        y = _pad.discrete_laplace(scale, rng)
        counts[y] = counts.get(y, 0) + 1
    mpmath.mp.dps = 50
    alpha = mpmath.exp(-1 / mpmath.mpf(3) * 2)
    for y in range(-8, 9):
        p = float((1 - alpha) / (1 + alpha) * alpha ** abs(y))
        sd = math.sqrt(draws * p * (1 - p))
        assert abs(counts.get(y, 0) - draws * p) <= 5 * sd, y


def test_refusals_name_the_parameter() -> None:
    with pytest.raises(ParameterError, match="scale"):
        _pad.discrete_laplace(Fraction(0))
    with pytest.raises(ParameterError, match="gamma"):
        _pad.bernoulli_exp(Fraction(-1))
    with pytest.raises(ParameterError, match="epsilon"):
        _pad.RandomDelay(epsilon=0, bound_ns=100)
    with pytest.raises(ParameterError, match="epsilon"):
        _pad.RandomDelay(epsilon=math.nan, bound_ns=100)
    with pytest.raises(ParameterError, match="bound_ns"):
        _pad.RandomDelay(epsilon=1, bound_ns=0)
    with pytest.raises(ParameterError, match="bound_ns"):
        _pad.RandomDelay(epsilon=1, bound_ns=1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="delta"):
        _pad.RandomDelay(epsilon=1, bound_ns=100, delta=0)
    with pytest.raises(ParameterError, match="overrun_risk"):
        _pad.RandomDelay(epsilon=1, bound_ns=100, overrun_risk=1.0)
    with pytest.raises(ParameterError, match="RandomDelay"), _pad.random_delay(0.1):  # type: ignore[arg-type]
        pass


def _tail(scale: Fraction, m: int) -> Any:
    """``P(|L| >= m)`` by summing the discrete Laplace probabilities (mpmath, 60 digits)."""
    mpmath.mp.dps = 60
    alpha = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
    c = (1 - alpha) / (1 + alpha)
    return 2 * mpmath.nsum(lambda k: c * alpha**k, [m, mpmath.inf])


Q = 5_000  # a quantum, in ns


@pytest.mark.parametrize(
    ("epsilon", "bound", "delta"),
    [(Fraction(1, 10), 100, 2.0**-30), (Fraction(1), 1000, 1e-6), (Fraction(2), 7, 0.01)],
)
def test_the_shift_is_the_least_whose_truncation_is_within_delta(
    epsilon: Fraction, bound: int, delta: float
) -> None:
    d = _pad.RandomDelay(epsilon=epsilon, bound_ns=bound, delta=delta)
    scale = d.scale_for(Q)
    assert scale == Fraction(bound) / epsilon
    m = d.shift_for(Q) - bound
    assert _tail(scale, m) <= delta < _tail(scale, m - 1)
    assert d.truncation(Q) >= float(_tail(scale, m))  # rounded up
    g = _pad.RandomDelay(epsilon=epsilon, bound_ns=bound, delta=delta, overrun_risk=0.01)
    claim = g.guarantee(Q)
    assert claim.epsilon_delay == epsilon and claim.bound_ns == bound
    # ε_t = ε + ln(1/(1 − r)) and δ_t = truncation + r, both rounded up.
    mpmath.mp.dps = 40
    assert claim.epsilon >= float(epsilon) + float(-mpmath.log(1 - mpmath.mpf(0.01)))
    assert claim.epsilon <= float(epsilon) + 0.0101
    assert claim.delta >= float(_tail(scale, m)) + 0.01
    assert claim.delta <= delta + 0.01 + 1e-12


def test_the_default_bound_is_one_quantum_plus_the_jitter() -> None:
    d = _pad.RandomDelay(epsilon=Fraction(1, 2), jitter_ns=300)
    for q in (1_000, 2_000_000):
        assert d.bound_for(q) == q + 300
        assert d.scale_for(q) == Fraction(2 * (q + 300))
        assert d.guarantee(q).quantum_ns == q and d.guarantee(q).bound_ns == q + 300


def test_a_delay_lies_in_zero_to_twice_its_shift() -> None:
    d = _pad.RandomDelay(epsilon=Fraction(1, 2), bound_ns=10)
    rng = _rng(9)
    xs = [d.sample_ns(Q, rng) for _ in range(2000)]
    shift = d.shift_for(Q)
    assert all(0 <= x <= 2 * shift for x in xs)
    # Symmetric around the shift: the mean is within a few standard errors of it.
    mean = sum(xs) / len(xs)
    sd = math.sqrt(2) * float(d.scale_for(Q))
    assert abs(mean - shift) <= 5 * sd / math.sqrt(len(xs))


# -- a release followed by the delay -------------------------------------------------------
@pytest.fixture
def stub_quantum(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(run: Any, classes: Any, **kw: Any) -> int:
        return 2 * MS

    from snapcore.mechanism import _padding as mechanism_padding

    monkeypatch.setattr(_padding, "calibrate_quantum", fake)
    monkeypatch.setattr(mechanism_padding, "calibrate_quantum", fake)
    _quanta.clear_caches()


KW: dict[str, Any] = {"data_bounds": (0, 10), "epsilon": 0.5, "timing": "constant"}
DATA = [1.0, 2.0, 3.0, 9.0]


def test_a_release_waits_for_its_delay_after_its_quanta(
    stub_quantum: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted clock-free check: the release's final deadline is its padded end
    (``begin + j·q``) plus a delay in ``[0, 2·shift]``."""
    ends: list[int] = []
    deadlines: list[int] = []
    real_pad, real_wait = _padding.pad, _padding.wait_until

    def pad(begin: int, q: int, stats: Any = None) -> int:
        j = real_pad(begin, q, stats)
        ends.append(begin + j * q)
        return j

    def wait_until(deadline: int) -> None:
        deadlines.append(deadline)
        real_wait(deadline)

    monkeypatch.setattr(_padding, "pad", pad)
    monkeypatch.setattr(_padding, "wait_until", wait_until)
    delay = _pad.RandomDelay(epsilon=1, jitter_ns=500, basis="test")
    with _pad.random_delay(delay):
        r = snapcore.release("mean", DATA, **KW)
    assert len(ends) == len(deadlines) == 1
    assert 0 <= deadlines[0] - ends[0] <= 2 * delay.shift_for(2 * MS)
    assert r.timing_guarantee == delay.guarantee(2 * MS)  # the stub's quantum
    assert r.to_dict()["timing_guarantee"]["bound_ns"] == 2 * MS + 500
    assert r.epsilon_spent == Fraction(1, 2)  # ε_t is not part of it
    # Outside the block: no delay, no claim.
    assert snapcore.release("mean", DATA, **KW).timing_guarantee is None


def test_a_release_that_is_not_padded_has_no_timing_claim(stub_quantum: None) -> None:
    with _pad.random_delay(_pad.RandomDelay(epsilon=1, bound_ns=100)):
        r = snapcore.release("mean", DATA, **{**KW, "timing": "off"})
    assert r.timing_guarantee is None


def test_a_grouped_release_carries_the_claim_in_every_group(stub_quantum: None) -> None:
    delay = _pad.RandomDelay(epsilon=1, bound_ns=100)
    data = {"g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]}
    with _pad.random_delay(delay):
        g = snapcore.release("sum", data, by="g", keys=["a", "b"], n=10, column="x", **KW)
    assert [r.timing_guarantee for r in g.releases] == [delay.guarantee(2 * MS)] * 2


def test_a_budget_is_charged_epsilon_t_only_when_asked(stub_quantum: None, tmp_path: Any) -> None:
    b = snapcore.Budget(1)
    with _pad.random_delay(_pad.RandomDelay(epsilon=Fraction(1, 4), bound_ns=100)):
        snapcore.release("mean", DATA, budget=b, **KW)
    assert b.spent == Fraction(1, 2)
    charging = _pad.RandomDelay(epsilon=Fraction(1, 4), bound_ns=100, charge=True)
    b = snapcore.Budget(1)
    with _pad.random_delay(charging):
        snapcore.release("mean", DATA, budget=b, **KW)
    assert b.spent == Fraction(3, 4)
    assert [label for label, _ in b.history] == ["timing of mean", "mean"]
    # Not enough for both: refused before anything is spent (a ledger records nothing).
    path = tmp_path / "ledger.sqlite3"
    snapcore.Ledger.init(path, Fraction(3, 5))
    lb = snapcore.Budget.from_ledger(path)
    with _pad.random_delay(charging), pytest.raises(BudgetExceededError, match="ε_t"):
        snapcore.release("mean", DATA, budget=lb, **KW)
    assert lb.spent == 0 and snapcore.Ledger(path).entries == ()
