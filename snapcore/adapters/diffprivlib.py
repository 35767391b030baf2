"""A drop-in for diffprivlib's ``Snapping``, and accountant bridges
(``pip install snapcore[diffprivlib]``).

A diffprivlib user switches one import::

    from diffprivlib.mechanisms import Snapping   # float arithmetic
    from snapcore.adapters.diffprivlib import Snapping     # snapcore: exact at every step

and keeps the signature ``Snapping(epsilon=, sensitivity=, lower=, upper=,
random_state=)`` and the methods ``randomise``, ``bias``, ``variance``, ``mse`` and
``effective_epsilon``.  The class subclasses diffprivlib's ``DPMechanism``, so
diffprivlib code that checks for a mechanism accepts it.

Where the contract differs, and why:

* ``random_state`` is honoured as diffprivlib defines it: ``None`` draws from the
  operating system's CSPRNG (diffprivlib's ``secrets.SystemRandom``), an int or a
  ``numpy.random.RandomState`` makes the releases reproducible, by reading snapcore's
  draws from that generator's bytes (``RandomState.bytes``).  The values differ from
  diffprivlib's for the same seed (another sampler), and a seeded generator is not for
  production.  A snapcore :class:`~snapcore.RandomSource` is accepted as well.
* ``bias``, ``variance`` and ``mse`` (diffprivlib's Snapping raises
  ``NotImplementedError``) are, by default, those of the mechanism as implemented:
  snapcore's p-bit pipeline, whose exact output distribution for one input
  :func:`snapcore.analysis.exact_output_distribution` enumerates (every output, its
  probability a dyadic rational).  The moments are summed exactly in rationals and
  rounded once to the nearest double.  They differ from the *ideal* mechanism's
  (real-valued Laplace noise, snapped and clamped exactly) by terms of relative size
  about ``2**-120`` (measured in the tests against the Laplace CDF at 60 digits; no
  bound for every configuration is derived), invisible in a double except where the
  ideal value is 0: the
  snapping rounds ties toward +∞, and ties have probability about ``2**-118`` for
  p-bit arithmetic and 0 for real arithmetic, so at the interval's centre the bias
  is about ``+2e-36`` (for ε = 1, Δ = 1, bounds (0, 10)), not 0.  The cost grows
  with the number of outputs, about ``2·B/Λ + 3``: 1 ms for 7 outputs, 0.1 s for
  503, 2 s for 8003 (one core); past the audit's limit of 32768 outputs they raise
  :class:`~snapcore.AuditLimitError` before any work rather than switch silently to
  another quantity (docs/embedding.md argues the choice).  ``exact=False`` gives
  the ideal mechanism's values instead (its bias exactly,
  :func:`snapcore.analysis.bias`; its variance as an upper bound tight to double
  precision), at a cost independent of ``B/Λ``.  Like
  diffprivlib's, these methods take a ``value``: pass a guess, never private data.
* Input: a non-number raises ``TypeError`` (as in diffprivlib); NaN and ±inf raise
  :class:`~snapcore.ParameterError`, a ``ValueError`` (diffprivlib returns NaN).
  ``lower == upper`` is refused (snapcore needs an interval).

The bridges, both ways:

* :class:`SnapcoreAccountant`: a diffprivlib ``BudgetAccountant`` that charges a
  :class:`snapcore.Budget` (in memory or on a ledger), so diffprivlib models and
  tools spend snapcore's budget exactly (a float ε is taken at its exact value);
* :class:`AccountantBudget`: a :class:`snapcore.Budget` that charges a diffprivlib
  ``BudgetAccountant``, so :func:`snapcore.release` spends diffprivlib's budget (ε
  rounded **up** to a double).

Both charge **before** any noise is drawn and never give ε back.  diffprivlib's
models and tools call ``check``, then train (drawing noise), then ``spend``;
:class:`SnapcoreAccountant` therefore takes the ε from the budget in ``check`` (on a
ledger, committed to disk) and its ``spend`` records that reservation instead of
charging twice, so a model trained is a model charged, even when another process
spends the same ledger between the two calls.

Both are pure ε-DP: a spend with δ > 0 is refused.
"""

from __future__ import annotations

import inspect
import math
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from numbers import Real
from typing import Any, cast

import numpy as np

try:
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.mechanisms.base import DPMechanism
    from diffprivlib.utils import Budget as _DPBudget, BudgetError, check_random_state
    from diffprivlib.validation import check_epsilon_delta
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "snapcore.adapters.diffprivlib needs diffprivlib 0.6.6 (and scikit-learn < 1.6): "
        'pip install "snapcore[diffprivlib]"'
    ) from exc

from snapcore.calibration._params import check_real
from snapcore.errors import AuditLimitError, BudgetExceededError, ParameterError
from snapcore.exact._ieee754 import round_down_double, round_up_double
from snapcore.mechanism._mechanism import SnappingMechanism
from snapcore.randomness._sources import ByteSource, RandomSource, SystemSource
from snapcore.releases._budget import Budget

__all__ = ["AccountantBudget", "RandomStateSource", "SnapcoreAccountant", "Snapping"]

#: Exact moments kept per Snapping object (one per input value asked about).
_MOMENTS_CACHE = 64


class RandomStateSource(ByteSource):
    """Draws read from a ``numpy.random.RandomState``'s bytes (reproducible; NOT for
    production releases)."""

    name = "randomstate"

    def __init__(self, rng: np.random.RandomState) -> None:
        super().__init__()
        self.rng = rng

    def read(self, n: int) -> bytes:
        data: bytes = self.rng.bytes(n)
        return data


def _source(random_state: Any) -> RandomSource:
    if isinstance(random_state, RandomSource):
        return random_state
    rng = check_random_state(random_state, True)  # diffprivlib's own reading of it
    if isinstance(rng, secrets.SystemRandom):
        return SystemSource()
    if isinstance(rng, np.random.RandomState):
        return RandomStateSource(rng)
    raise ParameterError(  # pragma: no cover - check_random_state returns one of the two
        f"random_state must be None, an int or a numpy RandomState, got {random_state!r}"
    )


class Snapping(DPMechanism):  # type: ignore[misc]
    r"""The snapping mechanism (Mironov 2012), diffprivlib's interface, snapcore's arithmetic.

    Parameters
    ----------
    epsilon : float
        ε > 0 (taken at its exact value).
    sensitivity : float
        Δ >= 0.  With Δ = 0 the value is only clamped to ``[lower, upper]`` (as in
        diffprivlib).
    lower, upper : float
        The clamp interval; outputs lie in it.  ``lower < upper``.
    random_state : None, int, numpy RandomState, or snapcore RandomSource
        ``None`` (default): the OS CSPRNG.  Otherwise reproducible, not for production.

    Raises
    ------
    TypeError
        If a parameter is not a number (as diffprivlib).
    ValueError
        If a parameter is out of range (a :class:`~snapcore.ParameterError` for the
        rules snapcore adds).
    """

    def __init__(
        self,
        *,
        epsilon: float,
        sensitivity: float,
        lower: float,
        upper: float,
        random_state: Any = None,
    ) -> None:
        if isinstance(random_state, RandomSource):
            super().__init__(epsilon=epsilon, delta=0.0, random_state=None)
            self.random_state = random_state
        else:
            super().__init__(epsilon=epsilon, delta=0.0, random_state=random_state)
        for name, v in (("sensitivity", sensitivity), ("lower", lower), ("upper", upper)):
            if not isinstance(v, Real):
                raise TypeError(f"{name} must be numeric, got {type(v).__name__}")
        delta = check_real("sensitivity", sensitivity)
        if delta < 0:
            raise ParameterError(f"sensitivity must be >= 0, got {sensitivity!r}")
        self._epsilon_exact = check_real("epsilon", epsilon, positive=True)
        self.sensitivity = float(sensitivity)
        self.lower, self.upper = float(lower), float(upper)
        self._source = _source(random_state)
        self._mech: SnappingMechanism | None = None
        self._moments: dict[tuple[int, int], tuple[Fraction, Fraction]] = {}
        if delta == 0:
            check_real("lower", lower)
            check_real("upper", upper)
            if not self.lower < self.upper:
                raise ParameterError(f"lower < upper required, got ({lower!r}, {upper!r})")
        else:
            self._mech = SnappingMechanism(
                epsilon=self._epsilon_exact,
                sensitivity=sensitivity,
                clamp_bounds=(lower, upper),
                source=self._source,
            )

    @property
    def mechanism(self) -> SnappingMechanism | None:
        """The snapcore mechanism doing the work (None when Δ = 0)."""
        return self._mech

    def _check_value(self, value: Any) -> Fraction:
        if not isinstance(value, Real):
            raise TypeError("Value to be randomised must be a number")
        return check_real("value", value)

    def _clamp(self, x: Fraction) -> float:
        return float(min(max(x, Fraction(self.lower)), Fraction(self.upper)))

    def randomise(self, value: float) -> float:
        """Randomise ``value`` with the snapping mechanism (one ε-DP release)."""
        if self._mech is None:
            return self._clamp(self._check_value(value))
        if not isinstance(value, Real):
            raise TypeError("Value to be randomised must be a number")
        # The mechanism checks the value within its padded release (docs/timing.md):
        # reading it exactly here would take a value-dependent time outside the padding.
        return float(self._mech.release(cast(Any, value)))

    def effective_epsilon(self) -> float:
        """ε′, the Laplace parameter the mechanism uses to guarantee ε (rounded down)."""
        if self._mech is None:
            return float(self.epsilon)
        return round_down_double(self._mech.epsilon_prime)

    def _exact_moments(self, x: Fraction) -> tuple[Fraction, Fraction]:
        """``(E[out], Var[out])`` of the implemented mechanism at ``x``, exactly."""
        key = (x.numerator, x.denominator)
        hit = self._moments.get(key)
        if hit is not None:
            return hit
        from snapcore.analysis._audit import DEFAULT_MAX_OUTPUTS, exact_output_distribution

        mech = self._mech
        if mech is None:  # pragma: no cover - the callers handle Δ = 0 first
            raise ParameterError("sensitivity 0 has no noise to describe")
        try:
            d = exact_output_distribution(mech, x)
        except AuditLimitError as exc:
            raise AuditLimitError(
                "the exact bias and variance of the implemented mechanism enumerate its "
                f"outputs (at most {DEFAULT_MAX_OUTPUTS}); these parameters need more. "
                "Pass exact=False for the ideal mechanism's values. "
                f"({exc})"
            ) from None
        moments = d.moments()
        if len(self._moments) >= _MOMENTS_CACHE:
            self._moments.clear()
        self._moments[key] = moments
        return moments

    def bias(self, value: float, *, exact: bool = True) -> float:
        """The bias ``E[output] − value`` at ``value`` (a guess, not private data).

        Parameters
        ----------
        value : float
            The input the bias is sought at.
        exact : bool
            True (default): the implemented mechanism's exact bias, computed in
            rationals from its exact output distribution
            (:func:`snapcore.analysis.exact_output_distribution`), rounded to the
            nearest double.  False: the ideal mechanism's
            (:func:`snapcore.analysis.bias`).

        Raises
        ------
        TypeError
            If ``value`` is not a number.
        ParameterError
            If it is NaN or infinite.
        AuditLimitError
            With ``exact=True``, if the distribution has more outputs than the
            audit enumerates (about ``2·B/Λ + 3`` > 32768), before any work.
        """
        x = self._check_value(value)
        if self._mech is None:
            return float(Fraction(self._clamp(x)) - x)
        if exact:
            mean, _ = self._exact_moments(x)
            return float(mean - x)
        from snapcore.analysis._estimates import bias

        return bias(self._mech, x).ideal

    def variance(self, value: float, *, exact: bool = True) -> float:
        """The variance of the output at ``value`` (a guess, not private data).

        ``exact=True`` (default): the implemented mechanism's exact variance,
        rounded to the nearest double; ``exact=False``: an upper bound, tight to
        double precision, on the ideal mechanism's.  Raises as :meth:`bias`.
        """
        x = self._check_value(value)
        if self._mech is None:
            return 0.0
        if exact:
            _, var = self._exact_moments(x)
            return float(var)
        from snapcore.analysis._estimates import ideal_output_distribution

        d = ideal_output_distribution(self._mech, x, window=40)
        mean = float(x) + self.bias(value, exact=False)
        listed = math.fsum(
            p * (v - mean) ** 2 for v, p in zip(d.values, d.probabilities, strict=True)
        )
        rest = d.omitted * (self.upper - self.lower) ** 2
        return listed + rest

    def mse(self, value: float, *, exact: bool = True) -> float:
        """The mean squared error ``E[(output − value)²]`` at ``value`` (a guess).

        ``exact=True`` (default): ``Var + bias²`` of the implemented mechanism,
        exactly, rounded once to the nearest double; ``exact=False``: from the ideal
        values (diffprivlib's formula).  Raises as :meth:`bias`.
        """
        x = self._check_value(value)
        if self._mech is None or not exact:
            return self.variance(value, exact=exact) + self.bias(value, exact=exact) ** 2
        mean, var = self._exact_moments(x)
        return float(var + (mean - x) ** 2)


def _pure(epsilon: Any, delta: Any) -> Fraction:
    check_epsilon_delta(epsilon, delta)
    if delta != 0:
        raise BudgetError(f"a snapcore budget is pure epsilon-DP; delta must be 0, got {delta!r}")
    return check_real("epsilon", epsilon)


class SnapcoreAccountant(BudgetAccountant):  # type: ignore[misc]
    """A diffprivlib ``BudgetAccountant`` that charges a :class:`snapcore.Budget`.

    Pass it as ``accountant=`` to diffprivlib models and tools, or make it the
    default with ``set_default()``.  ε is charged to ``budget`` exactly (the float
    ε at its exact value) and refused, with diffprivlib's ``BudgetError``, when the
    budget cannot cover it or δ > 0.  The totals come from ``budget``, so spends
    made through snapcore show here too.

    **Reserve, then commit.**  diffprivlib's models and tools call ``check``, train
    (drawing noise), then call ``spend`` from the same function.  :meth:`check`
    charges the ε at once (on a ledger, committed to disk before it returns), and
    the matching :meth:`spend`, from the same call of the same function, records
    that charge without taking the ε again.  Another process spending the shared
    budget in between cannot leave a trained model uncharged.  A model or tool that
    fails between ``check`` and ``spend`` stays charged: it may have drawn noise.
    So ``check`` is not a question: to ask what is left without charging, call
    :meth:`remaining`.

    Parameters
    ----------
    budget : snapcore.Budget
        In memory or ledger-backed (:meth:`snapcore.Budget.from_ledger`).
    """

    def __init__(self, budget: Budget) -> None:
        if not isinstance(budget, Budget):
            raise ParameterError(f"budget must be a snapcore.Budget, got {budget!r}")
        super().__init__(epsilon=round_down_double(budget.total), delta=0.0)
        self.budget = budget
        # Per thread: the reservation of the last check, with the frame that made it.
        self._reserved = threading.local()

    def check(self, epsilon: float, delta: float) -> bool:
        """Reserve ``(epsilon, delta)``: charge it to ``budget`` now, before the caller
        draws noise, for the caller's :meth:`spend` to record.  True, or
        ``BudgetError`` when the budget cannot cover it (nothing is charged)."""
        eps = _pure(epsilon, delta)
        caller = self._caller()
        self._reserved.slot = None  # an earlier check never followed by spend stays charged
        try:
            with self.budget.reserve(eps, label="diffprivlib"):
                pass
        except BudgetExceededError:
            raise BudgetError(
                f"Privacy spend of ({epsilon},{delta}) not permissible; the snapcore budget "
                f"has {float(self.budget.remaining)!r} left. Nothing was charged, and "
                "no noise is drawn for it."
            ) from None
        self._reserved.slot = (epsilon, delta, caller)
        return True

    def _caller(self) -> tuple[int, Any]:
        """Identity of the function that called :meth:`check` or :meth:`spend` (frames
        of this accountant's own methods, a subclass's overrides, are skipped)."""
        here = inspect.currentframe()
        frame = here.f_back.f_back if here and here.f_back and here.f_back.f_back else None
        while (
            frame is not None and frame.f_back is not None and frame.f_locals.get("self") is self
        ):
            frame = frame.f_back
        return (id(frame), None if frame is None else frame.f_code)

    def spend(self, epsilon: float, delta: float) -> SnapcoreAccountant:
        """Record a spend of ``epsilon`` (δ must be 0).

        After a :meth:`check` of the same ``(epsilon, delta)`` from the same call of
        the same function, the ε is already charged and is recorded only; otherwise
        it is charged now (a release made elsewhere), and refused with
        ``BudgetError`` when the budget cannot cover it.
        """
        eps = _pure(epsilon, delta)
        caller = self._caller()
        slot = getattr(self._reserved, "slot", None)
        self._reserved.slot = None
        if slot != (epsilon, delta, caller):
            try:
                self.budget.spend(eps, label="diffprivlib")
            except BudgetExceededError as exc:
                raise BudgetError(
                    f"{exc}. It was not reserved by check() from the same call, so if noise "
                    "was already drawn for it, that release is not covered by the budget"
                ) from None
        self._BudgetAccountant__spent_budget.append((epsilon, delta))
        return self

    def total(self, spent_budget: Any = None, slack: Any = None) -> Any:
        """The ε spent from the snapcore budget (rounded up), and δ = 0."""
        if spent_budget is not None or slack is not None:
            return super().total(spent_budget=spent_budget, slack=slack)
        return _DPBudget(round_up_double(self.budget.spent), 0.0)

    def remaining(self, k: int = 1) -> Any:
        """ε left for each of ``k`` equal spends (rounded down), and δ = 0."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        return _DPBudget(round_down_double(self.budget.remaining / k), 0.0)


class AccountantBudget(Budget):
    """A :class:`snapcore.Budget` that charges a diffprivlib ``BudgetAccountant``.

    Pass it as ``budget=`` to :func:`snapcore.release`.  A reservation spends
    ``RU(ε)`` (ε rounded up to a double) from the accountant *before* the release
    draws noise, and is refused with :class:`~snapcore.BudgetExceededError` when the
    accountant would exceed its budget.  diffprivlib cannot return a spend, so a
    release that fails after its reservation stays charged (as with a ledger).

    Parameters
    ----------
    accountant : diffprivlib.accountant.BudgetAccountant
    """

    def __init__(self, accountant: BudgetAccountant) -> None:
        if not isinstance(accountant, BudgetAccountant):
            raise ParameterError(
                f"accountant must be a diffprivlib BudgetAccountant, got {accountant!r}"
            )
        self.accountant = accountant
        self.total = Fraction(accountant.epsilon)
        self._lock = threading.Lock()

    @property
    def spent(self) -> Fraction:
        """ε the accountant has spent (its own composition, exact value of its float)."""
        return Fraction(self.accountant.total()[0])

    @property
    def remaining(self) -> Fraction:
        """ε the accountant has left for one more spend."""
        return Fraction(self.accountant.remaining()[0])

    @property
    def history(self) -> tuple[tuple[str, Fraction], ...]:
        """``("", ε)`` for every spend the accountant recorded."""
        return tuple(("", Fraction(e)) for e, _ in self.accountant.spent_budget)

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "") -> Iterator[Fraction]:
        """Spend ``RU(epsilon)`` from the accountant, then run the block.

        Raises
        ------
        BudgetExceededError
            If the accountant refuses the spend; the block does not run.
        ParameterError
            If ``epsilon`` is not a finite number > 0.
        """
        eps = check_real("epsilon", epsilon, positive=True)
        with self._lock:
            try:
                self.accountant.spend(round_up_double(eps), 0.0)
            except BudgetError as exc:
                raise BudgetExceededError(
                    f"release refused by the diffprivlib accountant: {exc}; nothing was "
                    "drawn or spent"
                ) from None
        yield eps
