"""The exceptions snapcore raises.

Every exception derives from :class:`SnapcoreError`.  Parameter errors are also
:class:`ValueError`, so code written against the standard library keeps working.
They are raised before any randomness is drawn and never depend on private data.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "MissingValueError",
    "ParameterError",
    "PluginError",
    "SnapcoreError",
    "SourceExhaustedError",
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
    """A replay source has no recorded draws left."""
