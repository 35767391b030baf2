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

:class:`ApproxBudget` (from :meth:`Budget.approximate`) and :class:`LedgerApproxBudget`
(from :meth:`Budget.from_ledger` on a ledger made with ``delta=``) account for an
``(ε, δ)`` budget instead: each release is charged by its certified privacy curve
(:class:`~snapcore.analysis.ReleaseCurve`) and a release is refused,
before any noise, when the composition (``"pld"`` or ``"rdp"``) would exceed ε at δ
(docs/budgets.md).

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
from snapcore.analysis._accounting import (
    ComposedGuarantee,
    ReleaseCurve,
    check_accountant,
    check_curve_kind,
    compose,
)
from snapcore.calibration._params import check_real
from snapcore.errors import BudgetExceededError, ParameterError
from snapcore.releases._ledger import Ledger, check_delta

__all__ = ["ApproxBudget", "Budget", "LedgerApproxBudget", "LedgerBudget"]


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
        led = Ledger(path)
        return LedgerBudget(led) if led.delta is None else LedgerApproxBudget(led)

    @classmethod
    def approximate(cls, epsilon: Any, delta: Any, *, accountant: str = "pld") -> ApproxBudget:
        """An in-memory ``(ε, δ)`` budget charged by certified curves
        (:class:`~snapcore.releases.ApproxBudget`)."""
        return ApproxBudget(epsilon, delta, accountant=accountant)

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


def _curve(epsilon: Any, curve: Any) -> ReleaseCurve:
    eps = check_real("epsilon", epsilon, positive=True)
    return ReleaseCurve(check_curve_kind(curve), eps)


class ApproxBudget(Budget):
    """An ``(ε, δ)`` budget: releases are composed by their certified curves.

    Each release is charged by a :class:`~snapcore.analysis.ReleaseCurve`:
    ``"snapping"`` for a release that is one snapping mechanism with that ε (what
    :func:`snapcore.release` passes for a single-value statistic), ``"pure"`` (the
    default) for any other ε-DP release.  A release is refused, before the block
    runs, when all releases completed or running, with it, compose to more than
    ``epsilon`` at ``delta`` (:func:`~snapcore.analysis.compose`).

    Parameters
    ----------
    epsilon : real
        The total ε > 0.
    delta : real
        The total δ, in (0, 1).
    accountant : {"pld", "rdp"}
        How curves are composed (docs/budgets.md, "Which accounting").

    Attributes
    ----------
    total : Fraction
    delta : Fraction
    accountant : str
    """

    def __init__(self, epsilon: Any, delta: Any, *, accountant: str = "pld") -> None:
        self.total = check_real("epsilon", epsilon, positive=True)
        self.delta = check_delta(delta)
        self.accountant = check_accountant(accountant)
        self._done: list[tuple[str, ReleaseCurve]] = []
        self._running: list[ReleaseCurve] = []
        self._lock = threading.Lock()

    def _compose(self, curves: list[ReleaseCurve]) -> ComposedGuarantee:
        return compose(curves, self.delta, accountant=self.accountant)

    @property
    def guarantee(self) -> ComposedGuarantee:
        """The ``(ε, δ)`` of the completed releases together."""
        with self._lock:
            return self._compose([c for _, c in self._done])

    @property
    def spent(self) -> Fraction:
        """The composed ε of the completed releases (an upper bound, exactly the float)."""
        return Fraction(self.guarantee.epsilon)

    @property
    def remaining(self) -> Fraction:
        """``total`` minus the composed ε of the completed and running releases."""
        with self._lock:
            curves = [c for _, c in self._done] + self._running
        return self.total - Fraction(self._compose(curves).epsilon)

    @property
    def history(self) -> tuple[tuple[str, Fraction], ...]:
        """``(label, ε)`` of every completed release, in order."""
        with self._lock:
            return tuple((label, c.epsilon) for label, c in self._done)

    @property
    def curves(self) -> tuple[ReleaseCurve, ...]:
        """The curve of every completed release, in order."""
        with self._lock:
            return tuple(c for _, c in self._done)

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> Iterator[Fraction]:
        """Reserve a release of ``epsilon`` charged by ``curve``.

        As :meth:`snapcore.Budget.reserve`, with the composition in place of the sum.

        Raises
        ------
        BudgetExceededError
            If the composition with this release would exceed ε at δ; the block does
            not run.
        ParameterError
            If ``epsilon`` is not a finite number > 0 or ``curve`` is unknown.
        """
        c = _curve(epsilon, curve)
        with self._charged(c, label, "release", "nothing was drawn or spent") as eps:
            yield eps

    @contextmanager
    def _charged(self, c: ReleaseCurve, label: str, what: str, outcome: str) -> Iterator[Fraction]:
        """Take ``c`` if the composition with it stays within the total; ``what`` and
        ``outcome`` word a refusal."""
        with self._lock:
            g = self._compose([x for _, x in self._done] + self._running + [c])
            if g.epsilon > self.total:
                raise BudgetExceededError(
                    f"{what} refused: with it, the {g.releases} releases compose to "
                    f"epsilon {g.epsilon:.6g} at delta {float(self.delta):.3g} "
                    f"({self.accountant}), more than the total {short(self.total)}; "
                    f"{outcome}"
                )
            self._running.append(c)
        try:
            yield c.epsilon
        except BaseException:
            with self._lock:
                self._running.remove(c)
            raise
        with self._lock:
            self._running.remove(c)
            self._done.append((label, c))

    def spend(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> None:
        """Record a release made outside snapcore, charged by ``curve``.

        Prefer :meth:`reserve` around the release: a spend recorded after the noise
        was drawn can be refused when it is too late to undo the draw.

        Raises
        ------
        BudgetExceededError
            If the composition with it would exceed ε at δ; nothing is recorded.
        ParameterError
            If ``epsilon`` is not a finite number > 0 or ``curve`` is unknown.
        """
        c = _curve(epsilon, curve)
        outcome = (
            "nothing was recorded; if noise was already drawn for it, that release is "
            "not covered by this budget"
        )
        with self._charged(c, label, "spend", outcome):
            pass

    def __repr__(self) -> str:
        g = self.guarantee
        return (
            f"ApproxBudget(epsilon={short(self.total)}, delta={float(self.delta):.3g}, "
            f"accountant={self.accountant!r}, releases={g.releases}, spent={g.epsilon:.6g})"
        )


class LedgerApproxBudget(LedgerBudget):
    """A :class:`LedgerBudget` on an approximate-DP ledger (``Ledger.init(..., delta=)``).

    Same interface as :class:`ApproxBudget`; the curves live in the ledger, which
    recomputes and checks their composition on every open and every spend.
    """

    def __init__(self, ledger: Ledger) -> None:
        super().__init__(ledger)
        st = ledger.state()
        if st.delta is None:
            raise ParameterError("LedgerApproxBudget needs a ledger made with delta=")
        self.delta = st.delta
        self.accountant = st.accountant

    @property
    def guarantee(self) -> ComposedGuarantee:
        """The ``(ε, δ)`` of every entry in the ledger together."""
        g = self.ledger.state().guarantee
        assert g is not None
        return g

    @property
    def spent(self) -> Fraction:
        """The composed ε of every entry (including releases still running)."""
        return Fraction(self.guarantee.epsilon)

    @property
    def curves(self) -> tuple[ReleaseCurve, ...]:
        """The curve of every entry, in order."""
        return self.ledger.state().curves

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> Iterator[Fraction]:
        """Commit the release and its curve to the ledger before the block runs."""
        with self.ledger.reserve(epsilon, label=label, curve=curve) as eps:
            yield eps

    def spend(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> None:
        """Record a release made outside snapcore in the ledger (see
        :meth:`snapcore.Ledger.spend`)."""
        self.ledger.spend(epsilon, label=label, curve=curve)

    def __repr__(self) -> str:
        st = self.ledger.state()
        assert st.guarantee is not None
        return (
            f"LedgerApproxBudget({self.ledger.path!r}, epsilon={short(st.total)}, "
            f"delta={float(self.delta):.3g}, accountant={self.accountant!r}, "
            f"releases={st.guarantee.releases}, spent={st.guarantee.epsilon:.6g})"
        )
