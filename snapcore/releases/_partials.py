"""Mergeable partial states: release a statistic of data split over chunks or machines.

A statistic's :meth:`~snapcore.Statistic.partial` turns some records into a
small state of Python ints; states of disjoint chunks merge exactly (integer
addition), in any order and grouping, into the state of all the records; the release
then finalises the merged state once and adds noise once, on the caller.  Because
nothing is rounded, the merged state — and, for the same draws, the release — is
identical however the records were split: one chunk, many chunks in memory, the
chunks of a CSV file, or the partitions of a Dask data frame on a cluster.

>>> import snapcore
>>> a = snapcore.partial("mean", [31.0, 45.0], data_bounds=(0, 100))
>>> b = snapcore.partial("mean", [52.0, 28.0, 60.0], data_bounds=(0, 100))
>>> whole = snapcore.partial("mean", [31.0, 45.0, 52.0, 28.0, 60.0], data_bounds=(0, 100))
>>> snapcore.merge([b, a]) == whole
True
>>> r = snapcore.release("mean", whole, epsilon=1.0, source=snapcore.SeededSource(3))
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from snapcore.data._columns import column_keys
from snapcore.data._frames import is_dask, is_spark, read_dataset
from snapcore.data._missing import MissingPolicy
from snapcore.data._values import category_key, type_name
from snapcore.errors import ParameterError, SnapcoreError, WorkerError
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import DataBounds, State, Statistic, accumulate, check_data_bounds
from snapcore.releases._request import check_options

__all__ = ["Partial", "dask_state", "merge", "partial"]


def _freeze(value: Any) -> Any:
    """Options as a hashable, comparable value (sequences and arrays as tuples; an
    array's elements stay NumPy scalars, read later by the value rules, never rounded
    to Python floats)."""
    if isinstance(value, np.ndarray):
        return tuple(_freeze(v) for v in value) if value.ndim else value[()]
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def freeze_options(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The statistic's options as a sorted tuple of ``(name, value)`` pairs."""
    return tuple(sorted((k, _freeze(v)) for k, v in options.items()))


def _option_key(value: Any) -> Any:
    """A frozen option under the normalisation of category keys
    (:func:`snapcore.data.category_key`): numbers by exact value, strings as strings,
    bools as bools, so ``True`` and ``1``, ``1`` and ``"1"`` are different options;
    tuples item by item; anything else by its type and value."""
    if isinstance(value, tuple):
        return ("tuple", tuple(_option_key(v) for v in value))
    try:
        return category_key(value)
    except ParameterError:
        return ("other", type_name(value), value)


def options_key(options: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """Frozen options as compared by :class:`Partial` (:func:`_option_key`)."""
    return tuple((name, _option_key(value)) for name, value in options)


@attrs.frozen(kw_only=True)
class Partial:
    """The partial state of a statistic over some records, with what it depends on.

    Attributes
    ----------
    statistic : str
        The statistic's registry name.
    state : tuple of int
        The exact state (see :meth:`Statistic.partial`).
    data_bounds : tuple of (float, float), or None
        The data bounds the values were clamped to.
    options : tuple of (str, value)
        The statistic's options, sorted by name.
    """

    statistic: str
    state: State
    data_bounds: DataBounds | None
    options: tuple[tuple[str, Any], ...] = attrs.field(default=(), eq=options_key)

    def compatible(self, other: Partial) -> bool:
        """Whether both are of the same statistic, bounds and options (options compared
        as category keys are: ``categories=[True, 2]`` and ``[1, 2]`` differ)."""
        return (self.statistic, self.data_bounds, options_key(self.options)) == (
            other.statistic,
            other.data_bounds,
            options_key(other.options),
        )

    def has_options(self, options: Mapping[str, Any]) -> bool:
        """Whether ``options`` (as given to a statistic) are this state's options, under
        the same comparison as :meth:`compatible`."""
        return options_key(freeze_options(options)) == options_key(self.options)


def _resolve(statistic: Any, data_bounds: Any, options: Mapping[str, Any]) -> Any:
    stat = resolve_statistic(statistic)
    if not stat.mergeable:
        raise ParameterError(
            f"statistic {stat.name!r} does not implement partial() and finalize(); it can "
            "only be released from data in memory"
        )
    check_options(stat, options)
    return stat, check_data_bounds(data_bounds, stat)


def partial(
    statistic: str | Statistic,
    data: Any,
    *,
    data_bounds: Any = None,
    column: str | Sequence[str] | None = None,
    **options: Any,
) -> Partial:
    """The partial state of ``statistic`` over ``data`` (no noise, nothing spent).

    Parameters
    ----------
    statistic : str or Statistic
        A mergeable statistic (every built-in is).
    data : any data snapcore reads, or a Dask or Spark data frame
        Some of the records (a Dask or Spark data frame: one partial state per
        partition, on the workers, merged here).
    data_bounds : (lower, upper), or one pair per column
        The data bounds; every value is clamped to them record by record.
    column : str or sequence of str, optional
        Column name(s) in a data frame or mapping.
    **options
        The statistic's own options.

    Returns
    -------
    Partial
        Exact and private: it is **not** a release.  Keep it where the data are, or
        merge it and pass it to :func:`snapcore.release`.
    """
    stat, bounds = _resolve(statistic, data_bounds, options)
    if is_dask(data):
        state = dask_state(stat, data, data_bounds=bounds, column=column, options=options)
    elif is_spark(data):
        from snapcore.releases._spark import spark_state

        state = spark_state(
            stat,
            data,
            data_bounds=bounds,
            column=column,
            options=options,
            policy=MissingPolicy(kind="error"),
        )
    else:
        ds = read_dataset(data, column=column, columns=stat.columns)
        state = accumulate(stat, ds.chunks(), data_bounds=bounds, **options)
    return Partial(
        statistic=stat.name, state=state, data_bounds=bounds, options=freeze_options(options)
    )


def merge(parts: Iterable[Partial], statistic: str | Statistic | None = None) -> Partial:
    """Merge partial states of disjoint records (any order gives the same result).

    Parameters
    ----------
    parts : iterable of Partial
        At least one; all of the same statistic, data bounds and options.
    statistic : str or Statistic, optional
        The statistic object, if it is not registered under the parts' name.

    Returns
    -------
    Partial
    """
    items = list(parts)
    if not items or not all(isinstance(p, Partial) for p in items):
        raise ParameterError("merge needs one or more snapcore Partial objects")
    first = items[0]
    if not all(first.compatible(p) for p in items[1:]):
        raise ParameterError("merge needs partials of the same statistic, data_bounds and options")
    stat = resolve_statistic(first.statistic if statistic is None else statistic)
    state = functools.reduce(stat.merge, (p.state for p in items))
    return attrs.evolve(first, state=state)


def _worker_partial(
    stat: Statistic,
    frame: Any,
    data_bounds: DataBounds | None,
    column: Any,
    options: dict[str, Any],
) -> State:
    """One partition's state, on a worker.  Only snapcore's own errors (whose messages
    never carry data) come back as they are; any other exception is replaced by its
    type name, without message or traceback."""
    try:
        ds = read_dataset(frame, column=column, columns=stat.columns)
        return accumulate(stat, ds.chunks(), data_bounds=data_bounds, **options)
    except SnapcoreError as e:
        raise type(e)(*e.args) from None
    except Exception as e:
        raise WorkerError(
            f"computing a partial state of statistic {stat.name!r} failed on a worker with "
            f"{type(e).__name__}; its message is withheld because it may contain data values"
        ) from None


def dask_state(
    stat: Statistic,
    ddf: Any,
    *,
    data_bounds: DataBounds | None,
    column: Any,
    options: Mapping[str, Any],
) -> State:
    """Merged state of a Dask data frame: one partial per partition, on the workers.

    The partitions are computed with Dask's current scheduler (threads, processes,
    or a ``distributed`` client if one is active); the states are merged on the
    caller in partition order (any order gives the same state).
    """
    dask: Any = importlib.import_module("dask")

    cols = column_keys(column)
    if cols is not None:
        missing = [c for c in cols if c not in list(ddf.columns)]
        if missing:
            raise ParameterError(
                f"column {missing[0]!r} not found; available columns: {list(ddf.columns)}"
            )
        ddf = ddf[cols]
    task = dask.delayed(_worker_partial, pure=True)
    parts = [task(stat, part, data_bounds, column, dict(options)) for part in ddf.to_delayed()]
    states = dask.compute(*parts)
    if not states:
        return accumulate(stat, (), data_bounds=data_bounds, **options)
    return functools.reduce(stat.merge, states)
