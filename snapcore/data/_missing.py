"""What missing values (None, NaN, pandas NA, blank CSV cells) do: a public policy.

- ``"error"`` (the default): the release is refused before any noise;
- ``"drop"``: records with a missing value in a column the statistic reads are
  removed.  Removing a record is a neighbour only under ``add-remove``, so the policy
  is refused under ``replace`` (n would change, and n is public there);
- ``"impute"``: each missing value is replaced by a public constant (``impute=``).
  A per-record map changes one record into one record, so it keeps both relations.

Neither choice depends on the data, and no message names a record or a value.
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any

import attrs
import numpy as np

from snapcore.data._columns import Dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import is_missing
from snapcore.errors import ParameterError, keyword, parameter_name

__all__ = [
    "MissingPolicy",
    "apply_missing",
    "check_missing_policy",
    "take",
    "take_groups",
]

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


def _objects(col: Any) -> np.ndarray:
    if hasattr(col, "to_numpy"):
        return np.asarray(col.to_numpy(dtype=object), dtype=object).reshape(-1)
    if isinstance(col, np.ndarray):
        return col.reshape(-1)
    return np.asarray(list(col), dtype=object).reshape(-1)


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    """Which records of ``arr`` (a column as :func:`_objects` gives it) are missing."""
    if arr.dtype.kind == "f":
        return np.asarray(np.isnan(arr), dtype=bool)
    if arr.dtype.kind != "O":
        return np.zeros(arr.shape, dtype=bool)
    return np.fromiter((is_missing(v) for v in arr), dtype=bool, count=arr.size)


def take(ds: Dataset, index: np.ndarray) -> Dataset:
    """The records of ``ds`` at ``index`` (an integer array), as a new dataset."""
    cols = [_objects(c)[index] for c in ds._cols]
    return Dataset(cols, ds.names, int(index.size))


def take_groups(ds: Dataset, group: np.ndarray, count: int) -> list[Dataset]:
    """``[take(ds, np.flatnonzero(group == i)) for i in range(count)]`` (``group`` holds
    each record's group, -1 for none), with each column converted once and the records
    sorted into their groups once, not once per group."""
    arrays = [_objects(c) for c in ds._cols]
    order = np.argsort(group, kind="stable")  # each group's records stay in order
    cuts = np.searchsorted(group[order], np.arange(count + 1)).tolist()
    return [
        Dataset([arr[order[a:b]] for arr in arrays], ds.names, b - a)
        for a, b in itertools.pairwise(cuts)
    ]


def apply_missing(ds: Dataset, policy: MissingPolicy) -> Dataset:
    """``ds`` with ``policy`` applied (``"error"`` leaves the refusal to the statistic)."""
    if policy.kind == "error" or not ds.names:
        return ds
    arrays = [_objects(c) for c in ds._cols]  # each column converted once
    masks = [_missing_mask(arr) for arr in arrays]
    if policy.kind == "drop":
        keep = ~np.logical_or.reduce(masks) if masks else np.ones(ds.size, dtype=bool)
        index = np.flatnonzero(keep)
        return Dataset([arr[index] for arr in arrays], ds.names, int(index.size))
    cols = []
    for arr, m in zip(arrays, masks, strict=True):
        if m.any():
            arr = arr.astype(object) if arr.dtype.kind != "O" else arr.copy()
            arr[m] = policy.constant
        cols.append(arr)
    return Dataset(cols, ds.names, ds.size)
