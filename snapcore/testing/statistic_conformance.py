"""The statistic conformance suite as pytest test classes.

A statistic author runs the whole suite with one line in a test module::

    from snapcore.testing import statistic_suite
    from mypackage import MyStatistic

    TestMyStatistic = statistic_suite(MyStatistic)

or, equivalently, by subclassing::

    class TestMyStatistic(StatisticConformance):
        statistic = MyStatistic      # a Statistic subclass, an instance or a registered name

Each test runs once per setting (data bounds and options, see
:class:`~snapcore.testing.statistic_settings.Setting`) and per relation the statistic
declares.  The checks are those of :mod:`snapcore.testing.statistic_checks`: exact
sensitivity and ε split on neighbours, the value range on extremal datasets, the data
independence of every field fixed before noise, and the release path under frozen
draws, in every container snapcore accepts.  :class:`RegisteredStatisticsConformance`
runs it over every registered statistic (snapcore's own tests use it for the
built-ins).  The hypothesis test runs ``max_examples`` pairs per setting and relation;
the one marked ``slow`` runs ``slow_max_examples`` — run it with ``pytest -m slow``.

Requires pytest and hypothesis (``pip install snapcore[test]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError, StatisticConformanceError
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import Statistic
from snapcore.testing.statistic_checks import check_dataset, check_float_traps, check_pair
from snapcore.testing.statistic_containers import containers
from snapcore.testing.statistic_datasets import (
    draw_pair,
    extremal_datasets,
    extremal_pairs,
    range_cases,
)
from snapcore.testing.statistic_evaluation import evaluate
from snapcore.testing.statistic_settings import Case, Setting, default_settings, settings_for

__all__ = [
    "RegisteredStatisticsConformance",
    "StatisticConformance",
    "registered_statistic_params",
    "statistic_suite",
]

Target = tuple[Statistic, Setting, Neighbouring]


class _HypothesisChooser:
    """The :class:`~snapcore.testing.statistic_datasets.Chooser` of a hypothesis example."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def choice(self, seq: Sequence[Any]) -> Any:
        return self._data.draw(st.sampled_from(list(seq)))

    def integer(self, lo: int, hi: int) -> int:
        out: int = self._data.draw(st.integers(lo, hi))
        return out

    def double(self, lo: float, hi: float) -> float:
        out: float = self._data.draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
        return out


def _targets(stat: Statistic, sets: Sequence[Setting]) -> list[Any]:
    return [
        pytest.param((stat, s, rel), id=f"{stat.name}-{rel.value}-{i}")
        for i, s in enumerate(sets)
        for rel in stat.relations
    ]


class StatisticConformance:
    """The conformance suite for one statistic; set :attr:`statistic` in a subclass.

    Every check is exact (Fractions); a failure message ends with a one-line
    reproduction.  Test ids are ``<name>-<relation>-<setting index>``.
    """

    #: The statistic under test: a Statistic subclass, an instance or a registered name.
    statistic: ClassVar[Any] = None
    #: Settings (data bounds and options); None: the built-in table for snapcore's own
    #: statistics, else the statistic's ``conformance_options`` with a few data bounds.
    settings: ClassVar[Sequence[Setting] | None] = None
    #: Hypothesis pairs per setting and relation in the default run.
    max_examples: ClassVar[int] = 12
    #: Hypothesis pairs per setting and relation in the ``slow`` run.
    slow_max_examples: ClassVar[int] = 600
    #: Records in a generated dataset, at most.
    max_size: ClassVar[int] = 8
    #: The ε of the end-to-end releases.
    epsilon: ClassVar[Fraction] = Fraction(1)

    def _target_params(self) -> list[Any]:
        if self.statistic is None:
            return []
        stat = resolve_statistic(self.statistic)
        return _targets(stat, settings_for(stat, self.settings))

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """Parametrise every test over (setting, relation)."""
        if "target" in metafunc.fixturenames:
            params = self._target_params()
            if not params:
                params = [
                    pytest.param(
                        None, marks=pytest.mark.skip(reason="set `statistic` on the subclass")
                    )
                ]
            metafunc.parametrize("target", params)

    # -- the value range (B′) ----------------------------------------------------------
    def test_value_range_extremal(self, target: Target) -> None:
        """f(D) lies in the declared range for every extremal dataset (each record at a
        bound or far outside, n = 1, binding caps, empty bins), read from a list."""
        stat, setting, rel = target
        lst = containers(stat.columns, setting.records)[0]
        accepted = 0
        for d in extremal_datasets(stat, setting):
            for case in range_cases(setting, rel, len(d)):
                out = evaluate(stat, case, d, lst, release=False)
                if out is not None and out.prepared is not None:
                    accepted += 1
                    check_dataset(stat, out)
        if not accepted:
            raise StatisticConformanceError(
                f"{stat.name} refused every extremal dataset under {rel.value} with "
                f"{setting.label}: nothing was checked (give settings= that it accepts)"
            )

    def test_value_range_every_container(self, target: Target) -> None:
        """The extremal datasets of at most two records, in every container."""
        stat, setting, rel = target
        small = [d for d in extremal_datasets(stat, setting) if len(d) <= 2]
        for cont in containers(stat.columns, setting.records)[1:]:
            for d in small[:: max(1, len(small) // 12)]:
                for case in range_cases(setting, rel, len(d))[:1]:
                    out = evaluate(stat, case, d, cont, release=False)
                    if out is not None:
                        check_dataset(stat, out)

    # -- constructed float traps (deterministic) ----------------------------------------
    def test_float_traps(self, target: Target) -> None:
        """Datasets constructed to expose floating-point sums (Casacuberta et al., CCS
        2022): absorption of small records next to a large one, cancellation, and
        orderings that change a float sum.  f(D) must not depend on the order of the
        records and must move by at most Δ between the constructed neighbours; the
        failure names the pair (``statistic_checks.check_float_traps``)."""
        check_float_traps(*target)

    # -- sensitivity on neighbours -------------------------------------------------------
    def test_extremal_neighbours(self, target: Target) -> None:
        """Neighbours of the smallest extremal datasets (a record replaced by, added as
        or removed from each critical point and each odd value), read from a list:
        ``|f(D) − f(D′)| <= Δ``, the ε split holds, nothing else depends on the data."""
        stat, setting, rel = target
        lst = containers(stat.columns, setting.records)[0]
        case = Case(setting=setting, relation=rel, n=None if rel is Neighbouring.REPLACE else 2)
        base: tuple[list[Any], Any] = ([None], None)
        for d, d2 in extremal_pairs(stat, setting, rel):
            if base[0] is not d:  # the pairs come grouped by D
                base = (d, evaluate(stat, case, d, lst, release=False))
            b = evaluate(stat, case, d2, lst, release=False)
            check_pair(stat, base[1], b)

    def test_extremal_neighbours_every_container(self, target: Target) -> None:
        """The same for a two-record dataset at a bound, in every container that holds
        both datasets exactly."""
        stat, setting, rel = target
        pairs = [(d, d2) for d, d2 in extremal_pairs(stat, setting, rel) if len(d) == 2]
        case = Case(setting=setting, relation=rel, n=None if rel is Neighbouring.REPLACE else 2)
        picked = pairs[:: max(1, len(pairs) // 16)]
        for cont in containers(stat.columns, setting.records)[1:]:
            a = None
            for d, d2 in picked:
                if cont.build(d2) is None:
                    continue
                if a is None or a[0] is not d:
                    a = (d, evaluate(stat, case, d, cont, release=False))
                b = evaluate(stat, case, d2, cont, release=False)
                check_pair(stat, a[1], b)

    def test_release_path_every_container(self, target: Target) -> None:
        """End to end through :func:`snapcore.release` with frozen draws, in every
        container: the record fields fixed before noise are identical, the draws are as
        many, and the values released are the mechanism's outputs on f(D)."""
        stat, setting, rel = target
        pairs = list(extremal_pairs(stat, setting, rel))
        picked = pairs[:: max(1, len(pairs) // 3)]
        case = Case(setting=setting, relation=rel, n=None if rel is Neighbouring.REPLACE else 2)
        for cont in containers(stat.columns, setting.records):
            for d, d2 in picked:
                self._check_released_pair(stat, case, d, d2, cont)

    def _check_released_pair(
        self, stat: Statistic, case: Case, d: Any, d2: Any, cont: Any
    ) -> None:
        """Release D and D′ through ``cont``; check each release, then the pair."""
        a = evaluate(stat, case, d, cont, epsilon=self.epsilon)
        b = evaluate(stat, case, d2, cont, epsilon=self.epsilon)
        for o in (a, b):
            if o is not None:
                check_dataset(stat, o)
        check_pair(stat, a, b)

    def _hypothesis_pairs(self, target: Target, examples: int) -> None:
        stat, setting, rel = target
        conts = containers(stat.columns, setting.records)

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.differing_executors,
                HealthCheck.filter_too_much,
                HealthCheck.data_too_large,
            ],
        )
        @given(data=st.data())
        def run(data: Any) -> None:
            ch = _HypothesisChooser(data)
            case, d, d2 = draw_pair(ch, stat, setting, rel, self.max_size)
            fit = [c for c in conts if c.build(d) is not None and c.build(d2) is not None]
            cont = ch.choice(fit)
            self._check_released_pair(stat, case, d, d2, cont)

        run()

    def test_neighbours_hypothesis(self, target: Target) -> None:
        """Hypothesis-generated neighbours (mixed types, odd records, ties, caps) in a
        random container, released end to end: every check above."""
        self._hypothesis_pairs(target, self.max_examples)

    @pytest.mark.slow
    def test_neighbours_hypothesis_slow(
        self, target: Target, request: pytest.FixtureRequest
    ) -> None:
        """The same with ``slow_max_examples`` pairs (``max_examples`` when a test suite
        runs it as a ``slow_sample``, as the backend suite's slow test does)."""
        sampled = request.node.get_closest_marker("slow_sample") is not None
        self._hypothesis_pairs(target, self.max_examples if sampled else self.slow_max_examples)


def registered_statistic_params(names: Sequence[str] | None = None) -> list[Any]:
    """One ``pytest.param`` per (registered statistic, setting, relation)."""
    from snapcore.plugins._manager import get_registries

    reg = get_registries().statistics
    out: list[Any] = []
    for name in reg.names() if names is None else names:
        stat = reg.get(name)
        out += _targets(stat, settings_for(stat, None))
    return out


class RegisteredStatisticsConformance(StatisticConformance):
    """The conformance suite once per registered statistic (built-in and plugins), or
    per name in :attr:`names`."""

    #: Only these registered statistics (None: all).
    names: ClassVar[Sequence[str] | None] = None

    def _target_params(self) -> list[Any]:
        return registered_statistic_params(self.names)


def statistic_suite(statistic: Any, **options: Any) -> type[StatisticConformance]:
    """A :class:`StatisticConformance` subclass for ``statistic``; assign it to a
    ``Test*`` name.

    Parameters
    ----------
    statistic : Statistic subclass, instance or registered name
    **options
        Class attributes to override: ``settings`` (a sequence of
        :class:`~snapcore.testing.statistic_settings.Setting`), ``max_examples``,
        ``slow_max_examples``, ``max_size``, ``epsilon``; or ``option_sets`` (a
        sequence of option mappings, each combined with a few data bounds if the
        statistic needs them).

    Returns
    -------
    type
        A test class.
    """
    stat = resolve_statistic(statistic)
    option_sets: Sequence[Mapping[str, Any]] | None = options.pop("option_sets", None)
    if option_sets is not None:
        options["settings"] = default_settings(stat, option_sets)
    unknown = set(options) - {
        "settings",
        "max_examples",
        "slow_max_examples",
        "max_size",
        "epsilon",
    }
    if unknown:
        raise ParameterError(f"statistic_suite got unknown option(s) {sorted(unknown)}")
    attrs = {"statistic": statistic, **options}
    return type(f"TestStatistic_{stat.name}", (StatisticConformance,), attrs)
