"""The statistic plugin protocol: what a statistic supplies to a release.

A statistic is an object with a ``name`` and three methods: :meth:`Statistic.partial`
maps some records to an exact state of Python ints, :meth:`Statistic.merge` combines
the states of disjoint chunks, and :meth:`Statistic.finalize` turns the merged state,
the data bounds, the public ``n`` and the neighbouring relation into a
:class:`Prepared` (:meth:`Statistic.prepare` runs the three over chunks of in-memory
data):

- ``values`` — f(D), one per coordinate, computed from the data clamped to the
  bounds **exactly** (a :class:`fractions.Fraction`; see :mod:`snapcore.exact`), so
  the declared sensitivity holds for the very values passed to the mechanism;
- ``sensitivity`` — Δ for the stated relation: ``|f(D) − f(D′)| <= Δ`` for every
  coordinate and every pair of neighbouring datasets within the bounds;
- ``value_range`` — an interval that contains f(D) for every dataset the bounds and
  ``n`` allow (B′ is ``max(|lo|, |hi|)``);
- for vector statistics, the share of ε each coordinate's mechanism gets and why.

A statistic may also declare its :meth:`Statistic.output_domain`: the set its values
lie in (whole numbers, an interval), onto which each released value is projected after
the mechanism (post-processing, free for privacy; docs/statistics.md, "Outputs in the
statistic's domain").

Register a statistic through the ``snapcore_register_statistics`` hook
(``registry.add(MyStatistic())``) and an entry point in the ``snapcore`` group.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import read_double_pair, type_name
from snapcore.errors import ParameterError, keyword, parameter_name, show
from snapcore.exact._ieee754 import round_down_double, round_up_double

if TYPE_CHECKING:
    from snapcore.data._columns import Dataset

__all__ = [
    "DataBounds",
    "OutputDomain",
    "Prepared",
    "State",
    "Statistic",
    "accumulate",
    "check_data_bounds",
    "check_n",
    "clamp_fraction",
    "one_column_bounds",
    "resolve_n",
    "resolve_relation",
]

#: Data bounds as given to :meth:`Statistic.prepare`: one ``(lower, upper)`` pair of
#: exact doubles per data column, or ``None`` when none were given.
DataBounds = tuple[tuple[float, float], ...]


def _check_values(inst: Prepared, attribute: Any, value: tuple[Any, ...]) -> None:
    """f(D) is private: a refusal names the rule and the type, never a value or a count."""
    if not isinstance(value, tuple) or not value:
        what = "an empty tuple" if isinstance(value, tuple) else type_name(value)
        raise ParameterError(f"Prepared.values must be a non-empty tuple, got {what}")
    if set(map(type, value)) == {int}:  # counts: the common vector case
        return
    for v in value:
        ok = isinstance(v, Fraction | int) and not isinstance(v, bool)
        ok = ok or (isinstance(v, float) and math.isfinite(v))
        if not ok:
            what = f"a non-finite {type_name(v)}" if isinstance(v, float) else type_name(v)
            raise ParameterError(
                f"Prepared.values must hold Fractions, ints or finite floats, got {what}"
            )


def _fraction_pair(r: Any) -> tuple[Fraction, Fraction]:
    return (Fraction(r[0]), Fraction(r[1]))


@attrs.frozen(kw_only=True)
class Prepared:
    """What a statistic hands to the release: f(D), Δ, the range of f, the budget split.

    Attributes
    ----------
    statistic : str
        The statistic's name.
    relation : Neighbouring
        The neighbouring relation the sensitivity holds for.
    values : tuple of Fraction
        f(D), one per coordinate, exactly (floats are accepted from plugins that
        account for their own rounding in ``sensitivity``).
    labels : sequence of str
        One label per coordinate (the statistic's name for a scalar); a tuple, or an
        immutable sequence equal to one (a histogram's labels are written when read).
    sensitivity : Fraction
        Δ >= 0 per coordinate, in the data's units.  Δ = 0 means f(D) is public
        under this relation and is released exactly, spending nothing.
    value_range : (Fraction, Fraction)
        ``lo <= f(D) <= hi`` for every coordinate of every dataset the bounds and
        ``n`` allow.
    epsilon_share : Fraction
        Each coordinate is released with ``ε · epsilon_share``.
    composition : str
        How the budget is divided over the coordinates and why.
    derivation : str
        Where Δ and the range come from (formulas).
    n : int or None
        The public n used (or the public cap on n under add/remove).
    notes : tuple of str
        Anything else the user should know.
    """

    statistic: str
    relation: Neighbouring = attrs.field(validator=attrs.validators.instance_of(Neighbouring))
    values: tuple[Fraction | float, ...] = attrs.field(validator=_check_values)
    labels: Sequence[str]
    sensitivity: Fraction = attrs.field(converter=Fraction)
    value_range: tuple[Fraction, Fraction] = attrs.field(converter=_fraction_pair)
    epsilon_share: Fraction = attrs.field(default=Fraction(1), converter=Fraction)
    composition: str = "a single value: it gets the whole budget"
    derivation: str = ""
    n: int | None = None
    notes: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if len(self.labels) != len(self.values):
            raise ParameterError("Prepared.labels must have one label per value")
        if self.sensitivity < 0:
            raise ParameterError(f"Prepared.sensitivity must be >= 0, got {self.sensitivity}")
        lo, hi = self.value_range
        if not lo <= hi:
            raise ParameterError(f"Prepared.value_range must have lo <= hi, got {lo}, {hi}")
        if not 0 < self.epsilon_share <= 1:
            raise ParameterError(
                f"Prepared.epsilon_share must be in (0, 1], got {self.epsilon_share}"
            )

    @property
    def b_prime(self) -> Fraction:
        """B′: the largest ``|f(D)|`` the bounds allow, ``max(|lo|, |hi|)``."""
        lo, hi = self.value_range
        return max(abs(lo), abs(hi))

    @property
    def is_vector(self) -> bool:
        """Whether the statistic has more than one coordinate."""
        return len(self.values) > 1


def _optional_fraction(q: Any) -> Fraction | None:
    return None if q is None else Fraction(q)


@attrs.frozen(kw_only=True)
class OutputDomain:
    """The set a statistic's values lie in, onto which released values are projected.

    Projecting a released value is post-processing (it reads only the value and public
    parameters), so it costs no privacy.  When the exact value lies in the domain, the
    projected value is never further from it than the released one, except that rounding
    to a whole number can add up to 1/2 (only when the output grid is finer than 1).

    Attributes
    ----------
    lower, upper : Fraction or None
        The interval (None: unbounded on that side).
    integral : bool
        Whether the values are whole numbers: released values are rounded to the nearest
        integer (ties to even) and come back as ``int``.
    reason : str
        Why the statistic lies there, for people.
    """

    lower: Fraction | None = attrs.field(default=None, converter=_optional_fraction)
    upper: Fraction | None = attrs.field(default=None, converter=_optional_fraction)
    integral: bool = False
    reason: str = ""

    def __attrs_post_init__(self) -> None:
        lo, hi = self.lower, self.upper
        if self.integral:
            lo = None if lo is None else Fraction(math.ceil(lo))
            hi = None if hi is None else Fraction(math.floor(hi))
        if lo is not None and hi is not None and not lo <= hi:
            raise ParameterError(
                f"OutputDomain must hold a value: lower = {self.lower}, upper = {self.upper}"
                + (", integral" if self.integral else "")
            )

    def project(self, value: float) -> float | int:
        """``value`` (a finite double or int) moved to the nearest point of the domain:
        rounded to an integer if :attr:`integral`, then clamped to the interval (to the
        double nearest inside it when an end is not a double)."""
        x = Fraction(value)
        if self.integral:
            r = round(x)
            if self.lower is not None:
                r = max(r, math.ceil(self.lower))
            if self.upper is not None:
                r = min(r, math.floor(self.upper))
            return int(r)
        if self.lower is not None and x < self.lower:
            return round_up_double(self.lower)
        if self.upper is not None and x > self.upper:
            return round_down_double(self.upper)
        return float(value)

    def describe(self) -> str:
        """One line: what the projection does."""
        lo = "−∞" if self.lower is None else str(self.lower)
        hi = "∞" if self.upper is None else str(self.upper)
        what = "rounded to the nearest whole number and clamped" if self.integral else "clamped"
        text = f"released values {what} to [{lo}, {hi}] (post-processing, no privacy cost)"
        return f"{text}: {self.reason}" if self.reason else text


#: A partial state: a tuple of Python ints (exact rationals, as Fractions, where a
#: record is an exact real that is not a binary fraction, e.g. a Decimal 0.1).  Exact,
#: merged by a commutative and associative :meth:`Statistic.merge`, picklable and small
#: (it does not grow with the number of records, only with their count's and sum's
#: bit lengths).
State = tuple[int | Fraction, ...]


class Statistic(abc.ABC):
    """Base class of statistic plugins.

    A statistic is **mergeable**: it implements :meth:`partial` (one chunk of records
    to a ``State`` of Python ints), :meth:`merge` (two states to one; the default
    adds them element by element) and :meth:`finalize` (the merged state to the
    :class:`Prepared` f(D), Δ and range).  Every release goes through these three,
    over one chunk or many, on one machine or on Dask workers, so a split of the
    records into chunks, in any order, gives the identical state and value.  Values
    are clamped record by record inside :meth:`partial`; Δ and B′ depend only on the
    bounds and n, never on how the records were split.

    A statistic that cannot be split may instead override :meth:`prepare` alone; it
    is then released from in-memory data only.

    Attributes
    ----------
    name : str
        Registry name.
    summary : str
        One line for listings.
    relations : tuple of Neighbouring
        The relations the statistic supports; the first is the default.
    columns : int
        Data columns it reads (0: only the number of records).
    needs_data_bounds : bool
        Whether ``bounds`` (data bounds, one pair per column) are required.
    options : mapping of str to str
        Extra keyword options ``prepare`` accepts, with a description each.
    integer_valued : bool
        Whether f(D) is always an integer (counts): releases then come back as Python
        ints when every output is an integer (an integral grid between integral clamp
        bounds).
    conformance_options : tuple of mappings
        Option sets the statistic conformance suite
        (:func:`snapcore.testing.statistic_suite`, ``snapcore compare``) checks it with
        when it is given none; the default ``({},)`` is no options.
    """

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    relations: ClassVar[tuple[Neighbouring, ...]] = (Neighbouring.REPLACE,)
    columns: ClassVar[int] = 1
    needs_data_bounds: ClassVar[bool] = True
    options: ClassVar[Mapping[str, str]] = {}
    integer_valued: ClassVar[bool] = False
    conformance_options: ClassVar[tuple[Mapping[str, Any], ...]] = ({},)

    @property
    def mergeable(self) -> bool:
        """Whether the statistic implements :meth:`partial` and :meth:`finalize`."""
        cls = type(self)
        return cls.partial is not Statistic.partial and cls.finalize is not Statistic.finalize

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """The state of one chunk of records (values clamped record by record).

        Parameters
        ----------
        chunk : Dataset
            Some of the records (possibly none).
        data_bounds : tuple of (float, float), or None
            Data bounds, one pair of exact doubles per column.
        **options
            The statistic's own options.

        Returns
        -------
        State
            A tuple of Python ints that :meth:`merge` combines exactly.

        Raises
        ------
        ParameterError
            On invalid parameters or data; never revealing a value.
        """
        raise NotImplementedError(f"statistic {self.name!r} does not implement partial()")

    def merge(self, a: State, b: State) -> State:
        """The state of the union of two disjoint chunks: ``a + b`` element by element.

        Commutative and associative (integer addition); override for other states.
        """
        if len(a) != len(b):
            raise ParameterError(
                f"statistic {self.name!r} cannot merge states of lengths {len(a)} and {len(b)}"
            )
        return tuple(x + y for x, y in zip(a, b, strict=True))

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        """f(D) exactly, with Δ and the range of f, from the merged state of all records.

        Parameters are those of :meth:`~snapcore.Statistic.prepare`, with the merged
        ``state`` in place of the data.
        """
        raise NotImplementedError(f"statistic {self.name!r} does not implement finalize()")

    def prepare(
        self,
        data: Dataset,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        """f(D), Δ and the range of f for ``data`` under ``relation``.

        The default merges :meth:`partial` over chunks of ``data`` and calls
        :meth:`finalize`: the same code path as a release from many machines.

        Parameters
        ----------
        data : Dataset
            The validated columns (``data.numeric(i)`` raises a clear error on
            non-finite values without revealing them).
        data_bounds : tuple of (float, float), or None
            Data bounds, one pair of exact doubles per column.
        n : int or None
            The public n, if the caller gave one.
        relation : Neighbouring
            One of :attr:`relations`.
        **options
            The statistic's own options (see :attr:`options`).

        Returns
        -------
        Prepared

        Raises
        ------
        ParameterError
            On invalid parameters; never on (or revealing) private values.
        """
        if not self.mergeable:
            raise NotImplementedError(
                f"statistic {self.name!r} implements neither prepare() nor partial() and "
                "finalize()"
            )
        state = accumulate(self, data.chunks(), data_bounds=data_bounds, **options)
        return self.finalize(state, data_bounds=data_bounds, n=n, relation=relation, **options)

    def output_domain(self, prepared: Prepared) -> OutputDomain | None:
        """Where f(D) lies, for ``prepared`` (its bounds, n and relation): each released
        value is projected onto it (:meth:`OutputDomain.project`), post-processing that
        costs no privacy.  The default, None, releases the mechanism's outputs as they
        are; a statistic declares its domain by overriding this (the built-ins do).

        Only public quantities may decide the domain (``prepared.value_range``,
        ``prepared.n``, the options), never ``prepared.values``.
        """
        return None

    def __repr__(self) -> str:
        return f"<statistic {self.name!r}>"


def accumulate(
    stat: Statistic, chunks: Iterable[Dataset], *, data_bounds: DataBounds | None, **options: Any
) -> State:
    """Merge ``stat.partial`` over ``chunks`` in order (an empty iterable: no records)."""
    state: State | None = None
    for chunk in chunks:
        s = stat.partial(chunk, data_bounds=data_bounds, **options)
        state = s if state is None else stat.merge(state, s)
    if state is None:
        from snapcore.data._columns import Dataset

        empty = Dataset(
            [np.empty(0)] * stat.columns, [f"column {j}" for j in range(stat.columns)], 0
        )
        state = stat.partial(empty, data_bounds=data_bounds, **options)
    return state


def one_column_bounds(bounds: DataBounds | None, name: str) -> tuple[float, float]:
    """The single ``(lower, upper)`` pair of a one-column statistic, or a clear error."""
    if bounds is None:
        raise ParameterError(
            f"statistic {name!r} needs {keyword('data_bounds')}(lower, upper) on the data values",
            parameter="data_bounds",
        )
    if len(bounds) != 1:
        raise ParameterError(
            f"statistic {name!r} reads one column and needs one (lower, upper) pair, "
            f"got {len(bounds)} pairs",
            parameter="data_bounds",
        )
    return bounds[0]


def check_n(n: Any) -> int | None:
    """A public ``n`` (None or an int >= 0), else a ParameterError."""
    if n is None:
        return None
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer) or n < 0:
        raise ParameterError(
            f"{parameter_name('n')} must be an int >= 0, got {type_name(n)} {show(n)}",
            parameter="n",
        )
    return int(n)


def resolve_n(data_size: int, n: int | None, relation: Neighbouring, name: str) -> tuple[int, str]:
    """The public n for ``relation``, with a sentence saying where it comes from.

    Under ``Neighbouring.REPLACE`` n is public: it is taken from the data when not
    given, and must equal the data's size when given.  Under
    ``Neighbouring.ADD_REMOVE`` the size is private, so ``n`` must be given as a
    public upper bound on the number of records (used to cap the statistic).
    """
    if relation is Neighbouring.REPLACE:
        if n is None:
            return data_size, (
                f"n = {data_size} is the number of records; under the replace relation n is public"
            )
        if n != data_size:  # the number of records is not shown: n was declared wrong
            raise ParameterError(
                f"{parameter_name('n')} must equal the number of records under the replace "
                f"relation (n is public), got {keyword('n', n)}, which differs from it",
                parameter="n",
            )
        return n, f"n = {n} (public under the replace relation)"
    if n is None:
        raise ParameterError(
            f"statistic {name!r} under the add-remove relation needs {keyword('n')}, a "
            "public upper bound on the number of records (the number itself is private; "
            "any public cap will do, e.g. the population size, and a larger cap only "
            "widens the clamp interval)",
            parameter="n",
        )
    return n, (
        f"n = {n} is a public upper bound on the number of records (add-remove relation); "
        "the statistic is capped so that it never exceeds what n records allow"
    )


def clamp_fraction(q: Fraction, lo: Fraction, hi: Fraction) -> Fraction:
    """``min(max(q, lo), hi)``: 1-Lipschitz, so it never increases a sensitivity."""
    return lo if q < lo else hi if q > hi else q


# -- resolving a release request (snapcore.releases._api, snapcore.analysis._guarantees) --


def resolve_relation(stat: Statistic, relation: Any) -> Neighbouring:
    """The neighbouring relation to use: ``relation`` parsed, or the statistic's first;
    a ParameterError if the statistic does not support it."""
    rel = stat.relations[0] if relation is None else Neighbouring.parse(relation)
    if rel not in stat.relations:
        raise ParameterError(
            f"statistic {stat.name!r} supports {parameter_name('relation')} "
            f"{[r.value for r in stat.relations]}, got {rel.value!r}",
            parameter="relation",
        )
    return rel


def _pair(name: str, pair: Any) -> tuple[float, float]:
    """A ``(lower, upper)`` pair of exact doubles (:func:`snapcore.data.read_double_pair`)."""
    lo, hi = read_double_pair(name, pair, parameter="data_bounds")
    return (float(lo), float(hi))


def check_data_bounds(data_bounds: Any, stat: Statistic) -> DataBounds | None:
    """The data bounds as one pair of exact doubles per column, or None when the statistic
    needs none; a ParameterError naming ``data_bounds`` otherwise."""
    if data_bounds is None:
        if stat.needs_data_bounds:
            pairs = "one (lower, upper) pair per column" if stat.columns > 1 else "(lower, upper)"
            raise ParameterError(
                f"statistic {stat.name!r} needs {keyword('data_bounds')} on the data values: "
                f"{pairs}",
                parameter="data_bounds",
            )
        return None
    if (
        stat.columns > 1
        and hasattr(data_bounds, "__len__")
        and len(data_bounds) == stat.columns
        and all(hasattr(p, "__len__") and not isinstance(p, str) for p in data_bounds)
    ):
        return tuple(_pair(f"data_bounds[{i}]", p) for i, p in enumerate(data_bounds))
    if stat.columns > 1:
        raise ParameterError(
            f"statistic {stat.name!r} reads {stat.columns} columns and needs one "
            f"(lower, upper) pair per column, got {keyword('data_bounds', data_bounds)}",
            parameter="data_bounds",
        )
    return (_pair("data_bounds", data_bounds),)
