"""One call of :func:`snapcore.release` as one value: :class:`ReleaseRequest`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from snapcore.calibration._clamp import ClampChoice
from snapcore.data._missing import MissingPolicy
from snapcore.data._neighbouring import Neighbouring
from snapcore.padding._pad import TimingMode
from snapcore.pipeline._backend import Backend
from snapcore.plugins._statistic import Statistic
from snapcore.randomness._sources import RandomSource

if TYPE_CHECKING:
    from snapcore.releases._budget import Budget

__all__ = ["ReleaseRequest"]


@attrs.frozen(kw_only=True, eq=False)
class ReleaseRequest:
    """The statistic, the data and the keywords of one release, checked before anything
    is read, drawn or charged.

    :func:`~snapcore.release` builds it from its arguments (see there for
    each keyword); the single and the grouped releases, the padding of a statistic's
    release and the record read it.  A keyword whose check needs the data is kept as
    given and checked where the data are read.

    Attributes
    ----------
    statistic : Statistic
        The statistic, resolved.
    data : object
        The private data, as given.
    epsilon : Fraction
        The total ε, positive.
    data_bounds : object
        As given (a partial state carries its own).
    gamma : Fraction or None
        The γ that chooses the clamp interval (0.05 unless given); None when
        :attr:`clamp_bounds` is given.
    clamp_bounds : ClampChoice or None
        The clamp interval given directly.
    n : object
        The public n as given (one per key with ``by=``).
    relation : Neighbouring
        The neighbouring relation (with ``by=`` and no ``group_sizes=``, add-remove
        when the statistic has it and none was given).
    column, by, keys, group_sizes : object
        As given.
    missing : MissingPolicy
        ``missing=`` and ``impute=``, checked against the relation.
    backend, source, precision : object
        As given (checked when the mechanism is made, before any draw).
    budget : Budget or None
        The budget to charge.
    timing : {"constant", "off"} or None
        The padding switch (None: by the source).
    options : mapping
        The statistic's own options, each one it takes.
    """

    statistic: Statistic
    data: Any
    epsilon: Fraction
    data_bounds: Any
    gamma: Fraction | None
    clamp_bounds: ClampChoice | None
    n: Any
    relation: Neighbouring
    column: str | tuple[str, ...] | None
    by: str | None
    keys: Iterable[Any] | None
    group_sizes: Mapping[Any, int] | None
    missing: MissingPolicy
    backend: str | Backend
    source: str | RandomSource | None
    budget: Budget | None
    precision: int | None
    timing: TimingMode | None
    options: Mapping[str, Any]

    @property
    def grouped(self) -> bool:
        """Whether this is a group-by release (``by``, ``keys`` or ``group_sizes`` given)."""
        return self.by is not None or self.keys is not None or self.group_sizes is not None
