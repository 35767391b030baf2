"""Built-in counting statistics: count and histogram (docs/statistics.md).

Counts are integers, so they are exact by construction.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from snapcore.dataset import Dataset
from snapcore.errors import ParameterError, show
from snapcore.hookspecs import hookimpl
from snapcore.statistic import DataBounds, Neighbouring, Prepared, Statistic, resolve_n
from snapcore.values import CategoryKey, category_key, is_missing, read_double

if TYPE_CHECKING:
    from snapcore.plugins import StatisticRegistry

__all__ = ["Count", "Histogram"]

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE


class Count(Statistic):
    """The number of records.

    Relations:

    - ``add-remove`` (unbounded: add or remove one record; the default): Δ = 1.  With
      a public cap ``N`` (``n=``) the released value is ``min(#records, N)`` (still
      Δ = 1), in ``[0, N]``, so B′ = N.
    - ``replace`` (bounded: n public, one record replaced): the count *is* the public
      n and never changes, Δ = 0.  It is returned exactly, spending no ε.
    """

    name = "count"
    summary = "number of records"
    relations = (ADD_REMOVE, REPLACE)
    columns = 0
    needs_data_bounds = False

    def prepare(
        self,
        data: Dataset,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        if data_bounds is not None:
            raise ParameterError("statistic 'count' does not use bounds; leave data_bounds=None")
        n_used, n_note = resolve_n(data.size, n, relation, self.name)
        if relation is REPLACE:
            return Prepared(
                statistic=self.name,
                relation=relation,
                values=(Fraction(n_used),),
                labels=(self.name,),
                sensitivity=0,
                value_range=(n_used, n_used),
                derivation="under the replace relation every neighbour has n records: Δ = 0",
                n=n_used,
                notes=(n_note, "the count is public under this relation: no noise, no ε"),
            )
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(Fraction(min(data.size, n_used)),),
            labels=(self.name,),
            sensitivity=1,
            value_range=(0, n_used),
            derivation=(
                "adding or removing one record changes the count by 1: Δ = 1; capped at "
                "the public N, it lies in [0, N], B′ = N"
            ),
            n=n_used,
            notes=(n_note,),
        )


def _fmt(x: float) -> str:
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def _edges(bins: Any) -> np.ndarray:
    if isinstance(bins, str | bytes) or not isinstance(bins, Sequence | np.ndarray):
        raise ParameterError(f"bins must be a sequence of bin edges, got {show(bins)}")
    out = [float(read_double(f"bins[{i}]", e)) for i, e in enumerate(bins)]
    if len(out) < 2:
        raise ParameterError(f"bins must have at least 2 edges, got {len(out)}")
    if any(not x < y for x, y in itertools.pairwise(out)):
        raise ParameterError(f"bins must be strictly increasing, got {show(list(bins), 200)}")
    return np.array(out, dtype=np.float64)


def _bin_counts(data: Dataset, edges: np.ndarray) -> list[int]:
    """Records per bin ``[e_i, e_{i+1})`` (the last closed), values clamped to the
    edges first; every record is compared exactly (read by the rule)."""
    k = len(edges) - 1
    col = data.column(0)
    if col.doubles is not None:
        x = np.clip(col.doubles, edges[0], edges[-1])
        idx = np.minimum(np.searchsorted(edges, x, side="right") - 1, k - 1)
        return [int(c) for c in np.bincount(idx, minlength=k)]
    fe = [Fraction(e) for e in edges.tolist()]
    counts = [0] * k
    for v in col.fractions():
        v = min(max(v, fe[0]), fe[-1])
        counts[min(bisect.bisect_right(fe, v) - 1, k - 1)] += 1
    return counts


def _category_bins(cats: Any) -> tuple[list[Any], dict[CategoryKey, int]]:
    """The categories as given and the bin of each normalised key (distinct keys only)."""
    if isinstance(cats, str | bytes) or not isinstance(cats, Sequence | np.ndarray):
        raise ParameterError(f"categories must be a sequence of values, got {show(cats)}")
    cats = list(cats)
    if not cats:
        raise ParameterError("categories must not be empty")
    index: dict[CategoryKey, int] = {}
    for j, c in enumerate(cats):
        if is_missing(c):
            raise ParameterError(f"categories[{j}] is a missing value ({show(c)})")
        try:
            key = category_key(c)
        except ParameterError as exc:
            raise ParameterError(f"categories[{j}]: {exc}") from None
        if key in index:
            i = index[key]
            raise ParameterError(
                f"categories must be distinct under exact-value matching (numbers by their "
                f"exact value, strings as strings): categories[{i}] = {show(cats[i])} and "
                f"categories[{j}] = {show(c)} are the same category"
            )
        index[key] = j
    return cats, index


class Histogram(Statistic):
    """Counts per bin: given bin edges (numeric data) or categories.

    Options:

    bins : sequence of float
        Edges ``e_0 < ... < e_k``: bins ``[e_i, e_{i+1})``, the last one closed.
        Values are first clamped to ``[e_0, e_k]``, so every record lands in a bin.
    categories : sequence
        Category values; a record counts in the bin equal to its value, records with
        other values are not counted.  Matching is by exact value with one
        normalisation (docs/semantics.md, "Categories"): numbers by their exact
        rational value (``1``, ``1.0``, ``np.float32(1)`` and ``Fraction(1)`` are one
        category; ``0.1`` and ``float(np.float32(0.1))`` are two), strings as strings
        (``"1"`` is not 1), bools as bools (``True`` is not 1).  Categories equal under
        it are refused, so a record matches at most one bin.  Give exactly one of
        ``bins`` and ``categories``.

    Relations:

    Each record lies in at most one bin; every bin has Δ = 1.

    - ``replace`` (bounded: n public, one record replaced; the default): a replaced
      record can leave one bin and enter another, changing **two** bins by 1 each.
      The mechanism's guarantee is for changes up to Δ in one value, so each bin is
      released with ``ε/2`` (Δ = 1): two changed bins cost ``ε/2 + ε/2 = ε``.  (Doubling
      Δ to 2 with ε per bin would give ε per changed bin, 2ε in all.)
    - ``add-remove`` (unbounded: add or remove one record): one record changes exactly
      one bin by 1, and the bins are disjoint, so by parallel composition every bin
      gets the full ε with Δ = 1.  Counts are capped at the public N.

    B′ = n (N under add-remove): a bin holds at most every record (docs/statistics.md).
    """

    name = "histogram"
    summary = "counts per bin (bin edges or categories)"
    relations = (REPLACE, ADD_REMOVE)
    needs_data_bounds = False
    options: ClassVar[Mapping[str, str]] = {
        "bins": "bin edges e_0 < ... < e_k (numeric column)",
        "categories": "category values (one bin each)",
    }

    def prepare(
        self,
        data: Dataset,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        bins = options.get("bins")
        cats = options.get("categories")
        if (bins is None) == (cats is None):
            raise ParameterError(
                "statistic 'histogram' needs exactly one of bins=[edges] and "
                f"categories=[values], got bins={bins!r}, categories={cats!r}"
            )
        if data_bounds is not None:
            raise ParameterError(
                "statistic 'histogram' takes its range from bins= (or categories=); "
                "leave data_bounds=None"
            )
        n_used, n_note = resolve_n(data.size, n, relation, self.name)
        if bins is not None:
            edges = _edges(bins)
            k = len(edges) - 1
            counts = _bin_counts(data, edges)
            labels = tuple(
                f"[{_fmt(edges[i])}, {_fmt(edges[i + 1])}{']' if i == k - 1 else ')'}"
                for i in range(k)
            )
            placement = "values clamped to [e_0, e_k]; bins [e_i, e_{i+1}), the last closed"
        else:
            cats, index = _category_bins(cats)
            counts = [0] * len(cats)
            for key in data.categorical(0):
                j = index.get(key)  # a dict lookup: at most one bin per record
                if j is not None:
                    counts[j] += 1
            labels = tuple(str(c) for c in cats)
            placement = (
                "a record counts in the one bin whose category equals it under exact-value "
                "matching (numbers by exact value, strings as strings, bools as bools); "
                "others are not counted"
            )
        if relation is ADD_REMOVE:
            counts = [min(c, n_used) for c in counts]
            share = Fraction(1)
            comp = (
                "add-remove: one record changes one bin by 1 and bins are disjoint, so by "
                "parallel composition each bin is released with the full ε (Δ = 1)"
            )
        else:
            share = Fraction(1, 2)
            comp = (
                "replace: one replaced record can change two bins by 1 each, so each bin "
                "is released with ε/2 (Δ = 1); the two changed bins together spend ε"
            )
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=tuple(Fraction(c) for c in counts),
            labels=labels,
            sensitivity=1,
            value_range=(0, n_used),
            epsilon_share=share,
            composition=comp,
            derivation=(
                f"{placement}; each record is in at most one bin, a bin changes by at "
                "most 1 (Δ = 1) and holds at most n records (B′ = n)"
            ),
            n=n_used,
            notes=(n_note,),
        )


@hookimpl
def snapcore_register_statistics(registry: StatisticRegistry) -> None:
    registry.add(Count())
    registry.add(Histogram())
