"""A privacy budget under sequential composition, with exact accounting.

Releases with ε₁, ε₂, ... on the same data are together (ε₁ + ε₂ + ...)-DP
(sequential composition).  :class:`Budget` keeps that sum as an exact Fraction (a
float ε is charged at its exact binary value, the ε the mechanism was calibrated for;
``repr`` shows short decimals, ``≈`` where rounded) and
refuses a release that would exceed the total **before** any noise is drawn.  A
release reserves its ε first; if it then fails, the reservation is returned and
nothing is spent (nothing was released).  All of this is safe across threads.

:class:`LedgerBudget` (from :meth:`Budget.from_ledger`) keeps the same accounting in a
durable file shared by processes (:class:`~snapcore.Ledger`).

>>> from snapcore import Budget
>>> b = Budget(1)
>>> with b.reserve(0.25, label="mean age"):
...     pass
>>> b.spent, b.remaining
(Fraction(1, 4), Fraction(3, 4))
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from snapcore._display import short
from snapcore.calibration._params import check_real
from snapcore.errors import BudgetExceededError, ParameterError
from snapcore.releases._ledger import Ledger

__all__ = ["Budget", "LedgerBudget"]


class EpsilonAmount(Fraction):
    """An exact ε (a :class:`~fractions.Fraction`) whose ``str`` is short, as in the
    budget's repr: ``0.3`` for 0.3 exactly, ``≈0.3`` where rounded (the exact value is
    the Fraction itself, and its ``repr``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return short(self)

    def __repr__(self) -> str:
        return f"Fraction({self.numerator}, {self.denominator})"


def _amount(q: Fraction) -> EpsilonAmount:
    return EpsilonAmount(q.numerator, q.denominator)


class Budget:
    """A total ε spent by sequential composition.

    Parameters
    ----------
    total_epsilon : real
        The total ε > 0 (exact; floats are taken at their exact value).

    Attributes
    ----------
    total : Fraction
        The total ε.
    """

    def __init__(self, total_epsilon: Any) -> None:
        self.total = check_real("total_epsilon", total_epsilon, positive=True)
        self._spent = Fraction(0)
        self._reserved = Fraction(0)
        self._log: list[tuple[str, Fraction]] = []
        self._lock = threading.Lock()

    @property
    def spent(self) -> Fraction:
        """ε spent by completed releases."""
        with self._lock:
            return _amount(self._spent)

    @property
    def remaining(self) -> Fraction:
        """ε not yet spent or reserved."""
        with self._lock:
            return _amount(self.total - self._spent - self._reserved)

    @property
    def history(self) -> tuple[tuple[str, Fraction], ...]:
        """``(label, ε)`` of every completed release, in order."""
        with self._lock:
            return tuple(self._log)

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "") -> Iterator[Fraction]:
        """Reserve ``epsilon`` for the release run inside the ``with`` block.

        The reservation is checked and taken atomically before the block runs; it
        becomes spent when the block completes and is returned if the block raises.

        Raises
        ------
        BudgetExceededError
            If ``epsilon`` exceeds what remains; the block does not run.
        ParameterError
            If ``epsilon`` is not a finite number > 0.
        """
        # A release spends a positive epsilon; zero or a negative one (a refund) is refused.
        eps = check_real("epsilon", epsilon, positive=True)
        with self._lock:
            left = self.total - self._spent - self._reserved
            if eps > left:
                raise BudgetExceededError(
                    f"release refused: it needs epsilon = {short(eps)} but the budget has "
                    f"{short(left)} left ({float(eps - left):.3g} short; exactly {left}; "
                    f"total {short(self.total)}, spent {short(self._spent)}; a float ε is "
                    "charged at its exact binary value); nothing was drawn or spent"
                )
            self._reserved += eps
        try:
            yield eps
        except BaseException:
            with self._lock:
                self._reserved -= eps
            raise
        with self._lock:
            self._reserved -= eps
            self._spent += eps
            self._log.append((label, eps))

    @classmethod
    def from_ledger(cls, path: Any) -> LedgerBudget:
        """A budget kept in the durable ledger at ``path``, shared by processes.

        See :class:`~snapcore.Ledger`: each spend is committed to disk before the release
        draws noise, and is never refunded.

        Raises
        ------
        LedgerError
            If the ledger is missing or fails its checks (the file is not modified).
        """
        return LedgerBudget(Ledger(path))

    def spend(self, epsilon: Any, *, label: str = "") -> None:
        """Record ``epsilon`` as spent (for releases made outside snapcore).

        Prefer :meth:`reserve` around the release: a spend recorded after the noise
        was drawn can be refused when it is too late to undo the draw.

        Raises
        ------
        BudgetExceededError
            If it exceeds what remains; nothing is recorded.
        ParameterError
            If ``epsilon`` is not a finite number > 0.
        """
        eps = check_real("epsilon", epsilon, positive=True)
        try:
            with self.reserve(eps, label=label):
                pass
        except BudgetExceededError:
            raise BudgetExceededError(
                f"spend refused: it needs epsilon = {short(eps)} but the budget has "
                f"{short(self.remaining)} left (total {short(self.total)}); nothing was "
                "recorded; if noise was already drawn for it, that release is not covered "
                "by this budget"
            ) from None

    def __repr__(self) -> str:
        """Short decimals (``≈`` where rounded); the attributes are exact Fractions."""
        return (
            f"Budget(total={short(self.total)}, spent={short(self.spent)}, "
            f"remaining={short(self.remaining)})"
        )


class LedgerBudget(Budget):
    """A :class:`Budget` whose accounting lives in a :class:`~snapcore.Ledger`.

    Same interface as the in-memory Budget (``total``, ``spent``, ``remaining``,
    ``history``, ``reserve``, ``spend``), so it can be passed as ``budget=`` to
    :func:`snapcore.release`.  Each call reads the ledger, so several processes
    holding budgets on one ledger see each other's spends.  Unlike the in-memory
    Budget, a block that raises does not get its ε back (see :class:`~snapcore.Ledger`).

    Parameters
    ----------
    ledger : snapcore.releases._ledger.Ledger
    """

    def __init__(self, ledger: Ledger) -> None:
        if not isinstance(ledger, Ledger):
            raise ParameterError(
                f"ledger must be a snapcore.releases._ledger.Ledger, got {ledger!r}"
            )
        self.ledger = ledger
        self.total = ledger.total  # fixed when the ledger is created

    @property
    def spent(self) -> Fraction:
        """ε committed in the ledger (including releases still running)."""
        return _amount(self.ledger.spent)

    @property
    def remaining(self) -> Fraction:
        """ε not yet spent."""
        return _amount(self.ledger.remaining)

    @property
    def history(self) -> tuple[tuple[str, Fraction], ...]:
        """``(label, ε)`` of every entry in the ledger, in order."""
        return tuple((e.label, e.epsilon) for e in self.ledger.entries)

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "") -> Iterator[Fraction]:
        """Commit ``epsilon`` to the ledger before the block runs (see
        :meth:`snapcore.Ledger.reserve`)."""
        with self.ledger.reserve(epsilon, label=label) as eps:
            yield eps

    def spend(self, epsilon: Any, *, label: str = "") -> None:
        """Record ``epsilon`` as spent in the ledger (see :meth:`snapcore.Ledger.spend`)."""
        self.ledger.spend(epsilon, label=label)

    def __repr__(self) -> str:
        st = self.ledger.state()
        return (
            f"LedgerBudget({self.ledger.path!r}, total={short(st.total)}, "
            f"spent={short(st.spent)}, remaining={short(st.remaining)})"
        )
