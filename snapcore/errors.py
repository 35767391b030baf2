"""Every exception snapcore raises, in one place.

The hierarchy::

    Exception
    ├── SnapcoreError                       root of everything snapcore raises on purpose
    │   ├── ParameterError (ValueError)     a parameter or input value outside its range
    │   │   └── MissingValueError           a data column holds None, NaN, NA or NaT
    │   ├── BackendUnavailableError (ImportError)
    │   │                                   a backend's library is not installed
    │   ├── PlotDependencyError (ImportError)
    │   │                                   matplotlib, needed for plots, is not installed
    │   ├── PluginError                     a plugin could not be registered or is malformed
    │   ├── SourceExhaustedError            a replay source has no recorded draws left
    │   ├── BudgetExceededError             a release would overspend a Budget
    │   ├── SnapOverflowError (OverflowError)
    │   │                                   a snapped value is not a finite double
    │   ├── AuditError                      the audit found the mechanism inconsistent
    │   └── AuditLimitError                 the audit would need more enumeration than allowed
    └── AssertionError
        ├── ConformanceError                a backend result differs from the reference
        │                                   (raised by the shipped conformance suite)
        └── StatisticConformanceError       a statistic broke its declared sensitivity,
                                            value range or data independence

Parameter errors are also :class:`ValueError`, so code written against the standard library
keeps working.  They are raised before any randomness is drawn and never depend on private
data.  Other modules import their exceptions from here; none defines its own.
"""

from __future__ import annotations

__all__ = [
    "AuditError",
    "AuditLimitError",
    "BackendUnavailableError",
    "BudgetExceededError",
    "ConformanceError",
    "MissingValueError",
    "ParameterError",
    "PlotDependencyError",
    "PluginError",
    "SnapOverflowError",
    "SnapcoreError",
    "SourceExhaustedError",
    "StatisticConformanceError",
    "show",
]


def show(value: object, limit: int = 40) -> str:
    """``repr(value)`` for messages about **public** parameters, kept short.

    Numbers whose repr is longer than ``limit`` (``10**400``, a Fraction with huge
    terms, a long Decimal) are shown as ``~1e+400`` or ``2**-1100`` (see
    :func:`snapcore.values.format_number`); other long reprs are cut.  Never use it
    for private data: messages about data name the type only.
    """
    from fractions import Fraction

    from snapcore.values import _ratio, _Refused, format_number

    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return format_number(Fraction(value))
    try:
        text = repr(value)
    except ValueError:  # e.g. an int beyond the str-conversion digit limit
        text = ""
    if len(text) <= limit and text:
        return text
    try:
        n, d = _ratio(value)
    except (_Refused, ValueError, TypeError, OverflowError):
        return text[: limit - 3] + "..." if text else f"<{type(value).__name__}>"
    return format_number(Fraction(n, d))


class SnapcoreError(Exception):
    """Root of every snapcore exception."""


class ParameterError(SnapcoreError, ValueError):
    """A parameter or input value is outside its valid range.

    The message names the parameter, the rule and the offending value.
    """


class MissingValueError(ParameterError):
    """A data column contains missing values (None, NaN, pandas NA, NaT).

    snapcore neither drops nor imputes records; the one place that detects missing
    values is :func:`snapcore.values.check_missing`.
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


class AuditError(SnapcoreError):
    """The audit found the mechanism inconsistent with its own assumptions
    (for example a map ``U* -> output`` that is not monotone)."""


class AuditLimitError(SnapcoreError):
    """The parameters need more enumeration than the audit's limit allows.

    The audit refuses rather than report a truncated result.
    """


class ConformanceError(AssertionError):
    """A backend result differs from the reference (raised by :mod:`snapcore.testing`)."""


class StatisticConformanceError(AssertionError):
    """A statistic broke its declared sensitivity, value range or data independence
    (raised by the statistic conformance suite, :mod:`snapcore.testing`)."""
