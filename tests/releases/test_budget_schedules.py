"""Budget under every interleaving of reserve, spend and failure, against an exact model.

Sequential composition (docs/semantics.md): the ε of every completed release plus
the ε of every reservation still open never exceeds the total, and is accounted as an
exact Fraction.  Hypothesis generates schedules of opening reservations, closing them
in any order (completed or failed, so nested *and* overlapping), and direct spends; an
independent model (a plain sum of Fractions) predicts every refusal and every balance.
The concurrent tests hold several reservations open at once in several threads, with
barriers, so the overlap is certain rather than likely.

Reproduce a failure with the ``@reproduce_failure`` line hypothesis prints, or by
replaying the printed schedule by hand.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from snapcore import Budget, BudgetExceededError
from snapcore.errors import ParameterError

EPS = st.sampled_from([Fraction(1, 2), Fraction(1, 3), Fraction(1, 4), Fraction(3, 4), 0.25, 0.1])
TOTALS = st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(5, 3), 1.0, 0.3])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("open"), EPS),
        st.tuples(st.just("close"), st.integers(0, 7), st.booleans()),
        st.tuples(st.just("spend"), EPS),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(total=TOTALS, ops=OPS)
def test_any_schedule_matches_exact_model(total, ops):
    """Opened, closed (done or failed, in any order) and spent: the model predicts all."""
    b = Budget(total)
    T = Fraction(total)
    spent = Fraction(0)
    history: list[Fraction] = []
    open_: list[tuple[AbstractContextManager[Fraction], Fraction]] = []
    for op in ops:
        held = sum((e for _, e in open_), Fraction(0))
        if op[0] in ("open", "spend"):
            eps = Fraction(op[1])
            fits = spent + held + eps <= T
            if op[0] == "open":
                cm = b.reserve(op[1], label=f"r{len(history)}")
                if fits:
                    assert cm.__enter__() == eps
                    open_.append((cm, eps))
                else:
                    with pytest.raises(BudgetExceededError):
                        cm.__enter__()
            elif fits:
                b.spend(op[1])
                spent += eps
                history.append(eps)
            else:
                with pytest.raises(BudgetExceededError):
                    b.spend(op[1])
        elif open_:
            cm, eps = open_.pop(op[1] % len(open_))
            if op[2]:  # the release completed: the reservation becomes spent
                cm.__exit__(None, None, None)
                spent += eps
                history.append(eps)
            else:  # the release failed: the reservation is returned
                err = RuntimeError("release failed")
                with pytest.raises(RuntimeError):
                    if not cm.__exit__(RuntimeError, err, None):
                        raise err
        held = sum((e for _, e in open_), Fraction(0))
        assert b.spent == spent and isinstance(b.spent, Fraction)
        assert b.remaining == T - spent - held
        assert spent + held <= T  # never over the total, open reservations included
        assert [e for _, e in b.history] == history


def test_nested_reservations_count_what_is_open():
    b = Budget(1)
    with b.reserve(Fraction(1, 2)), b.reserve(Fraction(1, 2)):
        assert b.remaining == 0 and b.spent == 0
        with pytest.raises(BudgetExceededError), b.reserve(Fraction(1, 2)):
            pytest.fail("a third half of Budget(1) must be refused")
        with pytest.raises(BudgetExceededError):
            b.spend(Fraction(1, 10**40))
    assert b.spent == 1 and b.remaining == 0


def test_overlapping_reservations_closed_out_of_order():
    b = Budget(1)
    first, second = b.reserve(Fraction(1, 2)), b.reserve(Fraction(1, 4))
    first.__enter__()
    second.__enter__()
    assert b.remaining == Fraction(1, 4)
    first.__exit__(None, None, None)  # the outer one completes first
    with pytest.raises(BudgetExceededError):
        b.spend(Fraction(1, 2))
    err = ValueError("second release failed")
    assert not second.__exit__(ValueError, err, None)
    assert b.spent == Fraction(1, 2) and b.remaining == Fraction(1, 2)
    b.spend(Fraction(1, 2))
    assert b.remaining == 0


@pytest.mark.parametrize(
    "bad", [-0.5, Fraction(-1, 2), -1, 0, 0.0, -0.0, Fraction(0), -(2.0**-1074)]
)
def test_zero_or_negative_epsilon_is_refused(bad):
    """A negative ε would refund the budget; zero is not a release. Both are refused."""
    b = Budget(1)
    b.spend(Fraction(3, 4))
    with pytest.raises(ParameterError, match="epsilon must be a finite number > 0"):
        b.spend(bad)
    with pytest.raises(ParameterError, match="epsilon"), b.reserve(bad):
        pytest.fail("the block must not run")
    assert b.spent == Fraction(3, 4) and b.remaining == Fraction(1, 4)
    assert len(b.history) == 1
    with pytest.raises(BudgetExceededError):
        b.spend(Fraction(1, 2))  # no refund happened


@pytest.mark.parametrize("fail_one", [False, True])
def test_concurrent_reservations_all_open_at_once(fail_one):
    """Five threads each ask for 1/2 of Budget(1) and hold what they get until all have
    asked (a barrier): exactly two hold a reservation at the same time; if one of them
    fails, its half comes back and nothing else changes."""
    workers = 5
    b = Budget(1)
    asked = threading.Barrier(workers, timeout=30)
    checked = threading.Barrier(workers, timeout=30)
    lock = threading.Lock()
    held: list[int] = []
    refused: list[int] = []
    remaining_while_held: list[Fraction] = []

    def work(i: int) -> None:
        try:
            with b.reserve(Fraction(1, 2), label=f"t{i}"):
                with lock:
                    held.append(i)
                asked.wait()  # every thread has asked while this one still holds
                with lock:
                    remaining_while_held.append(b.remaining)
                checked.wait()  # nobody leaves before every holder has looked
                if fail_one and i == min(held):
                    raise RuntimeError("release failed")
        except BudgetExceededError:
            with lock:
                refused.append(i)
            asked.wait()
            checked.wait()
        except RuntimeError:
            pass

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert len(held) == 2 and len(refused) == workers - 2
    assert remaining_while_held == [0, 0]
    if fail_one:
        assert b.spent == Fraction(1, 2) and b.remaining == Fraction(1, 2)
        assert [lab for lab, _ in b.history] == [f"t{max(held)}"]
    else:
        assert b.spent == 1 and b.remaining == 0
        assert sorted(lab for lab, _ in b.history) == sorted(f"t{i}" for i in held)


def test_labels_messages_and_repr():
    """What the budget reports: labels in the history, the parameter named, the balance."""
    b = Budget(Fraction(3, 4))
    b.spend(Fraction(1, 4), label="count")
    b.spend(Fraction(1, 4))
    with b.reserve(Fraction(1, 8), label="mean"):
        pass
    assert b.history == (
        ("count", Fraction(1, 4)),
        ("", Fraction(1, 4)),
        ("mean", Fraction(1, 8)),
    )
    assert repr(b) == "Budget(total=0.75, spent=0.625, remaining=0.125)"
    with pytest.raises(ParameterError, match=r"^total_epsilon must be a finite number > 0"):
        Budget(0)
    with pytest.raises(ParameterError, match=r"^epsilon must be a finite number > 0"):
        b.spend(-1)
