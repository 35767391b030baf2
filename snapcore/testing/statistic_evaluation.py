"""A statistic run on one dataset in one container: through :func:`snapcore.release`
from a replay source of frozen draws, or stopped once the statistic has prepared its
values (:func:`prepare`); the :class:`Outcome` keeps what it handed the mechanism, the
release record and a one-line reproduction."""

from __future__ import annotations

import functools
import random
from fractions import Fraction
from typing import Any

import attrs

from snapcore.errors import ParameterError, StatisticConformanceError
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import OutputDomain, Prepared, Statistic
from snapcore.randomness._sources import ReplaySource
from snapcore.testing.statistic_containers import Container
from snapcore.testing.statistic_settings import Case, is_registered

__all__ = ["Outcome", "evaluate", "frozen_draws", "prepare", "reproduction"]


def _stat_expr(stat: Statistic) -> str:
    if is_registered(stat):
        return repr(stat.name)
    cls = type(stat)
    return f"__import__({cls.__module__!r}, fromlist=['_']).{cls.__qualname__}()"


class _Recorder(Statistic):
    """Wraps a statistic and keeps the Prepared that the release used; with ``stop``
    it then ends the release (raises :class:`_Prepared`) before anything is drawn."""

    name = "recorder"

    def __init__(self, inner: Statistic, *, stop: bool = False) -> None:
        for attr in _STATISTIC_ATTRIBUTES:
            setattr(self, attr, getattr(inner, attr))
        self.inner = inner
        self.stop = stop
        self.prepared: Prepared | None = None

    def prepare(self, data: Any, **kwargs: Any) -> Prepared:
        self.prepared = self.inner.prepare(data, **kwargs)
        if self.stop:
            raise _Prepared
        return self.prepared

    def output_domain(self, prepared: Prepared) -> OutputDomain | None:
        return self.inner.output_domain(prepared)


#: The statistic's declarations a release reads (the public class attributes).
_STATISTIC_ATTRIBUTES = (
    "name",
    *(
        k
        for k in dir(Statistic)
        if not k.startswith("_")
        and not callable(getattr(Statistic, k, None))
        and not isinstance(getattr(Statistic, k, None), property)  # derived, e.g. mergeable
    ),
)


class _Prepared(Exception):
    """Raised by a stopping recorder once the statistic has prepared its values."""


def prepare(
    statistic: Any,
    data: Any,
    *,
    data_bounds: Any = None,
    n: int | None = None,
    relation: Any = None,
    column: Any = None,
    **options: Any,
) -> Prepared:
    """What ``statistic`` hands the mechanism for ``data``: f(D) exactly, Δ, the range.

    This is :func:`snapcore.release` itself (the same validation of the bounds, n, the
    relation, the options and the data), stopped once the statistic has prepared its
    values: nothing is drawn.

    Raises
    ------
    ParameterError
        Whatever the release raises before drawing.
    """
    from snapcore.releases._api import release

    rec = _Recorder(resolve_statistic(statistic), stop=True)
    try:
        release(
            rec,
            data,
            epsilon=1,
            data_bounds=data_bounds,
            n=n,
            relation=relation,
            column=column,
            source=ReplaySource(()),
            **options,
        )
    except _Prepared:
        assert rec.prepared is not None
        return rec.prepared
    raise AssertionError("the release did not call the statistic's prepare")  # pragma: no cover


@functools.lru_cache(maxsize=4)
def frozen_draws(count: int = 512, seed: int = 19) -> tuple[tuple[int, Fraction], ...]:
    """Draws ``(sign, U*)`` with 12-bit ``U*`` (valid at every precision) for a
    :class:`~snapcore.ReplaySource`."""
    rng = random.Random(seed)
    return tuple(
        (rng.choice((1, -1)), Fraction(2 * rng.randrange(1 << 11) + 1, 1 << 12))
        for _ in range(count)
    )


@attrs.frozen(kw_only=True)
class Outcome:
    """One dataset through one container: f(D) and the release, or the refusal.

    Attributes
    ----------
    prepared : Prepared or None
        What the statistic handed the mechanism (None if refused).
    release : Release or None
        The release record (None if refused or not released).
    draws : int
        Draws consumed from the frozen replay source.
    refusal : str or None
        The ParameterError message, if the data or parameters were refused.
    repro : str
        A Python expression that recomputes ``prepared``.
    """

    prepared: Prepared | None
    release: Any
    draws: int
    refusal: str | None
    repro: str


_IMPORTS = (
    "import numpy as np, pandas as pd; from fractions import Fraction; "
    "from decimal import Decimal; from snapcore.testing.statistic_evaluation import prepare; "
)


def reproduction(expr: str) -> str:
    """A line of Python that imports what ``expr`` needs, then evaluates it."""
    return _IMPORTS + ("import polars as pl; " if "pl." in expr else "") + expr


def evaluate(
    stat: Statistic,
    case: Case,
    records: list[Any],
    container: Container,
    *,
    release: bool = True,
    epsilon: Fraction = Fraction(1),
) -> Outcome | None:
    """Run ``stat`` on ``records`` held in ``container`` under ``case``.

    With ``release`` the run is a full :func:`snapcore.release` from a replay source of
    frozen draws; otherwise only the statistic's ``prepare``.  Returns None when the
    container cannot hold the records exactly.

    Raises
    ------
    StatisticConformanceError
        If anything but a ParameterError escapes, or a refusal came after a draw.
    """
    from snapcore.releases._api import release as release_statistic

    built = container.build(records)
    if built is None:
        return None
    data, column = built
    st = case.setting
    kw = ", ".join(
        [f"data_bounds={st.data_bounds!r}", f"n={case.n!r}", f"relation={case.relation.value!r}"]
        + ([f"column={column!r}"] if column is not None else [])
        + [f"{k}={v!r}" for k, v in st.options.items()]
    )
    repro = f"prepare({_stat_expr(stat)}, {container.expr(records)}, {kw})"
    rec = _Recorder(stat)
    src = ReplaySource(frozen_draws())
    total = src.remaining
    try:
        if release:
            rel = release_statistic(
                rec,
                data,
                epsilon=epsilon,
                data_bounds=st.data_bounds,
                n=case.n,
                relation=case.relation,
                column=column,
                source=src,
                **st.options,
            )
        else:
            rel = None
            rec.prepared = prepare(
                stat,
                data,
                data_bounds=st.data_bounds,
                n=case.n,
                relation=case.relation,
                column=column,
                **st.options,
            )
    except ParameterError as exc:
        used = total - src.remaining
        if used:
            raise StatisticConformanceError(
                f"{stat.name}: refused with ParameterError after {used} draw(s); bad input "
                f"must be refused before any noise\nreproduce: {reproduction(repro)}"
            ) from None
        return Outcome(prepared=None, release=None, draws=0, refusal=str(exc), repro=repro)
    except Exception as exc:
        raise StatisticConformanceError(
            f"{stat.name} in {container.name}: raised {type(exc).__name__} ({exc}); bad input "
            f"must raise ParameterError\nreproduce: {reproduction(repro)}"
        ) from exc
    return Outcome(
        prepared=rec.prepared, release=rel, draws=total - src.remaining, refusal=None, repro=repro
    )
