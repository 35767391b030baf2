"""The approximate-DP budget: in memory and in a ledger, charged by certified curves.

The number of releases a budget allows is checked against dp-accounting's own Laplace
PLD (an independent route), and the ledger in this mode goes through the same race and
kill tests as the pure one.
"""

from __future__ import annotations

import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import ledger_workers
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld

import snapcore
from snapcore import Budget, BudgetExceededError
from snapcore.analysis._accounting import ReleaseCurve, compose
from snapcore.errors import LedgerError, ParameterError
from snapcore.randomness._sources import SeededSource
from snapcore.releases._budget import ApproxBudget, LedgerApproxBudget
from snapcore.releases._ledger import Ledger

DATA = [float(v) for v in range(20)]


class _NoDraws(SeededSource):
    """A source that fails the test if the release reads any noise."""

    def __init__(self) -> None:
        super().__init__(0)

    def read(self, n: int) -> bytes:
        raise AssertionError("noise was drawn")

    def draw(self, precision: int):
        raise AssertionError("noise was drawn")


def _laplace_count(epsilon: float, total: float, delta: float) -> int:
    """How many Laplace(1/epsilon) releases dp-accounting composes within total."""
    one = dp_pld.from_laplace_mechanism(1 / epsilon, value_discretization_interval=1e-4)
    k = 1
    while one.self_compose(k + 1).get_epsilon_for_delta(delta) <= total:
        k += 1
    return k


def _sum_release(budget, seed=0, source=None):
    return snapcore.release(
        "sum",
        DATA,
        epsilon=Fraction(1, 10),
        data_bounds=(0, 20),
        budget=budget,
        source=source or SeededSource(seed),
    )


def test_approx_budget_allows_what_the_laplace_pld_allows_then_refuses_before_drawing():
    b = Budget.approximate(1, Fraction(1, 10**6))
    assert isinstance(b, ApproxBudget)
    released = 0
    while True:
        try:
            _sum_release(b, released)
        except BudgetExceededError as exc:
            assert "nothing was drawn or spent" in str(exc)
            break
        released += 1
    # eps = 1/10 each: the pure sum allows 10; the Laplace PLD also 10 at this size
    assert released == _laplace_count(0.1, 1.0, 1e-6) == 10
    assert b.history == ((("sum", Fraction(1, 10)),) * 10)
    assert all(c == ReleaseCurve("snapping", Fraction(1, 10)) for c in b.curves)
    assert 0.99 < b.guarantee.epsilon <= 1
    with pytest.raises(BudgetExceededError):
        _sum_release(b, source=_NoDraws())


def test_approx_budget_beats_the_pure_sum():
    # 25 releases at eps = 1/2 would cost 12.5 in pure accounting; at delta = 1e-6 the
    # snapping curve composes them to about 11.4 (dp-accounting's Laplace PLD says so).
    b = ApproxBudget(12, 1e-6)
    for i in range(25):
        b.spend(Fraction(1, 2), label=str(i), curve="snapping")
    ref = (
        dp_pld.from_laplace_mechanism(2.0, value_discretization_interval=1e-4)
        .self_compose(25)
        .get_epsilon_for_delta(1e-6)
    )
    assert ref <= b.guarantee.epsilon <= ref + 0.05 < 12 < 12.5
    assert b.remaining == 12 - b.spent > 0


def test_multi_value_release_is_charged_as_pure():
    b = ApproxBudget(5, 1e-6)
    snapcore.release("histogram", ["a", "b", "a"], epsilon=1, categories=["a", "b"], budget=b)
    snapcore.release("sum", DATA, epsilon=1, data_bounds=(0, 20), budget=b)
    assert [c.kind for c in b.curves] == ["pure", "snapping"]


def test_failed_block_gets_its_reservation_back():
    b = ApproxBudget(1, 1e-6)
    with pytest.raises(RuntimeError), b.reserve(Fraction(1, 2)):
        raise RuntimeError
    assert b.curves == () and b.remaining == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0, "delta": 1e-6}, "epsilon"),
        ({"epsilon": 1, "delta": 0}, "delta"),
        ({"epsilon": 1, "delta": 1}, "delta"),
        ({"epsilon": 1, "delta": float("nan")}, "delta"),
        ({"epsilon": 1, "delta": 1e-6, "accountant": "zcdp"}, "accountant"),
    ],
)
def test_bad_parameters_refused(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        ApproxBudget(**kwargs)


def test_bad_spends_refused_before_anything():
    b = ApproxBudget(1, 1e-6)
    for eps, curve in ((0, "pure"), (-1, "pure"), (Fraction(1, 10), "laplace")):
        with pytest.raises(ParameterError):
            b.spend(eps, curve=curve)
    assert b.curves == ()


def test_pure_budget_is_still_the_default():
    b = Budget(1)
    assert type(b) is Budget
    _sum_release(b)
    assert b.spent == Fraction(1, 10)


def test_rdp_accountant():
    b = ApproxBudget(10, 1e-6, accountant="rdp")
    for _ in range(20):
        b.spend(Fraction(1, 2), curve="snapping")
    g = b.guarantee
    assert g.accountant == "rdp"
    assert compose(b.curves, 1e-6).epsilon <= g.epsilon <= 10  # PLD is the tighter one


# ----------------------------------------------------------------------------------
# The approximate-DP ledger
# ----------------------------------------------------------------------------------


@pytest.fixture
def approx_ledger(tmp_path: Path) -> Ledger:
    led = Ledger.init(tmp_path / "a.ledger", 2, delta=Fraction(1, 10**6))
    led.spend(Fraction(1, 2), label="first", curve="snapping")
    led.spend(Fraction(1, 3), label="second")
    return led


def test_ledger_records_curves_and_recomputes_their_composition(approx_ledger: Ledger):
    st = approx_ledger.state()
    assert st.delta == Fraction(1, 10**6) and st.accountant == "pld"
    assert st.curves == (
        ReleaseCurve("snapping", Fraction(1, 2)),
        ReleaseCurve("pure", Fraction(1, 3)),
    )
    assert st.spent == Fraction(5, 6)
    assert st.guarantee is not None
    assert st.guarantee.epsilon == compose(st.curves, Fraction(1, 10**6)).epsilon
    b = Budget.from_ledger(approx_ledger.path)
    assert isinstance(b, LedgerApproxBudget) and b.curves == st.curves
    # independent reader: the curves table, as text
    with sqlite3.connect(approx_ledger.path) as conn:
        rows = conn.execute("SELECT id, curve FROM curves ORDER BY id").fetchall()
    assert rows == [(1, "snapping:1/2"), (2, "pure:1/3")]
    d = approx_ledger.to_dict()
    assert d["delta_exact"] == "1/1000000" and d["accountant"] == "pld"
    assert d["curves"] == ["snapping:1/2", "pure:1/3"]
    assert d["composed_epsilon"] == st.guarantee.epsilon and d["spent_exact"] == "5/6"


def test_ledger_refuses_past_the_composition_before_drawing(tmp_path: Path):
    # A total of 0.999: the pure sum allows 9 releases at 1/10, the snapping curve 10.
    path = tmp_path / "a.ledger"
    Ledger.init(path, Fraction(999, 1000), delta=Fraction(1, 10**6))
    b = Budget.from_ledger(path)
    for i in range(10):
        _sum_release(b, i)
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        _sum_release(b, source=_NoDraws())
    st = Ledger(path).state()
    assert len(st.entries) == 10 and st.spent == 1 > st.total


def _tamper(path: str, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for s in statements:
            conn.execute(s)


APPROX_CORRUPTIONS = {
    "curve rewritten": ("UPDATE curves SET curve = 'snapping:1/3' WHERE id = 2", "digest"),
    "curve of another epsilon": ("UPDATE curves SET curve = 'pure:1/4' WHERE id = 2", "curve"),
    "curve deleted": ("DELETE FROM curves WHERE id = 2", "curves do not match"),
    "curve not text": ("UPDATE curves SET curve = 7 WHERE id = 1", "curve"),
    "delta raised": ("UPDATE meta SET value = '1/1000' WHERE key = 'delta'", "digest"),
    "delta out of range": ("UPDATE meta SET value = '2/1' WHERE key = 'delta'", "delta"),
    "accountant changed": ("UPDATE meta SET value = 'rdp' WHERE key = 'accountant'", "digest"),
    "accountant unknown": ("UPDATE meta SET value = 'x' WHERE key = 'accountant'", "accountant"),
    "mode removed": ("DELETE FROM meta WHERE key = 'delta'", "meta table"),
}


@pytest.mark.parametrize("how", [k for k, (_, m) in APPROX_CORRUPTIONS.items() if m])
def test_tampered_approx_ledger_refused_and_untouched(approx_ledger: Ledger, how: str):
    statement, message = APPROX_CORRUPTIONS[how]
    _tamper(approx_ledger.path, statement)
    before = Path(approx_ledger.path).read_bytes()
    for attempt in (
        lambda: Ledger(approx_ledger.path),
        lambda: Budget.from_ledger(approx_ledger.path),
        lambda: approx_ledger.spend(Fraction(1, 100)),
    ):
        with pytest.raises(LedgerError, match=message) as info:
            attempt()
        assert "not modified" in str(info.value)
    assert Path(approx_ledger.path).read_bytes() == before


def test_ledger_init_refuses_bad_delta_and_accountant(tmp_path: Path):
    for kwargs in (
        {"delta": 0},
        {"delta": 1},
        {"delta": float("nan")},
        {"delta": 1e-6, "accountant": "x"},
        {"accountant": "rdp"},  # an accountant without delta: not silently pure
    ):
        with pytest.raises(ParameterError):
            Ledger.init(tmp_path / "x.ledger", 1, **kwargs)
        assert not (tmp_path / "x.ledger").exists()


def _racing_total(n: int, accountant: str) -> Fraction:
    """A total that allows exactly n single-value releases at eps = 1/5."""
    curve, d = ReleaseCurve("snapping", Fraction(1, 5)), Fraction(1, 10**6)
    lo = compose([curve] * n, d, accountant=accountant).epsilon
    hi = compose([curve] * (n + 1), d, accountant=accountant).epsilon
    assert lo < hi
    return Fraction((lo + hi) / 2)


def test_processes_racing_cannot_overspend_an_approx_ledger(tmp_path: Path) -> None:
    # The RDP accountant: the racers need not import dp-accounting (a few seconds each).
    path = str(tmp_path / "race.ledger")
    Ledger.init(path, _racing_total(5, "rdp"), delta=Fraction(1, 10**6), accountant="rdp")
    racers = 8
    outcomes, released = ledger_workers.run_race(path, racers, Fraction(1, 5), timeout=180)
    assert len(released) == 5 and len(outcomes) == racers
    st = Ledger(path).state()
    assert len(st.entries) == 5 and st.curves == (ReleaseCurve("snapping", Fraction(1, 5)),) * 5
    assert sorted(e.pid for e in st.entries) == sorted(released)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_release_stays_spent_in_an_approx_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "kill.ledger")
    Ledger.init(path, 1, delta=Fraction(1, 10**6))
    pids = ledger_workers.run_killed(path, str(tmp_path))
    st = Ledger(path).state()  # still a valid ledger, curves and all
    assert len(st.entries) == 3 and st.spent == Fraction(3, 4)
    assert all(e.status == "committed" for e in st.entries)
    assert len(st.curves) == 3 and all(c.epsilon == Fraction(1, 4) for c in st.curves)
    assert {e.pid for e in st.entries} == pids
    with pytest.raises(BudgetExceededError):
        Ledger(path).spend(Fraction(1, 4) + Fraction(1, 10**30))


# ----------------------------------------------------------------------------------
# Zero and negative spends, and what a refusal says, in the approximate mode
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 0.0, Fraction(0), -1, Fraction(-1, 3)])
def test_zero_and_negative_spends_refused_in_approx_mode(approx_ledger: Ledger, bad) -> None:
    before = Path(approx_ledger.path).read_bytes()
    memory = ApproxBudget(1, 1e-6)
    on_file = Budget.from_ledger(approx_ledger.path)
    for curve in ("pure", "snapping"):
        for target in (approx_ledger, on_file, memory):
            with pytest.raises(ParameterError, match=r"epsilon must be a finite number > 0"):
                target.spend(bad, curve=curve)
            with pytest.raises(ParameterError, match=r"epsilon must be a finite number > 0"):
                target.reserve(bad, curve=curve).__enter__()
    assert Path(approx_ledger.path).read_bytes() == before
    assert len(approx_ledger.entries) == 2 and memory.curves == ()
    # Refused before the ledger is opened: with the file gone, still the ε's error.
    Path(approx_ledger.path).rename(approx_ledger.path + ".away")
    for target in (approx_ledger, on_file):
        with pytest.raises(ParameterError, match=r"epsilon must be a finite number > 0"):
            target.spend(bad, curve="snapping")


def test_unknown_curve_refused_before_the_ledger_is_touched(approx_ledger: Ledger) -> None:
    before = Path(approx_ledger.path).read_bytes()
    for attempt in (
        lambda: approx_ledger.spend(Fraction(1, 10), curve="laplace"),
        lambda: approx_ledger.reserve(Fraction(1, 10), curve="gauss").__enter__(),
    ):
        with pytest.raises(ParameterError, match="curve must be one of"):
            attempt()
    assert Path(approx_ledger.path).read_bytes() == before


def test_approx_spend_refusal_says_nothing_was_recorded(approx_ledger: Ledger) -> None:
    """A spend records a release made elsewhere: refused, it says nothing was recorded
    (not that nothing was drawn); a reserve refused before its block says nothing was
    drawn or spent.  In memory, in a ledger and through its budget."""
    on_file = Budget.from_ledger(approx_ledger.path)
    memory = ApproxBudget(Fraction(1, 2), 1e-6)
    for spend, reserve in (
        (approx_ledger.spend, approx_ledger.reserve),
        (on_file.spend, on_file.reserve),
        (memory.spend, memory.reserve),
    ):
        with pytest.raises(BudgetExceededError, match="nothing was recorded") as info:
            spend(Fraction(2), curve="snapping")
        assert "nothing was drawn" not in str(info.value)
        with pytest.raises(BudgetExceededError, match="nothing was drawn or spent"):
            reserve(Fraction(2), curve="snapping").__enter__()
    assert len(approx_ledger.entries) == 2 and memory.curves == ()
