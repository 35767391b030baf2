"""What a statistic is checked with: the parameter sets (:class:`Setting`), one under
a relation and a public ``n`` (:class:`Case`), the table for snapcore's own statistics
and the defaults for a plugin (:func:`settings_for`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from snapcore.data._neighbouring import Neighbouring
from snapcore.plugins._statistic import Statistic

__all__ = [
    "BUILTIN_SETTINGS",
    "Case",
    "Setting",
    "default_settings",
    "is_registered",
    "settings_for",
]


@attrs.frozen(kw_only=True)
class Setting:
    """One parameter set a statistic is checked with.

    Attributes
    ----------
    data_bounds : pair, pairs or None
        ``data_bounds=`` as given to :func:`snapcore.release` (one pair per column).
    options : mapping
        The statistic's own options (``bins=``, ``categories=``, ...).
    records : {"numeric", "categorical"}
        What the generated records are: real numbers near the bounds and the numeric
        options, or category-like values of mixed types.
    """

    data_bounds: Any = None
    options: Mapping[str, Any] = attrs.field(factory=dict)
    records: str = attrs.field(
        default="numeric", validator=attrs.validators.in_(("numeric", "categorical"))
    )

    @property
    def label(self) -> str:
        """A short id for test names."""
        parts = []
        if self.data_bounds is not None:
            parts.append(f"data_bounds={self.data_bounds!r}")
        parts += [f"{k}={v!r}" for k, v in self.options.items()]
        return ",".join(parts) or "default"


@attrs.frozen(kw_only=True)
class Case:
    """A setting under one relation with one public ``n`` (None: taken from the data)."""

    setting: Setting
    relation: Neighbouring
    n: int | None = None


def _f32(x: float) -> float:
    return float(np.float32(x))


#: The settings the built-in statistics are checked with.  The bounds include an
#: interval one float32 wide, so that float32 records, strings and doubles meet at
#: its ends, and an interval around 2**53, where integers stop being doubles.
BUILTIN_SETTINGS: dict[str, list[Setting]] = {
    "count": [Setting()],
    "sum": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
        Setting(data_bounds=(2.0**53 - 16, 2.0**53 + 16)),
    ],
    "mean": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
    ],
    "variance": [
        Setting(data_bounds=(0.0, 1.0)),
        Setting(data_bounds=(-3.0, 5.5)),
        Setting(data_bounds=(0.1, _f32(0.1))),
    ],
    "covariance": [
        Setting(data_bounds=((0.0, 1.0), (-3.0, 5.5))),
        Setting(data_bounds=((0.1, _f32(0.1)), (-1.0, 0.0))),
    ],
    "histogram": [
        Setting(options={"bins": [0.0, 1.0]}),
        Setting(options={"bins": [-3.0, 0.0, 0.5, 5.5]}),
        Setting(options={"categories": [1, 2, 3]}, records="categorical"),
        Setting(options={"categories": ["a", "b", 1]}, records="categorical"),
        Setting(options={"categories": [0.1, _f32(0.1), "x"]}, records="categorical"),
    ],
}

_DEFAULT_BOUNDS = [(0.0, 1.0), (-3.0, 5.5), (0.1, _f32(0.1))]


def default_settings(
    stat: Statistic, options: Sequence[Mapping[str, Any]] | None = None
) -> list[Setting]:
    """Settings for a statistic without a built-in table: each option set (default: the
    statistic's ``conformance_options``) with each of a few data bounds (if the
    statistic needs them), numeric records."""
    if options is None:
        options = stat.conformance_options
    bounds: list[Any] = [None]
    if stat.needs_data_bounds:
        bounds = (
            list(_DEFAULT_BOUNDS)
            if stat.columns <= 1
            else [tuple([b] * stat.columns) for b in _DEFAULT_BOUNDS]
        )
    return [Setting(data_bounds=b, options=dict(o)) for o in options for b in bounds]


def is_registered(stat: Statistic) -> bool:
    """Whether ``stat`` is the statistic registered under its name (the same class)."""
    from snapcore.plugins._manager import get_registries

    reg = get_registries().statistics
    return stat.name in reg.names() and type(reg.get(stat.name)) is type(stat)


def settings_for(stat: Statistic, settings: Sequence[Setting] | None = None) -> list[Setting]:
    """The settings ``stat`` is checked with: ``settings`` if given, else the built-in
    table for snapcore's own statistics, else :func:`default_settings`."""
    if settings is not None:
        return list(settings)
    if stat.name in BUILTIN_SETTINGS and is_registered(stat):
        return BUILTIN_SETTINGS[stat.name]
    return default_settings(stat)
