"""Every exception snapcore raises, in one place.

The hierarchy::

    Exception
    ├── SnapcoreError                       root of everything snapcore raises on purpose
    │   ├── ParameterError (ValueError)     a parameter or input value outside its range
    │   │   └── DataError                   the private data cannot be used as given
    │   │                                   (missing values, non-numbers, unreadable file)
    │   │       └── MissingValueError       a data column holds None, NaN, NA or NaT
    │   ├── BackendUnavailableError (ImportError)
    │   │                                   a backend's library is not installed
    │   ├── PlotDependencyError (ImportError)
    │   │                                   matplotlib, needed for plots, is not installed
    │   ├── PluginError                     a plugin could not be registered or is malformed
    │   ├── SourceExhaustedError            a replay source has no recorded draws left
    │   ├── BudgetExceededError             a release would overspend a Budget
    │   │                                   (exit status 4 on the command line)
    │   ├── LedgerError                     a budget ledger is missing, corrupt or tampered
    │   │                                   with (refused, never reset)
    │   ├── SnapOverflowError (OverflowError)
    │   │                                   a snapped value is not a finite double
    │   ├── WorkerError                     a partial failed on a worker (message withheld)
    │   ├── AuditError                      the audit found the mechanism inconsistent
    │   └── AuditLimitError                 the audit would need more enumeration than allowed
    └── AssertionError
        ├── ConformanceError                a backend result differs from the reference
        │                                   (raised by the shipped conformance suite)
        └── StatisticConformanceError       a statistic broke its declared sensitivity,
                                            value range or data independence

Parameter errors are also :class:`ValueError`, so code written against the standard library
keeps working.  They are raised before any randomness is drawn and never depend on private
data.  Other modules import their exceptions from here; none defines its own, but for the
command line's one exception type, ``snapcore.cli._output.UsageError``: a click usage
error (exit status 2) that click reports, never raised by the library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction

from snapcore._display import DOUBLE_DIGITS, short

__all__ = [
    "AuditError",
    "AuditLimitError",
    "BackendUnavailableError",
    "BudgetExceededError",
    "ConformanceError",
    "DataError",
    "LedgerError",
    "MissingValueError",
    "ParameterError",
    "PlotDependencyError",
    "PluginError",
    "SnapOverflowError",
    "SnapcoreError",
    "SourceExhaustedError",
    "StatisticConformanceError",
    "WorkerError",
    "keyword",
    "parameter_name",
    "show",
    "spelling",
]

#: How the interface in use spells a parameter: ``name -> (spelling, is_a_flag)``, or
#: None for the Python spelling.  Set by :func:`spelling` (the command line sets it).
Speller = Callable[[str], "tuple[str, bool] | None"]

_SPELLING: ContextVar[Speller | None] = ContextVar("snapcore_spelling", default=None)
_UNSET = object()


@contextmanager
def spelling(speller: Speller) -> Iterator[None]:
    """Within the block, messages spell parameters as ``speller`` says (context-local).

    ``speller(name)`` returns ``(spelling, is_a_flag)`` for a parameter the interface
    has (``("--n", False)``, ``("--other", True)``), or None to keep the Python
    spelling.  The command line uses its own option definitions.
    """
    token = _SPELLING.set(speller)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def _spelled(name: str) -> tuple[str, bool] | None:
    speller = _SPELLING.get()
    return None if speller is None else speller(name)


def parameter_name(name: str) -> str:
    """A parameter as the interface in use names it: ``n`` in Python, ``--n`` in the CLI."""
    s = _spelled(name)
    return name if s is None else s[0]


def keyword(name: str, value: object = _UNSET) -> str:
    """A parameter as one writes it in the interface in use, optionally with a value:
    ``n=`` / ``missing='drop'`` in Python, ``--n`` / ``--missing drop`` in the CLI."""
    s = _spelled(name)
    if s is None:
        return f"{name}=" if value is _UNSET else f"{name}={show(value)}"
    flag, is_flag = s
    if value is _UNSET or (is_flag and value is True):
        return flag
    return f"{flag} {value}"


def show(value: object, limit: int = 40) -> str:
    """``repr(value)`` for messages about **public** parameters, kept short.

    Numbers whose repr is longer than ``limit`` (``10**400``, a Fraction with huge
    terms, a long Decimal) are shown by ``snapcore._display.short`` to 17 digits
    (``1e+400``; ``≈5.721245194772949e-955`` for ``Fraction(1, 3**2000)``); other long
    reprs are cut.  Never use it for private data: messages about data name the type
    only.
    """
    from decimal import Decimal

    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return short(value, digits=DOUBLE_DIGITS)
    try:
        text = repr(value)
    except ValueError:  # e.g. an int beyond the str-conversion digit limit
        text = ""
    if text and len(text) <= limit:
        return text
    q: Fraction | None = None
    try:
        if isinstance(value, Decimal) and value.is_finite():
            q = Fraction(value)
        elif not isinstance(value, bool | float | complex | str | bytes):
            num, den = value.numerator, value.denominator  # type: ignore[attr-defined]
            q = Fraction(int(num), int(den))
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        q = None
    if q is not None:
        return short(q, digits=DOUBLE_DIGITS)
    return text[: limit - 3] + "..." if text else f"<{type(value).__name__}>"


class SnapcoreError(Exception):
    """Root of every snapcore exception."""


class ParameterError(SnapcoreError, ValueError):
    """A parameter or input value is outside its valid range.

    The message names the parameter, the rule and the offending value (never a value of
    the private data).

    Parameters
    ----------
    *args
        The message, as for :class:`ValueError`.
    parameter : str, optional
        The Python keyword of the parameter at fault (``"n"``, ``"data_bounds"``), when
        one is: kept as :attr:`parameter`, and as :attr:`shown_as` in the spelling of
        the interface in use when the error was raised (``"--n"`` on the command line).
    """

    parameter: str | None
    shown_as: str | None

    def __init__(self, *args: object, parameter: str | None = None) -> None:
        super().__init__(*args)
        self.parameter = parameter
        self.shown_as = None if parameter is None else parameter_name(parameter)


class DataError(ParameterError):
    """The data cannot be used as given: missing or non-numeric values where numbers are
    needed, a column that is not there, a file that cannot be read.  The message names
    the column and the kind of problem, never a record or a value."""


class MissingValueError(DataError):
    """A data column contains missing values (None, NaN, pandas NA, NaT).

    The release refuses them unless a missing-value policy says otherwise
    (``missing="drop"`` or ``"impute"``, :mod:`snapcore.data`); the one place that
    detects missing values is ``check_missing`` in ``snapcore.data._missing``.
    """


class PluginError(SnapcoreError):
    """A plugin could not be registered (for example, a duplicate name)."""


class BackendUnavailableError(SnapcoreError, ImportError):
    """A registered backend cannot be used because its library is missing."""


class SourceExhaustedError(SnapcoreError):
    """A source cannot supply the draws asked for (a replay source has too few left)."""


class PlotDependencyError(SnapcoreError, ImportError):
    """matplotlib, needed for plots, is not installed."""


class BudgetExceededError(SnapcoreError):
    """A release would spend more ε than the budget has left; nothing was drawn."""


class SnapOverflowError(SnapcoreError, OverflowError):
    """The nearest multiple of ``Λ`` is not a finite double (it is ``±2**1024``)."""


class WorkerError(SnapcoreError):
    """Computing a partial state failed on a worker with an unexpected exception.

    Only the exception's type is kept: its message and traceback may carry data
    values, so they are not sent back to the caller.
    """


class AuditError(SnapcoreError):
    """The audit found the mechanism inconsistent with its own assumptions
    (for example a map ``U* -> output`` that is not monotone)."""


class AuditLimitError(SnapcoreError):
    """The parameters need more enumeration than the audit's limit allows.

    The audit refuses rather than report a truncated result.
    """


class ConformanceError(AssertionError):
    """A backend result differs from the reference (raised by :mod:`snapcore.testing`)."""


class LedgerError(SnapcoreError):
    """A budget ledger cannot be used: missing, already existing (on init), corrupt,
    truncated, tampered with, or of another schema version.

    A ledger that fails its checks is refused and left untouched; it is never reset.
    """


class StatisticConformanceError(AssertionError):
    """A statistic broke its declared sensitivity, value range or data independence
    (raised by the statistic conformance suite, :mod:`snapcore.testing`)."""
