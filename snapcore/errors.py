"""The exceptions snapcore raises.

Every exception derives from :class:`SnapcoreError`.  Parameter errors are also
:class:`ValueError`, so code written against the standard library keeps working.
They are raised before any randomness is drawn and never depend on private data.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "ParameterError",
    "PluginError",
    "SnapcoreError",
    "SourceExhaustedError",
]


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
