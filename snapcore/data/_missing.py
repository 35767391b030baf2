"""Missing values (None, NaN, pandas NA, NaT, blank CSV cells): what is missing, and
what a public policy does with them.

:func:`is_missing` decides what a missing value is and :func:`check_missing` refuses a
column holding one, with the one error of :func:`missing_values_error` (extend them,
not their callers).  The policy:

- ``"error"`` (the default): the release is refused before any noise;
- ``"drop"``: records with a missing value in a column the statistic reads are
  removed.  Removing a record is a neighbour only under ``add-remove``, so the policy
  is refused under ``replace`` (n would change, and n is public there);
- ``"impute"``: each missing value is replaced by a public constant (``impute=``).
  A per-record map changes one record into one record, so it keeps both relations.

Neither choice depends on the data, and no message names a record or a value.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any

import attrs
import numpy as np

from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import MissingValueError, ParameterError, keyword, parameter_name

__all__ = [
    "MissingPolicy",
    "check_missing",
    "check_missing_policy",
    "is_missing",
    "missing_mask",
    "missing_values_error",
    "with_nulls",
]


def is_missing(value: Any) -> bool:
    """Whether ``value`` is a missing-value marker: None, NaN, pandas NA or NaT."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(value != value)
    t = type(value)
    if t.__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    if isinstance(value, Decimal):
        return value.is_nan()
    if t.__module__ == "gmpy2" and t.__name__ == "mpfr":
        return bool(value != value)
    return False


def missing_values_error(what: str) -> MissingValueError:
    """The one missing-values error (the same text whatever the marker and wherever)."""
    return MissingValueError(
        f"{what} contains missing values (None, NaN, pandas NA or NaT); by default a "
        f"release refuses them; choose a public policy with {keyword('missing', 'drop')} "
        "(add-remove relation only: removing a record is a neighbour there) or "
        f"{keyword('missing', 'impute')} with {keyword('impute')}, a public constant "
        "(docs/statistics.md)",
        parameter="missing",
    )


def check_missing(records: np.ndarray, column: str) -> None:
    """Raise the one missing-values error if any record of ``records`` (one column as a
    NumPy array) is missing (:func:`missing_mask`).  The message names the column and
    the kind of marker, never a record's position.

    Raises
    ------
    MissingValueError
        ``column 'x' contains missing values ...`` (a ParameterError).
    """
    if missing_mask(records.reshape(-1)).any():
        raise missing_values_error(f"column {column!r}")


POLICIES = ("error", "drop", "impute")


@attrs.frozen(kw_only=True)
class MissingPolicy:
    """A checked missing-value policy."""

    kind: str
    constant: Any = None


def check_missing_policy(missing: Any, impute: Any, relation: Neighbouring) -> MissingPolicy:
    """The policy for ``missing=``/``impute=``, refused where it would break the relation."""
    if missing not in POLICIES:
        raise ParameterError(
            f"{parameter_name('missing')} must be one of {list(POLICIES)}, got {missing!r}",
            parameter="missing",
        )
    if missing != "impute" and impute is not None:
        raise ParameterError(
            f"{keyword('impute')} is used only with {keyword('missing', 'impute')}, got "
            f"{keyword('missing', missing)}",
            parameter="impute",
        )
    if missing == "drop" and relation is Neighbouring.REPLACE:
        raise ParameterError(
            f"{keyword('missing', 'drop')} removes records, and removing a record is not a "
            "neighbour under the replace relation (n is public there); use "
            f"{keyword('relation', 'add-remove')} or {keyword('missing', 'impute')} with a "
            "public constant",
            parameter="missing",
        )
    if missing == "impute":
        if impute is None or is_missing(impute):
            raise ParameterError(
                f"{keyword('missing', 'impute')} needs {keyword('impute')}, a public constant "
                "(not missing)",
                parameter="impute",
            )
        real = isinstance(impute, numbers.Real) and not isinstance(impute, bool)
        if real and not math.isfinite(float(impute)):
            raise ParameterError(
                f"{parameter_name('impute')} must be finite, got {impute!r}", parameter="impute"
            )
    return MissingPolicy(kind=missing, constant=impute)


def with_nulls(values: np.ndarray, nulls: np.ndarray) -> np.ndarray:
    """The records of a typed column that has a validity mask (an Arrow column, a
    polars series, a NumPy masked array), each read on its own.

    ``values`` holds every record (any value at a null); ``nulls`` is True at the nulls.
    Without a null, ``values`` itself.  Otherwise integers of every width become an
    object array of Python ints (exact: never a float64 detour, which would round the
    values above 2**53 of every *other* record) with None at each null; floats keep
    their dtype with NaN at each null; any other dtype becomes an object array with
    None at each null.  A null then reaches the missing-value policy as its own record.
    """
    nulls = np.asarray(nulls, dtype=bool).reshape(-1)
    values = np.asarray(values).reshape(-1)
    if not nulls.any():
        return values
    if values.dtype.kind == "f":
        out = values.copy()
        out[nulls] = np.nan
        return out
    out = values.astype(object)  # int64/uint64 elements become Python ints, exactly
    out[nulls] = None
    return out


def missing_mask(arr: np.ndarray) -> np.ndarray:
    """Which records of ``arr`` (one column as a 1-D NumPy array) are missing: NaN in a
    float column, NaT in a datetime or timedelta column, :func:`is_missing` for each
    record of an object column; no record of any other dtype."""
    if arr.dtype.kind == "f":
        return np.asarray(np.isnan(arr), dtype=bool)
    if arr.dtype.kind in "mM":
        return np.asarray(np.isnat(arr), dtype=bool)
    if arr.dtype.kind != "O":
        return np.zeros(arr.shape, dtype=bool)
    return np.fromiter((is_missing(v) for v in arr), dtype=bool, count=arr.size)
