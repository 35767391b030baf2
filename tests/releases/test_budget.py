"""Budget: exact sequential composition, refusal before noise, threads."""

from __future__ import annotations

import threading
from fractions import Fraction

import pytest
from ledger_workers import release_or_refuse

import snapcore
from snapcore import Budget, BudgetExceededError, ReplaySource
from snapcore.errors import ParameterError, SourceExhaustedError

DATA = [float(v) for v in range(40)]


def test_exact_accounting():
    b = Budget(1)
    for _ in range(3):
        b.spend(Fraction(1, 3))
    assert b.spent == 1 and b.remaining == 0
    with pytest.raises(BudgetExceededError):
        b.spend(Fraction(1, 10**30))
    # Floats are taken at their exact value: ten times the double 0.1 exceeds 1.
    f = Budget(1)
    for _ in range(9):
        f.spend(0.1)
    with pytest.raises(BudgetExceededError, match="left"):
        f.spend(0.1)
    assert f.spent == 9 * Fraction(0.1)
    assert [eps for _, eps in f.history] == [Fraction(0.1)] * 9


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1"])
def test_bad_total(bad):
    with pytest.raises(ParameterError, match="total_epsilon"):
        Budget(bad)


def test_refused_before_drawing():
    b = Budget(0.5)
    src = ReplaySource([(1, 0.5)])
    with pytest.raises(BudgetExceededError):
        snapcore.release("mean", DATA, epsilon=1, data_bounds=(0, 100), budget=b, source=src)
    assert src.remaining == 1  # nothing was drawn
    assert b.spent == 0
    r = snapcore.release("mean", DATA, epsilon=0.5, data_bounds=(0, 100), budget=b, source=src)
    assert r.epsilon_spent == Fraction(1, 2) and b.remaining == 0 and src.remaining == 0


def test_failed_release_spends_nothing():
    b = Budget(2)
    # A histogram of 3 bins needs 3 draws; the source has 2: it fails midway.
    src = ReplaySource([(1, 0.5), (-1, 0.25)])
    with pytest.raises(SourceExhaustedError):
        snapcore.release("histogram", DATA, epsilon=1, bins=[0, 10, 20, 40], budget=b, source=src)
    assert b.spent == 0 and b.remaining == 2 and b.history == ()
    # Invalid input: refused before anything, spends nothing.
    with pytest.raises(ParameterError):
        snapcore.release("mean", [*DATA, float("nan")], epsilon=1, data_bounds=(0, 1), budget=b)
    assert b.spent == 0
    snapcore.release("mean", DATA, epsilon=1, data_bounds=(0, 100), budget=b)
    assert b.spent == 1 and b.history == (("mean", Fraction(1)),)


def test_threads_racing_to_spend():
    total, each, workers = Fraction(1), Fraction(1, 8), 40
    b = Budget(total)
    barrier = threading.Barrier(workers)
    ok: list[float] = []
    refused: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        barrier.wait()
        kind, value = release_or_refuse(b, DATA, each, 100, i)
        with lock:
            (ok if kind == "released" else refused).append(value)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 8 and len(refused) == workers - 8
    assert b.spent == total and b.remaining == 0 and len(b.history) == 8


def test_reserve_returns_on_error():
    b = Budget(1)
    with pytest.raises(RuntimeError), b.reserve(0.75):
        assert b.remaining == Fraction(1, 4)
        raise RuntimeError("boom")
    assert b.remaining == 1 and b.spent == 0


def test_str_of_remaining_and_spent_is_short_and_the_value_exact():
    b = Budget(1)
    b.spend(0.7)  # charged at its exact binary value
    exact = 1 - Fraction(0.7)
    assert b.remaining == exact and isinstance(b.remaining, Fraction)
    assert str(b.remaining) == "≈0.3" and f"{b.remaining}" == "≈0.3"
    assert str(b.spent) == "≈0.7"
    b2 = Budget(1)
    b2.spend(Fraction(1, 4))
    assert str(b2.remaining) == "0.75" and str(b2.spent) == "0.25"
