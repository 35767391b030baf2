"""Group-by with a public key set: one release per key, parallel composition.

>>> import snapcore
>>> data = {"sex": [1, 2, 2, 1, 2], "age": [31, 45, 52, 28, 60]}
>>> g = snapcore.release("count", data, by="sex", keys=[1, 2, 3], n=100, epsilon=1,
...                      source=snapcore.SeededSource(1))
>>> list(g.keys), g.epsilon_spent
([1, 2, 3], Fraction(1, 1))

Each record belongs to at most one group (the one its key names), so a neighbour
changes the data of one group only, and the whole grouped release is ε-DP when each
group's release is (parallel composition; McSherry 2009).  Under ``add-remove`` the
group sizes stay private: each group gets the public cap ``n``.  Under ``replace`` the
key column and the group sizes are declared public (``group_sizes=``) and a neighbour
replaces the other values of one record within its group (docs/statistics.md,
"Group-by").  Every key of the key set is released, present in the data or not; records
whose key is not in the key set (or is missing) are left out and never revealed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any, TypeVar, cast

import attrs
import numpy as np

from snapcore.data._columns import (
    Dataset,
    as_dataset,
    column_records,
    is_data_frame,
    table_column,
)
from snapcore.data._frames import is_local_frame, to_columns
from snapcore.data._missing import MissingPolicy, is_missing
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import category_key, key_positions
from snapcore.errors import ParameterError, keyword, parameter_name, show
from snapcore.plugins._statistic import Statistic, check_n
from snapcore.releases._record import RatioRelease, Release, VarianceRatioRelease
from snapcore.releases._request import ReleaseRequest

P = TypeVar("P")

__all__ = ["GroupedRelease"]


@attrs.frozen(kw_only=True, eq=False)
class GroupedRelease:
    """One :class:`~snapcore.Release` per public key: ``g[key]``, ``g.items()``.

    Attributes
    ----------
    statistic : str
        The statistic released in every group.
    by : str
        The column the groups are keyed by.
    keys : tuple
        The public key set, as given (every key is released).
    releases : tuple of Release, RatioRelease or VarianceRatioRelease
        One release per key, in the order of ``keys`` (a ``RatioRelease`` for a
        mean of private group size: a noisy sum over a noisy count; a
        ``VarianceRatioRelease`` for a variance of private group size).
    epsilon_spent : Fraction
        The total ε: each record is in one group, so by parallel composition it is
        the ε of one group's release, not the sum.
    relation : Neighbouring
        The neighbouring relation of the whole dataset.
    composition : str
        Why the total is what it is.
    group_sizes : str
        Whether the group sizes are public (declared) or private.
    """

    statistic: str
    by: str
    keys: tuple[Any, ...]
    releases: tuple[Release | RatioRelease | VarianceRatioRelease, ...] = ()
    epsilon_spent: Fraction = Fraction(0)
    relation: Neighbouring
    composition: str
    group_sizes: str

    def with_releases(
        self, releases: tuple[Release | RatioRelease | VarianceRatioRelease, ...], spent: Fraction
    ) -> GroupedRelease:
        """This record with its releases filled in."""
        return attrs.evolve(self, releases=releases, epsilon_spent=spent)

    def __getitem__(self, key: Any) -> Release | RatioRelease | VarianceRatioRelease:
        want = category_key(key)
        for k, r in zip(self.keys, self.releases, strict=True):
            if category_key(k) == want:
                return r
        raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys)

    def __len__(self) -> int:
        return len(self.keys)

    def items(self) -> Iterator[tuple[Any, Release | RatioRelease | VarianceRatioRelease]]:
        """``(key, release)`` pairs in key-set order."""
        return zip(self.keys, self.releases, strict=True)

    @property
    def values(self) -> dict[Any, Any]:
        """``{key: released value}``."""
        return {k: r.value for k, r in self.items()}

    def to_frame(self, backend: str = "pandas") -> Any:
        """One row per key and released value, as a data frame of ``backend`` (see
        :meth:`Release.to_frame`): the key column (named by ``by``), then the
        release's columns.  Keys of mixed types are written as text."""
        import narwhals as nw

        cols: dict[str, list[Any]] = {}
        keys: list[Any] = []
        for key, r in zip(self.keys, self.releases, strict=True):
            part = r.frame_columns()
            keys += [key] * len(part["value"])
            for name, vals in part.items():
                cols.setdefault(name, []).extend(vals)
        if len({type(k) for k in keys}) > 1:
            keys = [str(k) for k in keys]
        by = str(self.by)
        return nw.from_dict({by: keys, **cols}, backend=cast(Any, backend)).to_native()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the grouping, the total ε, and each group's record."""
        return {
            "statistic": self.statistic,
            "by": self.by,
            "keys": [_json_key(k) for k in self.keys],
            "epsilon_spent": float(self.epsilon_spent),
            "epsilon_spent_exact": str(self.epsilon_spent),
            "relation": self.relation.value,
            "composition": self.composition,
            "group_sizes": self.group_sizes,
            # one released value per key, in key-set order (each group's record below)
            "values": [
                list(r.value) if isinstance(r.value, tuple) else r.value for r in self.releases
            ],
            "groups": [
                {"key": _json_key(k), **r.to_dict()}
                for k, r in zip(self.keys, self.releases, strict=True)
            ],
        }


def _json_key(k: Any) -> Any:
    """A key as JSON: a bool as a bool, a string as a string, a number by its exact
    value (an int, a float when it is a double, else the string ``p/q``)."""
    if isinstance(k, bool | np.bool_):
        return bool(k)
    if isinstance(k, str):
        return str(k)
    _, q = category_key(k)
    if q.denominator == 1:
        return int(q)
    f = float(q)
    return f if Fraction(f) == q else f"{q.numerator}/{q.denominator}"


def check_grouping(by: Any, keys: Any) -> tuple[Any, ...]:
    """The public key set of a group-by on column ``by``, checked: a non-empty tuple of
    distinct, non-missing keys; a ParameterError otherwise."""
    if not isinstance(by, str):
        raise ParameterError(
            f"{parameter_name('by')} must be a column name, got {by!r}", parameter="by"
        )
    if keys is None:
        raise ParameterError(
            f"{keyword('by')} needs {keyword('keys')}, the public key set (every key is "
            "released; other keys never are)",
            parameter="keys",
        )
    name = parameter_name("keys")
    if isinstance(keys, str | bytes) or not isinstance(keys, Iterable):
        raise ParameterError(
            f"{name} must be a sequence of key values, got {keys!r}", parameter="keys"
        )
    out = tuple(keys)
    if not out:
        raise ParameterError(f"{name} must not be empty", parameter="keys")
    seen: dict[Any, int] = {}
    for i, k in enumerate(out):
        if is_missing(k):
            raise ParameterError(f"{name}[{i}] is a missing value", parameter="keys")
        try:
            kk = category_key(k)
        except ParameterError as exc:
            raise ParameterError(f"{name}[{i}]: {exc}", parameter="keys") from None
        if kk in seen:
            raise ParameterError(
                f"{name} must be distinct under exact-value matching: {name}[{seen[kk]}] = "
                f"{out[seen[kk]]!r} and {name}[{i}] = {k!r} are one key",
                parameter="keys",
            )
        seen[kk] = i
    python_keys: dict[Any, int] = {}
    for i, k in enumerate(out):
        j = python_keys.setdefault(k, i)
        if j != i:  # True and 1: two keys, but one key of a Python dict
            raise ParameterError(
                f"{name}[{j}] = {out[j]!r} and {name}[{i}] = {k!r} are different keys (a bool "
                "is not a number), but Python dicts (the release's values, a mapping for "
                f"{parameter_name('group_sizes')} or {parameter_name('n')}) hold them as "
                "one, so one key set cannot hold both",
                parameter="keys",
            )
    return out


def _per_key(name: str, value: Any, keys: tuple[Any, ...]) -> list[Any]:
    if isinstance(value, Mapping):
        table = {category_key(k): v for k, v in value.items()}
        missing = [k for k in keys if category_key(k) not in table]
        if missing:
            raise ParameterError(
                f"{parameter_name(name)} has no entry for key(s) {missing!r}", parameter=name
            )
        extra = set(table) - {category_key(k) for k in keys}
        if extra:
            raise ParameterError(
                f"{parameter_name(name)} has entries for keys not in {parameter_name('keys')}",
                parameter=name,
            )
        return [table[category_key(k)] for k in keys]
    return [value] * len(keys)


def plan_groups(
    request: ReleaseRequest,
    plan: Callable[[Any, int | None], P],
    *,
    split: Callable[[], list[Any]] | None = None,
) -> tuple[GroupedRelease, list[P]]:
    """Check and plan one release per key of ``request``, before any noise is drawn.

    ``plan(records, n)`` plans the release of one group's records with its public n.
    ``request.data`` is a data frame (pandas, or any narwhals reads: polars eager or
    lazy, pyarrow), a mapping of columns, or a mapping
    ``{key: Partial}`` with the partial state of every key of the key set (the records
    of each group, read in chunks; :func:`snapcore.partial`):
    ``plan`` then gets the Partial.  With ``split``, the data are read by
    ``split()`` (called after the grouping's checks), which returns what ``plan``
    gets for each key, in key-set order (the merged states of a Spark data frame's
    groups).
    """
    from snapcore.releases._partials import Partial

    stat, data, by, rel = request.statistic, request.data, request.by, request.relation
    group_sizes, n, key_set = request.group_sizes, request.n, request.keys
    if by is None or key_set is None:
        raise ValueError("plan_groups needs a request checked by check_grouping")
    if is_local_frame(data):  # polars, pyarrow, ...: columns read by their declared types
        data = to_columns(data)
    partials = (
        isinstance(data, Mapping)
        and len(data) > 0
        and all(isinstance(v, Partial) for v in data.values())
    )
    if split is None and (
        isinstance(data, str | bytes) or not (is_data_frame(data) or isinstance(data, Mapping))
    ):
        raise ParameterError(
            f"{keyword('by', by)} needs a DataFrame or a mapping of columns, got "
            f"{type(data).__name__}",
            parameter="by",
        )
    if rel is Neighbouring.REPLACE and group_sizes is None:
        why = (
            f"{keyword('by', by)} under the replace relation needs "
            f"{keyword('group_sizes')} (public group sizes: the key of each record is then "
            "public and a neighbour replaces a record within its group)"
        )
        if Neighbouring.ADD_REMOVE in stat.relations:
            why += f"; or use {keyword('relation', 'add-remove')}, where group sizes stay private"
        else:
            why += (
                f"; statistic {stat.name!r} has no add-remove form, so its group sizes must "
                "be declared public"
            )
        raise ParameterError(why, parameter="group_sizes")
    if rel is Neighbouring.ADD_REMOVE and group_sizes is not None:
        raise ParameterError(
            f"{keyword('group_sizes')} declares public group sizes, which only the replace "
            f"relation uses; under add-remove give {keyword('n')}, a public cap per group",
            parameter="group_sizes",
        )
    if split is not None:
        groups: list[Any] = split()
    elif partials:
        groups = _per_key("data", data, key_set)  # {key: Partial}
    else:
        groups = _split(
            stat, data, by=by, key_set=key_set, column=request.column, policy=request.missing
        )
    if rel is Neighbouring.REPLACE:
        ns: list[int | None] = [check_n(s) for s in _per_key("group_sizes", group_sizes, key_set)]
        if n is not None:
            raise ParameterError(
                f"under replace with {keyword('by')}, give {keyword('group_sizes')} and leave "
                f"{parameter_name('n')} unset",
                parameter="n",
            )
        sizes_note = f"public (declared with {keyword('group_sizes')})"
    else:
        ns = _per_key("n", n, key_set)  # each n checked in the request
        sizes_note = "private (each group is capped at its public n)"
    if rel is Neighbouring.REPLACE:
        for key, sub, size in zip(key_set, groups, ns, strict=True):
            # records in memory (a merged state is checked when it is finalised); the
            # group's true number of records is not shown
            if isinstance(sub, Dataset) and size != sub.size:
                raise ParameterError(
                    f"{parameter_name('group_sizes')} must give the number of records of each "
                    f"group (public under the replace relation); the size declared for key "
                    f"{show(key)} differs from it",
                    parameter="group_sizes",
                )
    plans = [plan(sub, ns[i]) for i, sub in enumerate(groups)]
    return _record(stat, by, key_set, rel, sizes_note, request.epsilon), plans


def _split(
    stat: Statistic,
    data: Any,
    *,
    by: str,
    key_set: tuple[Any, ...],
    column: Any,
    policy: MissingPolicy,
) -> list[Dataset]:
    """The records of each key of ``key_set``, the missing-value policy applied."""
    by_col = table_column(data, by, "by")
    ds = as_dataset(data, column=column, columns=stat.columns)
    by_arr = column_records(by_col)
    if by_arr.size != ds.size:
        raise ParameterError(
            f"column {by!r} must have as many records as the data", parameter="by"
        )
    group = key_positions(by_arr, key_set)
    return [sub.apply_missing(policy) for sub in ds.take_groups(group, len(key_set))]


def _record(
    stat: Statistic,
    by: str,
    key_set: tuple[Any, ...],
    rel: Neighbouring,
    sizes_note: str,
    eps: Fraction,
) -> GroupedRelease:
    if rel is Neighbouring.ADD_REMOVE:
        comp = (
            f"parallel composition over the groups of {by!r}: adding or removing one record "
            "changes only its own group (or none, if its key is not in the key set), so the "
            "grouped release spends the ε of one group"
        )
    else:
        comp = (
            f"parallel composition over the groups of {by!r}: with the key column and group "
            "sizes public, a neighbour replaces one record within its group, changing one "
            "group only, so the grouped release spends the ε of one group"
        )
    return GroupedRelease(
        statistic=stat.name,
        by=by,
        keys=key_set,
        relation=rel,
        composition=comp,
        group_sizes=sizes_note,
        epsilon_spent=eps,
    )
