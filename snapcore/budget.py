"""A privacy budget under sequential composition, with exact accounting.

Releases with ε₁, ε₂, ... on the same data are together (ε₁ + ε₂ + ...)-DP
(sequential composition).  :class:`Budget` keeps that sum as an exact Fraction and
refuses a release that would exceed the total **before** any noise is drawn.  A
release reserves its ε first; if it then fails, the reservation is returned and
nothing is spent (nothing was released).  All of this is safe across threads.

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

from snapcore.errors import BudgetExceededError
from snapcore.params import check_real

__all__ = ["Budget"]


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
            return self._spent

    @property
    def remaining(self) -> Fraction:
        """ε not yet spent or reserved."""
        with self._lock:
            return self.total - self._spent - self._reserved

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
            If ``epsilon`` is not a finite number >= 0.
        """
        eps = check_real("epsilon", epsilon)
        if eps < 0:
            from snapcore.errors import ParameterError

            raise ParameterError(f"epsilon must be >= 0, got {epsilon!r}")
        with self._lock:
            left = self.total - self._spent - self._reserved
            if eps > left:
                raise BudgetExceededError(
                    f"release refused: it needs epsilon = {float(eps)!r} but the budget has "
                    f"{float(left)!r} left (total {float(self.total)!r}, spent "
                    f"{float(self._spent)!r}); nothing was drawn or spent"
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

    def spend(self, epsilon: Any, *, label: str = "") -> None:
        """Record ``epsilon`` as spent (for releases made outside snapcore).

        Raises
        ------
        BudgetExceededError
            If it exceeds what remains; nothing is recorded.
        """
        with self.reserve(epsilon, label=label):
            pass

    def __repr__(self) -> str:
        return (
            f"Budget(total={float(self.total)!r}, spent={float(self.spent)!r}, "
            f"remaining={float(self.remaining)!r})"
        )
