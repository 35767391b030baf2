"""The exceptions snapcore raises.

Every exception derives from :class:`SnapcoreError`.  Parameter errors are also
:class:`ValueError`, so code written against the standard library keeps working.
They are raised before any randomness is drawn and never depend on private data.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "LedgerError",
    "ParameterError",
    "PluginError",
    "SnapcoreError",
    "SourceExhaustedError",
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


class LedgerError(SnapcoreError):
    """A budget ledger cannot be used: missing, already existing (on init), corrupt,
    truncated, tampered with, or of another schema version.

    A ledger that fails its checks is refused and left untouched; it is never reset.
    """
