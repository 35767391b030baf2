"""Every exception snapcore raises, in one place.

The hierarchy::

    Exception
    ├── SnapcoreError                       root of everything snapcore raises on purpose
    │   ├── ParameterError (ValueError)     a parameter or input value outside its range
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
    "ParameterError",
    "PlotDependencyError",
    "PluginError",
    "SnapOverflowError",
    "SnapcoreError",
    "SourceExhaustedError",
    "StatisticConformanceError",
    "show",
]


def show(value: object) -> str:
    """``repr(value)`` for error messages, kept short and possible for huge Fractions."""
    from fractions import Fraction

    if (
        isinstance(value, Fraction)
        and max(value.numerator.bit_length(), value.denominator.bit_length()) > 4000
    ):
        lg = value.numerator.bit_length() - value.denominator.bit_length()
        return f"Fraction(about 2**{lg})"
    return repr(value)


class SnapcoreError(Exception):
    """Root of every snapcore exception."""


class ParameterError(SnapcoreError, ValueError):
    """A parameter or input value is outside its valid range.

    The message names the parameter, the rule and the offending value.
    """


class PluginError(SnapcoreError):
    """A plugin could not be registered (for example, a duplicate name)."""


class BackendUnavailableError(SnapcoreError, ImportError):
    """A registered backend cannot be used because its library is missing."""


class SourceExhaustedError(SnapcoreError):
    """A replay source has no recorded draws left."""


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
