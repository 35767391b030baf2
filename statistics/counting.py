"""Built-in counting statistics: count and histogram (docs/statistics.md).

Counts are integers, so they are exact by construction.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, overload

import numpy as np

from snapcore.data._columns import Dataset
from snapcore.data._missing import is_missing
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import CategoryKey, category_key, parameter_items, read_double
from snapcore.errors import ParameterError, keyword, parameter_name, show
from snapcore.exact._sums import bin_counts, bin_index
from snapcore.plugins._hookspecs import hookimpl
from snapcore.plugins._statistic import (
    DataBounds,
    OutputDomain,
    Prepared,
    State,
    Statistic,
    clamp_fraction,
    resolve_n,
)

if TYPE_CHECKING:
    from snapcore.plugins._registries import StatisticRegistry

__all__ = ["BinLabels", "Count", "Histogram", "bin_index"]

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE


def _no_bounds(data_bounds: DataBounds | None) -> None:
    if data_bounds is not None:
        raise ParameterError(
            f"statistic 'count' does not use bounds; leave {parameter_name('data_bounds')} unset",
            parameter="data_bounds",
        )


def _count_domain(prepared: Prepared) -> OutputDomain:
    """Whole numbers in ``[0, n]`` (n the public n or cap): a count's output domain."""
    return OutputDomain(
        lower=0,
        upper=prepared.value_range[1],
        integral=True,
        reason="a count is a whole number between 0 and the public n",
    )


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
    integer_valued = True

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """Whole numbers in ``[0, n]`` (n the public n or cap)."""
        return _count_domain(prepared)

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records,)``."""
        _no_bounds(data_bounds)
        return (chunk.size,)

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        _no_bounds(data_bounds)
        size = int(state[0])
        n_used, n_note = resolve_n(size, n, relation, self.name)
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
            values=(Fraction(min(size, n_used)),),
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


def bin_labels(edges: Sequence[float] | np.ndarray, *, clamped: bool) -> BinLabels:
    """Bin labels; with ``clamped``, the edge bins say they hold out-of-range values:
    the first is ``< e_1`` (everything below e_1) and the last ``≥ e_{k-1}``.

    The labels are written when read (:class:`BinLabels`): ``repr`` of 10**5 edges
    costs more than binning 10**6 values.
    """
    return BinLabels(edges, clamped=clamped)


class BinLabels(Sequence[str]):
    """The labels of a histogram's bins, an immutable sequence of str written on access.

    Equal to any sequence of the same strings (a tuple included), hashed like that
    tuple; two BinLabels of the same edges compare without writing any label.

    >>> labels = BinLabels([0.0, 0.5, 1.0], clamped=False)
    >>> list(labels)
    ['[0, 0.5)', '[0.5, 1]']
    >>> labels == ('[0, 0.5)', '[0.5, 1]')
    True
    """

    __slots__ = ("_clamped", "_edges", "_hash")

    def __init__(self, edges: Sequence[float] | np.ndarray, *, clamped: bool) -> None:
        e = np.array(edges, dtype=np.float64)  # a private copy
        e.flags.writeable = False
        if e.ndim != 1 or len(e) < 2:
            raise ParameterError("BinLabels needs at least 2 edges")
        self._edges = e
        self._clamped = bool(clamped)
        self._hash: int | None = None

    def __len__(self) -> int:
        return len(self._edges) - 1

    def _label(self, i: int) -> str:
        k = len(self._edges) - 1
        lo, hi = _fmt(float(self._edges[i])), _fmt(float(self._edges[i + 1]))
        if self._clamped and k == 1:
            return "all values"
        if self._clamped and i == 0:
            return f"< {hi}"
        if self._clamped and i == k - 1:
            return f"≥ {lo}"
        return f"[{lo}, {hi}{']' if i == k - 1 else ')'}"

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        if isinstance(i, slice):
            return tuple(self._label(j) for j in range(len(self))[i])
        n = len(self)
        j = operator.index(i)
        if not -n <= j < n:
            raise IndexError("BinLabels index out of range")
        return self._label(j % n)

    def __iter__(self) -> Iterator[str]:
        return (self._label(j) for j in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if (
            isinstance(other, BinLabels)
            and self._clamped == other._clamped
            and self._edges.tobytes() == other._edges.tobytes()
        ):
            return True  # the same edges: the same labels, none written
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        return f"BinLabels({len(self)} bins, first {self._label(0)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_bin_labels, (self._edges.tolist(), self._clamped))


def _bin_labels(edges: list[float], clamped: bool) -> BinLabels:
    return BinLabels(edges, clamped=clamped)


def _edges(bins: Any) -> np.ndarray:
    """The bin edges as float64, each read by the value rules (an exact double, from
    any container: a long double that is not a double is refused, never rounded)."""
    if isinstance(bins, np.ndarray) and bins.ndim == 1 and bins.dtype.kind == "f":
        # float16/32/64 are doubles exactly; a long double is read item by item below
        fast = bins.astype(np.float64) if bins.dtype.itemsize <= 8 else None
    elif isinstance(bins, list) and all(type(e) is float for e in bins):
        fast = np.array(bins, dtype=np.float64)
    else:
        fast = None
    if (
        fast is not None
        and len(fast) >= 2
        and np.isfinite(fast).all()
        and bool((fast[1:] > fast[:-1]).all())
    ):
        return fast  # doubles, finite, strictly increasing: what the checks below ask
    items = parameter_items(bins, "bins", "a sequence of bin edges")
    out = [float(read_double(f"bins[{i}]", e, parameter="bins")) for i, e in enumerate(items)]
    name = parameter_name("bins")
    if len(out) < 2:
        raise ParameterError(
            f"{name} must have at least 2 edges, got {len(out)}", parameter="bins"
        )
    if any(not x < y for x, y in itertools.pairwise(out)):
        raise ParameterError(
            f"{name} must be strictly increasing, got {show(items)}", parameter="bins"
        )
    return np.array(out, dtype=np.float64)


def _category_bins(cats: Any) -> tuple[list[Any], dict[CategoryKey, int]]:
    """The categories as given and the bin of each normalised key (distinct keys only)."""
    name = parameter_name("categories")
    cats = parameter_items(cats, "categories")
    if not cats:
        raise ParameterError(f"{name} must not be empty", parameter="categories")
    index: dict[CategoryKey, int] = {}
    for j, c in enumerate(cats):
        if is_missing(c):
            raise ParameterError(
                f"{name}[{j}] is a missing value ({show(c)})", parameter="categories"
            )
        try:
            key = category_key(c)
        except ParameterError as exc:
            raise ParameterError(f"{name}[{j}]: {exc}", parameter="categories") from None
        if key in index:
            i = index[key]
            raise ParameterError(
                f"{name} must be distinct under exact-value matching (numbers by their "
                f"exact value, strings as strings): {name}[{i}] = {show(cats[i])} and "
                f"{name}[{j}] = {show(c)} are the same category",
                parameter="categories",
            )
        index[key] = j
    return cats, index


def category_labels(cats: Sequence[Any]) -> tuple[str, ...]:
    """One label per category, distinct for distinct categories.

    Each category prints as ``str`` (``1``, ``north``, ``True``) unless two would print
    alike (``1`` and ``"1"``, ``True`` and ``"True"``, ``0.1`` and ``np.float32(0.1)``):
    then every label says its kind, under the normalisation of
    :func:`~snapcore.data.category_key` — strings quoted (``'1'``), truth values as
    ``True``/``False``, numbers by exact value (an int in digits, a double as the
    shortest text that reads back as it, any other rational as ``p/q``).  Distinct
    categories have distinct keys, so these labels are distinct.
    """
    plain = [p for p in map(_plain_label, cats) if p is not None]
    if len(plain) == len(cats) and len(set(plain)) == len(plain):
        return tuple(plain)
    return tuple(_kind_label(c) for c in cats)


def _plain_label(c: Any) -> str | None:
    try:
        return str(c)
    except ValueError:  # an int beyond Python's str-conversion digit limit
        return None


def _kind_label(c: Any) -> str:
    kind, value = category_key(c)
    if kind == "str":
        return repr(str(value))
    if kind == "bool":
        return repr(bool(value))
    q: Fraction = value
    if q.denominator == 1:
        n = q.numerator
        return str(n) if n.bit_length() < 4000 else f"{n:#x}"
    if q.denominator & (q.denominator - 1) == 0:
        try:
            f = q.numerator / q.denominator
        except OverflowError:
            f = None
        if f is not None and Fraction(f) == q:
            return repr(f)
    return (
        f"{q.numerator:#x}/{q.denominator:#x}"
        if max(q.numerator.bit_length(), q.denominator.bit_length()) >= 4000
        else f"{q.numerator}/{q.denominator}"
    )


class Histogram(Statistic):
    """Counts per bin: given bin edges (numeric data) or categories.

    Options:

    bins : sequence of float
        Edges ``e_0 < ... < e_k``: bins ``[e_i, e_{i+1})``, the last one closed.
        Values are first clamped to ``[e_0, e_k]``, so every record lands in a bin, and
        the edge bins are labelled ``< e_1`` and ``≥ e_{k-1}`` to say so.
    out_of_range : {"clamp", "drop"}
        With ``"drop"``, values outside ``[e_0, e_k]`` are not counted instead, and
        the labels are the plain intervals.
    categories : sequence
        Category values; a record counts in the bin equal to its value, records with
        other values are not counted.  Give exactly one of ``bins`` and ``categories``.
    other : bool
        With categories: add a last bin ``other`` counting every unlisted value (so
        every record is counted once).  Each record is still in exactly one bin, so Δ
        and the budget split are unchanged.

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
    integer_valued = True

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """Whole numbers in ``[0, n]`` (n the public n or cap)."""
        return _count_domain(prepared)

    options: ClassVar[Mapping[str, str]] = {
        "bins": "bin edges e_0 < ... < e_k (numeric column)",
        "categories": "category values (one bin each)",
        "other": "categories: add a bin 'other' counting every unlisted value (default False)",
        "out_of_range": "bins: 'clamp' values outside [e_0, e_k] into the edge bins "
        "(default) or 'drop' them",
    }

    def _spec(self, data_bounds: DataBounds | None, options: Mapping[str, Any]) -> Any:
        bins = options.get("bins")
        cats = options.get("categories")
        if (bins is None) == (cats is None):
            raise ParameterError(
                f"statistic 'histogram' needs exactly one of {keyword('bins')} (the bin "
                f"edges) and {keyword('categories')} (the category values), got "
                f"{'both' if bins is not None else 'neither'}",
                parameter="bins" if bins is None else "categories",
            )
        if data_bounds is not None:
            raise ParameterError(
                f"statistic 'histogram' takes its range from {keyword('bins')} (or "
                f"{keyword('categories')}); leave {parameter_name('data_bounds')} unset",
                parameter="data_bounds",
            )
        other = options.get("other", False)
        out_of_range = options.get("out_of_range", "clamp")
        if not isinstance(other, bool):
            raise ParameterError(
                f"{parameter_name('other')} must be True or False, got {show(other)}",
                parameter="other",
            )
        if out_of_range not in ("clamp", "drop"):
            raise ParameterError(
                f"{parameter_name('out_of_range')} must be 'clamp' or 'drop', got "
                f"{show(out_of_range)}",
                parameter="out_of_range",
            )
        if bins is not None:
            if other:
                raise ParameterError(
                    f"{keyword('other', True)} is for {keyword('categories')}; with "
                    f"{keyword('bins')}, values outside the edges are clamped into the edge "
                    f"bins (or dropped with {keyword('out_of_range', 'drop')})",
                    parameter="other",
                )
            return _edges(bins)
        if out_of_range != "clamp":
            raise ParameterError(
                f"{keyword('out_of_range')} is for {keyword('bins')}; for "
                f"{keyword('categories')} use {keyword('other', True)}",
                parameter="out_of_range",
            )
        spec = _category_bins(cats)
        if other and "other" in category_labels(spec[0]):
            raise ParameterError(
                f"{keyword('other', True)} adds a bin labelled 'other'; a category has that label",
                parameter="other",
            )
        return spec

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records, count_0, ..., count_{k-1})``: values clamped to the outer edges (or
        dropped with ``out_of_range="drop"``); unlisted categories in a last ``other``
        count with ``other=True``."""
        spec = self._spec(data_bounds, options)
        drop = options.get("out_of_range", "clamp") == "drop"
        if isinstance(spec, np.ndarray):
            k = len(spec) - 1
            col = chunk.column(0)
            if col.doubles is not None:  # exact comparisons with the edges
                return (chunk.size, *bin_counts(spec, col.doubles, drop=drop).tolist())
            fe = [Fraction(e) for e in spec.tolist()]  # exact records that are not doubles
            counts = [0] * k
            for v in col.fractions():
                if drop and not fe[0] <= v <= fe[-1]:
                    continue
                v = clamp_fraction(v, fe[0], fe[-1])
                counts[min(bisect.bisect_right(fe, v) - 1, k - 1)] += 1
            return (chunk.size, *counts)
        cats, index = spec
        counts = [0] * len(cats)
        for key in chunk.categorical(0):
            j = index.get(key)  # a dict lookup: at most one bin per record
            if j is not None:
                counts[j] += 1
        if options.get("other", False):
            counts.append(chunk.size - sum(counts))
        return (chunk.size, *counts)

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        spec = self._spec(data_bounds, options)
        n_used, n_note = resolve_n(int(state[0]), n, relation, self.name)
        counts = list(state[1:])
        labels: Sequence[str]
        if isinstance(spec, np.ndarray):
            clamped = options.get("out_of_range", "clamp") == "clamp"
            labels = bin_labels(spec, clamped=clamped)
            lo, hi = (f"{float(e):g}" for e in (spec[0], spec[-1]))
            counted = (
                f"values below {lo} count in the first bin and values above {hi} in the last "
                "(clamped: the labels say so with < and ≥)"
                if clamped
                else f"values outside [{lo}, {hi}] are not counted "
                f"({keyword('out_of_range', 'drop')})"
            )
            placement = counted + "; bins [e_i, e_{i+1}), the last closed"
        else:
            labels = category_labels(spec[0])
            placement = (
                "a record counts in the one bin whose category equals it under exact-value "
                "matching (numbers by exact value, strings as strings, bools as bools); "
            )
            if options.get("other", False):
                labels = (*labels, "other")
                counted = "every value not among the categories counts in 'other'"
            else:
                counted = (
                    "records whose value is not among the categories are not counted "
                    f"({keyword('other', True)} adds a bin for them)"
                )
            placement += counted
        if len(counts) != len(labels):
            raise ParameterError(
                f"statistic 'histogram' got a state with {len(counts)} bins for "
                f"{len(labels)} bins in its options"
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
            values=tuple(counts),
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
            notes=(n_note, counted),
        )


@hookimpl
def snapcore_register_statistics(registry: StatisticRegistry) -> None:
    registry.add(Count())
    registry.add(Histogram())
