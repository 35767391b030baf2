"""One call of :func:`snapcore.release` as one value: :class:`ReleaseRequest`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from snapcore.calibration._clamp import ClampChoice
from snapcore.data._missing import MissingPolicy
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError
from snapcore.padding._pad import TimingMode
from snapcore.pipeline._backend import Backend
from snapcore.pipeline._threads import check_threads
from snapcore.plugins._statistic import DataBounds, Statistic
from snapcore.randomness._sources import RandomSource

if TYPE_CHECKING:
    from snapcore.releases._budget import Budget

__all__ = ["ReleaseRequest", "check_options"]


#: The keywords of :func:`snapcore.release` besides the statistic's own options: a
#: misspelt one is suggested from these too.
RELEASE_KEYWORDS = (
    "epsilon",
    "data_bounds",
    "gamma",
    "clamp_bounds",
    "n",
    "relation",
    "column",
    "by",
    "keys",
    "group_sizes",
    "missing",
    "impute",
    "backend",
    "source",
    "budget",
    "precision",
    "timing",
    "threads",
    "label",
)


def check_options(stat: Statistic, options: Mapping[str, Any]) -> None:
    """Refuse any of ``options`` that ``stat`` does not take (a release's or a partial
    state's keyword arguments), suggesting the nearest option or release keyword
    (``bounds`` → ``data_bounds``)."""
    unknown = sorted(set(options) - set(stat.options))
    if unknown:
        import difflib  # here: only a refused keyword needs a suggestion

        own = sorted(stat.options)
        valid = f"valid options: {own}" if own else "it takes no options of its own"
        hints = []
        for u in unknown:
            near = difflib.get_close_matches(str(u), [*own, *RELEASE_KEYWORDS], n=1, cutoff=0.6)
            if not near and isinstance(u, str):  # a fragment: bounds -> data_bounds
                near = [k for k in (*own, *RELEASE_KEYWORDS) if len(u) >= 3 and u in k][:1]
            if near:
                hints.append(f"{u}= -> {near[0]}=")
        hint = f"; did you mean {', '.join(hints)}?" if hints else ""
        raise ParameterError(
            f"statistic {stat.name!r} got unknown option(s) {unknown}; {valid}{hint}",
            parameter=unknown[0],
        )


def _read_only(mapping: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """A read-only view of a copy of ``mapping``: later changes to the caller's
    mapping do not reach the request."""
    return MappingProxyType(dict(mapping))


def _read_only_if_mapping(value: Any) -> Any:
    return _read_only(value) if isinstance(value, Mapping) else value


def _check_threads(_instance: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    check_threads(value)


def _optional_tuple(items: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if items is None else tuple(items)


@attrs.frozen(kw_only=True, eq=False)
class ReleaseRequest:
    """The statistic, the data and the keywords of one release, checked before anything
    is read, drawn or charged.

    :func:`~snapcore.release` checks its arguments (see there for each keyword) and
    builds it; the single and the grouped releases, the padding of a statistic's
    release and the record read it.  What a request holds is checked: a keyword whose
    check needs the data (a mapping's keys against the key set, the data's columns) is
    checked where the data are read.  Sequences are held as tuples and mappings as
    read-only copies, so a request does not change after it is made.

    Attributes
    ----------
    statistic : Statistic
        The statistic, resolved.
    data : object
        The private data, as given.
    epsilon : Fraction
        The total ε, positive.
    data_bounds : DataBounds or None
        The data bounds, checked against the statistic; None when not given (a
        statistic that needs them then reads them from a partial state).
    gamma : Fraction or None
        The γ that chooses the clamp interval (0.05 unless given); None when
        :attr:`clamp_bounds` is given.
    clamp_bounds : ClampChoice or None
        The clamp interval given directly.
    n : int, mapping key -> int or None, or None
        The public n, checked; with ``by=`` one for every key, or a read-only
        mapping with one per key.
    relation : Neighbouring
        The neighbouring relation (with ``by=`` and no ``group_sizes=``, add-remove
        when the statistic has it and none was given).
    column, by : object
        As given (``by`` is a column name when ``keys`` is given).
    keys : tuple or None
        The public key set, checked (``by=``); None without ``by=``.
    group_sizes : mapping or None
        As given, held as a read-only copy when a mapping.
    missing : MissingPolicy
        ``missing=`` and ``impute=``, checked against the relation.
    backend, source, precision : object
        As given (checked when the mechanism is made, before any draw).
    budget : Budget or None
        The budget to charge.
    timing : {"constant", "off"} or None
        The padding switch (None: by the source).
    threads : int or None
        The threads an array release may use (an int >= 1; None: by the array's size
        and the usable CPUs, :func:`~snapcore.pipeline._threads.resolve_threads`).
    options : mapping
        The statistic's own options, each one it takes (a read-only copy).
    label : str or None
        What the budget's history (a ledger entry) calls this release; None: the
        statistic's name (and ``by`` column).
    """

    statistic: Statistic
    data: Any
    epsilon: Fraction
    data_bounds: DataBounds | None
    gamma: Fraction | None
    clamp_bounds: ClampChoice | None
    n: int | Mapping[Any, int | None] | None
    relation: Neighbouring
    column: str | tuple[str, ...] | None
    by: str | None
    keys: tuple[Any, ...] | None = attrs.field(converter=_optional_tuple)
    group_sizes: Mapping[Any, int] | None = attrs.field(converter=_read_only_if_mapping)
    missing: MissingPolicy
    backend: str | Backend
    source: str | RandomSource | None
    budget: Budget | None
    precision: int | None
    timing: TimingMode | None
    options: Mapping[str, Any] = attrs.field(converter=_read_only)
    label: str | None = None
    threads: int | None = attrs.field(default=None, validator=_check_threads)

    @property
    def grouped(self) -> bool:
        """Whether this is a group-by release (``by``, ``keys`` or ``group_sizes`` given)."""
        return self.by is not None or self.keys is not None or self.group_sizes is not None
