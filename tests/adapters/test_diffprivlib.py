"""The diffprivlib drop-in Snapping and the accountant bridges, against diffprivlib 0.6.6."""

from __future__ import annotations

import inspect
import math
import secrets
import subprocess
import sys
from fractions import Fraction

import diffprivlib
import gmpy2
import mpmath
import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.mechanisms.base import DPMechanism
from diffprivlib.utils import BudgetError
from tiny_mechanism import TinyMechanism, brute_force

import snapcore
from snapcore import AuditLimitError, Budget, BudgetExceededError, ParameterError, ReplaySource
from snapcore.adapters.diffprivlib import AccountantBudget, SnapcoreAccountant, Snapping
from snapcore.analysis._audit import exact_output_distribution
from snapcore.randomness._sources import ByteSource, SystemSource
from snapcore.releases._ledger import Ledger


class _Bytes(ByteSource):
    name = "test-bytes"

    def __init__(self, rng: np.random.RandomState) -> None:
        super().__init__()
        self.rng = rng

    def read(self, n: int) -> bytes:
        return self.rng.bytes(n)


def test_same_signature_and_base_class() -> None:
    ours, theirs = inspect.signature(Snapping), inspect.signature(diffprivlib.mechanisms.Snapping)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    m = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0)
    assert isinstance(m, DPMechanism)
    assert repr(m).endswith(
        "Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0, random_state=None)"
    )
    for name in ("randomise", "bias", "variance", "mse", "effective_epsilon"):
        assert callable(getattr(m, name))


def test_random_state_contract() -> None:
    kw = {"epsilon": 0.5, "sensitivity": 2.0, "lower": -20.0, "upper": 20.0}
    # None: the OS CSPRNG (diffprivlib: secrets.SystemRandom).
    assert isinstance(Snapping(**kw).mechanism.source, SystemSource)
    assert isinstance(
        Snapping(**kw, random_state=secrets.SystemRandom()).mechanism.source, SystemSource
    )
    # An int seed: reproducible, and the draws are that RandomState's bytes.
    a = [Snapping(**kw, random_state=7).randomise(3.0) for _ in range(3)]
    assert a == [Snapping(**kw, random_state=7).randomise(3.0) for _ in range(3)]
    rs = np.random.RandomState(11)
    ours = Snapping(**kw, random_state=rs)
    ref = snapcore.SnappingMechanism(
        epsilon=0.5,
        sensitivity=2,
        clamp_bounds=(-20, 20),
        source=_Bytes(np.random.RandomState(11)),
    )
    for x in (3.0, -19.5, 100.0, 0.0):
        assert ours.randomise(x) == float(ref.release(x))
    with pytest.raises(ValueError):
        Snapping(**kw, random_state="seed")


def test_outputs_on_the_grid_and_zero_sensitivity() -> None:
    m = Snapping(epsilon=1.0, sensitivity=3.0, lower=-30.0, upper=30.0, random_state=1)
    step = m.mechanism.grid_step
    for _ in range(50):
        y = m.randomise(7.0)
        assert -30 <= y <= 30
        assert y in (-30.0, 30.0) or (Fraction(y) - 0) / step == int(Fraction(y) / step)
    z = Snapping(epsilon=1.0, sensitivity=0.0, lower=0.0, upper=1.0)
    assert z.randomise(0.25) == 0.25 and z.randomise(5.0) == 1.0 and z.variance(3.0) == 0.0
    assert z.bias(5.0) == -4.0


def test_bad_input() -> None:
    kw = {"epsilon": 1.0, "sensitivity": 1.0, "lower": 0.0, "upper": 1.0}
    m = Snapping(**kw)
    with pytest.raises(TypeError, match="number"):
        m.randomise("1")
    for bad in (math.nan, math.inf):
        with pytest.raises(ParameterError, match="value"):
            m.randomise(bad)
    with pytest.raises(TypeError):
        Snapping(**{**kw, "epsilon": "1"})
    with pytest.raises(ValueError):
        Snapping(**{**kw, "epsilon": -1.0})
    with pytest.raises(ParameterError, match="sensitivity"):
        Snapping(**{**kw, "sensitivity": -1.0})
    with pytest.raises(ValueError):
        Snapping(**{**kw, "upper": 0.0})


def _ideal_moments(m: Snapping, x: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Independent reference: mean and variance of clamp_b(⌊clamp_b(t) + Y⌉_Λ) with
    Y ~ Laplace(λ), in data units, from the Laplace CDF at 60 digits."""
    mech = m.mechanism
    with mpmath.workdps(60):
        lam = mpmath.mpf(mech.scale.numerator) / mech.scale.denominator
        grid = mpmath.mpf(mech.granularity.numerator) / mech.granularity.denominator
        d = mpmath.mpf(mech.sensitivity.numerator) / mech.sensitivity.denominator
        c = (mpmath.mpf(m.lower) + mpmath.mpf(m.upper)) / 2
        b = (mpmath.mpf(m.upper) - mpmath.mpf(m.lower)) / 2 / d
        t = min(max((mpmath.mpf(x) - c) / d, -b), b)

        def cdf(v):  # P(t + Y < v)
            u = v - t
            return mpmath.exp(u / lam) / 2 if u < 0 else 1 - mpmath.exp(-u / lam) / 2

        points = {}
        k_lo, k_hi = int(mpmath.floor(-b / grid)) - 1, int(mpmath.ceil(b / grid)) + 1
        for k in range(k_lo - 200, k_hi + 201):
            p = cdf((k + mpmath.mpf(1) / 2) * grid) - cdf((k - mpmath.mpf(1) / 2) * grid)
            out = min(max(k * grid, -b), b)
            points[out] = points.get(out, 0) + p
        points[-b] += cdf((k_lo - 200 - mpmath.mpf(1) / 2) * grid)
        points[b] += 1 - cdf((k_hi + 200 + mpmath.mpf(1) / 2) * grid)
        mean = sum(p * (c + d * z) for z, p in points.items())
        var = sum(p * (c + d * z - mean) ** 2 for z, p in points.items())
        return mean, var


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "lower", "upper", "x"),
    [
        (1.0, 1.0, 0.0, 10.0, 5.0),
        (1.0, 1.0, 0.0, 10.0, 9.9),
        (0.5, 2.0, -10.0, 30.0, -12.0),
        (2.0, 0.25, 0.0, 1.0, 0.3),
    ],
)
def test_ideal_bias_and_variance_against_the_ideal_distribution(
    epsilon, sensitivity, lower, upper, x
) -> None:
    m = Snapping(epsilon=epsilon, sensitivity=sensitivity, lower=lower, upper=upper)
    mean, var = _ideal_moments(m, x)
    assert m.bias(x, exact=False) == pytest.approx(float(mean - x), rel=1e-9, abs=1e-12)
    v = m.variance(x, exact=False)
    assert v >= float(var) * (1 - 1e-12) and v == pytest.approx(float(var), rel=1e-9)
    assert m.mse(x, exact=False) == pytest.approx(v + m.bias(x, exact=False) ** 2)


def rn(q: Fraction) -> float:
    """Independent reference: q rounded to the nearest double by MPFR."""
    with gmpy2.context(gmpy2.ieee(64), round=gmpy2.RoundToNearest):
        return float(gmpy2.mpfr(gmpy2.mpq(q.numerator, q.denominator)))


def fraction_moments(pmf: dict[float, Fraction]) -> tuple[Fraction, Fraction]:
    """Mean and variance of a pmf by plain Fraction sums (no shared code)."""
    assert sum(pmf.values()) == 1
    mean = sum((Fraction(o) * q for o, q in pmf.items()), Fraction(0))
    return mean, sum(((Fraction(o) - mean) ** 2 * q for o, q in pmf.items()), Fraction(0))


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "lower", "upper", "x"),
    [
        (1.0, 1.0, 0.0, 10.0, 5.0),  # the centre
        (1.0, 1.0, 0.0, 10.0, 9.9),
        (1.0, 1.0, 0.0, 10.0, 10.0),  # an end: the clamp takes mass
        (1.0, 1.0, 0.0, 10.0, 13.0),  # outside the interval
        (0.5, 2.0, -10.0, 30.0, -12.0),
        (2.0, 0.25, 0.0, 1.0, 0.3),
        (0.1, 1.0, 0.0, 10.0, 9.5),  # B < λ: mostly clamped
    ],
)
def test_exact_bias_and_variance_by_independent_routes(
    epsilon, sensitivity, lower, upper, x
) -> None:
    m = Snapping(epsilon=epsilon, sensitivity=sensitivity, lower=lower, upper=upper)
    # Route 1: the same mechanism on the mpmath and arb backends (the same draw gives
    # the same output on every backend, so the exact distribution must be the same),
    # its moments by plain Fraction sums, rounded to nearest by MPFR.
    for backend in ("mpmath", "arb"):
        other = snapcore.SnappingMechanism(
            epsilon=epsilon,
            sensitivity=sensitivity,
            clamp_bounds=(lower, upper),
            backend=backend,
        )
        mean, var = fraction_moments(exact_output_distribution(other, x).as_dict())
        xq = Fraction(x)
        assert m.bias(x) == rn(mean - xq), backend
        assert m.variance(x) == rn(var), backend
        assert m.mse(x) == rn(var + (mean - xq) ** 2), backend
    # Route 2: the ideal mechanism from the Laplace CDF at 60 digits.  The p-bit
    # mechanism differs from it by terms about 2**-120 of the scale: the exact moments
    # agree to 1e-30, far below a double's resolution of these values.
    ideal_mean, ideal_var = _ideal_moments(m, x)
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(mean.numerator) / mean.denominator - ideal_mean) < 1e-30
        assert abs(mpmath.mpf(var.numerator) / var.denominator - ideal_var) < 1e-30


def test_exact_bias_at_the_centre_is_the_tie_rule() -> None:
    # Ideal mechanism: symmetric about the centre, bias 0.  Implemented one: y is a
    # p-bit float, so it hits a midpoint between grid points with probability about
    # 2**-118, and ties go toward +inf: the exact bias is positive, and tiny.
    m = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0)
    assert 0 < m.bias(5.0) < 2**-100
    assert abs(m.bias(5.0, exact=False)) < 1e-60
    assert m.bias(5.0) != m.bias(5.0, exact=False)
    # Mirror values: the variances agree to double precision, the biases are opposite
    # up to the same tie terms.
    for t in (1.0, 4.5, 5.0, 7.0):
        assert m.variance(5.0 + t) == pytest.approx(m.variance(5.0 - t), rel=1e-15)
        assert abs(m.bias(5.0 + t) + m.bias(5.0 - t)) < 2**-100


@pytest.mark.parametrize(
    ("epsilon", "lower", "upper", "sensitivity", "precision"),
    [
        (1, -8, 8, 1, 8),
        (Fraction(1, 2), -3, 21, 2, 7),
        (4, 0, 3, Fraction(1, 4), 6),
        (Fraction(1, 8), -2, 2, 1, 8),
    ],
)
def test_exact_moments_against_brute_force_at_tiny_precision(
    epsilon, lower, upper, sensitivity, precision
) -> None:
    # The drop-in with its mechanism replaced by the same pipeline at 6-8 bits (a
    # TEST-ONLY stand-in), where every draw can be enumerated: bias, variance and mse
    # against moments of the brute-force distribution.  Here the implemented
    # mechanism is far from the ideal one, at the centre and at the clamped ends.
    m = Snapping(
        epsilon=float(epsilon),
        sensitivity=float(sensitivity),
        lower=float(lower),
        upper=float(upper),
    )
    m._mech = TinyMechanism(
        epsilon=epsilon, lower=lower, upper=upper, sensitivity=sensitivity, precision=precision
    )
    c = Fraction(lower + upper, 2)
    for v in (c, c + 1, Fraction(upper), Fraction(lower)):
        mean, var = fraction_moments(brute_force(m._mech, v, precision))
        assert m.bias(float(v)) == rn(mean - v), v
        assert m.variance(float(v)) == rn(var), v
        assert m.mse(float(v)) == rn(var + (mean - v) ** 2), v
    assert m.bias(float(c)) > 0  # ties toward +inf
    assert m.bias(float(upper)) != m.bias(float(upper), exact=False)
    assert m.bias(float(lower)) != -m.bias(float(upper))


def test_exact_moments_refuse_past_the_audit_limit() -> None:
    wide = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=1e6)
    for method in (wide.bias, wide.variance, wide.mse):
        with pytest.raises(AuditLimitError, match="exact=False"):
            method(3.0)
    # The ideal values stay available, at a cost independent of B/Λ.
    step = float(wide.mechanism.grid_step)
    assert abs(wide.bias(400000.3, exact=False)) <= step / 2
    assert 0 < wide.variance(400000.3, exact=False) < 10 * step**2
    m = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0)
    for bad in (math.nan, math.inf):
        for method in (m.bias, m.variance, m.mse):
            with pytest.raises(ParameterError, match="value"):
                method(bad)
    with pytest.raises(TypeError, match="number"):
        m.bias("5")


def test_snapcore_accountant_charges_a_budget_exactly() -> None:
    b = Budget(1)
    acc = SnapcoreAccountant(b)
    x = np.linspace(0, 10, 50)
    diffprivlib.tools.mean(x, epsilon=0.5, bounds=(0, 10), accountant=acc)
    diffprivlib.tools.var(x, epsilon=0.25, bounds=(0, 10), accountant=acc)
    assert b.spent == Fraction(3, 4) and [e for _, e in b.history] == [
        Fraction(1, 2),
        Fraction(1, 4),
    ]
    assert acc.total() == (0.75, 0.0) and acc.remaining() == (0.25, 0.0)
    with pytest.raises(BudgetError):
        diffprivlib.tools.mean(x, epsilon=0.3, bounds=(0, 10), accountant=acc)
    assert b.spent == Fraction(3, 4)
    with pytest.raises(BudgetError, match="delta"):
        acc.spend(0.1, 0.01)
    # Snapcore spends on the same budget are seen by diffprivlib.
    snapcore.release("mean", list(x), epsilon=0.25, data_bounds=(0, 10), budget=b)
    assert acc.remaining() == (0.0, 0.0)


def test_snapcore_accountant_on_a_ledger(tmp_path) -> None:
    path = tmp_path / "b.ledger"
    Ledger.init(path, 1)
    acc = SnapcoreAccountant(Budget.from_ledger(path))
    diffprivlib.tools.mean(np.arange(10.0), epsilon=0.5, bounds=(0, 10), accountant=acc)
    assert Ledger(path).spent == Fraction(1, 2)


def test_accountant_budget_charges_diffprivlib() -> None:
    acc = BudgetAccountant(epsilon=1.0)
    b = AccountantBudget(acc)
    third = Fraction(1, 3)
    r = snapcore.release("mean", [1.0, 2.0, 3.0], epsilon=third, data_bounds=(0, 10), budget=b)
    assert r.epsilon_spent == third
    (spent,) = acc.spent_budget
    assert spent[1] == 0 and Fraction(spent[0]) >= third  # rounded up, never under
    assert Fraction(math.nextafter(spent[0], 0)) < third
    src = ReplaySource([(1, 0.5)])
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        snapcore.release("mean", [1.0], epsilon=1, data_bounds=(0, 10), budget=b, source=src)
    assert src.remaining == 1 and len(acc.spent_budget) == 1
    with pytest.raises(ParameterError):
        AccountantBudget(Budget(1))
    with pytest.raises(ParameterError):
        SnapcoreAccountant(acc)


def _spend_elsewhere(path: str, epsilon: Fraction) -> str:
    """Another process spends ``epsilon`` on the ledger at ``path``: 'spent' or 'refused'."""
    code = (
        "import sys\n"
        "from fractions import Fraction\n"
        "from snapcore import BudgetExceededError\n"
        "from snapcore.releases._ledger import Ledger\n"
        "try:\n"
        "    Ledger(sys.argv[1]).spend(Fraction(sys.argv[2]), label='elsewhere')\n"
        "except BudgetExceededError:\n"
        "    print('refused')\n"
        "else:\n"
        "    print('spent')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, path, str(epsilon)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


class _RacedAccountant(SnapcoreAccountant):
    """After each ``check``, a second process spends ``other`` on the same ledger file,
    before the model or tool trains and calls ``spend``."""

    def __init__(self, path: str, other: Fraction) -> None:
        super().__init__(Budget.from_ledger(path))
        self.path, self.other, self.outcomes = path, other, []

    def check(self, epsilon: float, delta: float) -> bool:
        ok = super().check(epsilon, delta)
        self.outcomes.append(_spend_elsewhere(self.path, self.other))
        return ok


@pytest.mark.parametrize("what", ["model", "tool"])
def test_model_trained_is_model_charged_despite_another_process(tmp_path, what) -> None:
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, 1)
    acc = _RacedAccountant(path, Fraction(1, 2))
    x = np.linspace(0, 10, 40)
    if what == "model":
        from diffprivlib.models import GaussianNB

        model = GaussianNB(epsilon=0.75, bounds=([0.0], [10.0]), accountant=acc)
        model.fit(x.reshape(-1, 1), (x > 5).astype(int))
        assert model.theta_.shape == (2, 1)  # trained
    else:
        diffprivlib.tools.mean(x, epsilon=0.75, bounds=(0, 10), accountant=acc)
    # The other process found only 1/4 left: the ε was taken before the training.
    assert acc.outcomes == ["refused"]
    st = Ledger(path).state()
    assert [(e.label, e.epsilon, e.status) for e in st.entries] == [
        ("diffprivlib", Fraction(0.75), "completed")
    ]
    assert acc.spent_budget == [(0.75, 0)] and acc.total() == (0.75, 0.0)
    # Room for the other process once the model is charged: both recorded, once each.
    acc.other = Fraction(1, 8)
    diffprivlib.tools.mean(x, epsilon=0.125, bounds=(0, 10), accountant=acc)
    assert acc.outcomes == ["refused", "spent"]
    assert Ledger(path).spent == Fraction(1)


def test_check_refused_charges_nothing_and_draws_nothing(tmp_path) -> None:
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, Fraction(1, 2))
    acc = SnapcoreAccountant(Budget.from_ledger(path))
    drawn = []

    def count(*args, **kwargs):  # pragma: no cover - must not run
        drawn.append(1)
        return 0.0

    x = np.linspace(0, 10, 40)
    from diffprivlib.mechanisms import LaplaceTruncated

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LaplaceTruncated, "randomise", count)
        with pytest.raises(BudgetError, match="Nothing was charged"):
            diffprivlib.tools.mean(x, epsilon=0.75, bounds=(0, 10), accountant=acc)
    assert drawn == [] and Ledger(path).entries == () and acc.spent_budget == []


def test_failure_between_check_and_spend_stays_charged(tmp_path) -> None:
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, 1)
    acc = SnapcoreAccountant(Budget.from_ledger(path))
    x = np.linspace(0, 10, 40)
    from diffprivlib.mechanisms import LaplaceTruncated

    def fail(*args, **kwargs):
        raise RuntimeError("the device failed after drawing")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LaplaceTruncated, "randomise", fail)
        with pytest.raises(RuntimeError, match="device failed"):
            diffprivlib.tools.mean(x, epsilon=0.25, bounds=(0, 10), accountant=acc)
    assert Ledger(path).spent == Fraction(1, 4)  # never given back
    assert acc.spent_budget == []  # diffprivlib never recorded it
    # A later spend of the same ε from elsewhere is charged, not absorbed by the
    # reservation of the failed call.
    acc.spend(0.25, 0)
    assert Ledger(path).spent == Fraction(1, 2)
    assert acc.spent_budget == [(0.25, 0)]


def test_spend_without_check_is_charged_and_says_what_it_knows(tmp_path) -> None:
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, Fraction(1, 2))
    acc = SnapcoreAccountant(Budget.from_ledger(path))
    acc.spend(0.25, 0)
    assert Ledger(path).spent == Fraction(1, 4)
    with pytest.raises(BudgetError, match="nothing was recorded") as info:
        acc.spend(0.5, 0)
    assert "nothing was drawn" not in str(info.value)
    assert "not reserved by check()" in str(info.value)
    assert Ledger(path).spent == Fraction(1, 4) and acc.spent_budget == [(0.25, 0)]
    # In memory too.
    mem = SnapcoreAccountant(Budget(Fraction(1, 2)))
    with pytest.raises(BudgetError, match="nothing was recorded"):
        mem.spend(1.0, 0)


def test_accountant_budget_refuses_zero_and_negative() -> None:
    acc = BudgetAccountant(epsilon=1.0)
    b = AccountantBudget(acc)
    for bad in (0, 0.0, -0.5):
        with pytest.raises(ParameterError, match="epsilon must be a finite number > 0"):
            b.spend(bad)
    assert acc.spent_budget == []


def test_randomise_goes_through_the_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default (OS CSPRNG) Snapping pads each randomise, value checks included:
    a value the mechanism refuses is refused inside the padded call, no earlier."""
    from snapcore.mechanism import _padding as mechanism_padding

    quanta: list[int] = []
    real = mechanism_padding.pad

    def counting(start: int, q: int, stats: object = None, dither: int = 0) -> int:
        quanta.append(q)
        return real(start, q, stats, dither)  # type: ignore[arg-type]

    monkeypatch.setattr(mechanism_padding, "pad", counting)
    m = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0)
    assert m.mechanism is not None and m.mechanism.padding is not None
    for x in (3.0, 5e-324, 1e300, 7):
        m.randomise(x)
    assert len(quanta) == 4
    seeded = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=10.0, random_state=3)
    assert seeded.mechanism is not None and seeded.mechanism.padding is None
