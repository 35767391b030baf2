"""Neighbouring relations: which datasets count as differing in one record."""

from __future__ import annotations

import enum
from typing import Any

from snapcore.errors import ParameterError, parameter_name

__all__ = ["Neighbouring"]


class Neighbouring(enum.Enum):
    """Neighbouring relations: which datasets count as differing in one record."""

    #: Bounded DP: the number of records n is public; neighbours replace one record.
    REPLACE = "replace"
    #: Unbounded DP: neighbours add or remove one record (n is private).
    ADD_REMOVE = "add-remove"

    @property
    def description(self) -> str:
        """One line for people."""
        if self is Neighbouring.REPLACE:
            return "bounded: n public, one record replaced"
        return "unbounded: add or remove one record"

    @classmethod
    def parse(cls, value: Any) -> Neighbouring:
        """A relation from itself or its value (``"replace"``, ``"add-remove"``)."""
        if isinstance(value, Neighbouring):
            return value
        for r in cls:
            if value == r.value:
                return r
        raise ParameterError(
            f"{parameter_name('relation')} must be one of {[r.value for r in cls]}, got {value!r}",
            parameter="relation",
        )
