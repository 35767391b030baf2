"""The statistic conformance checks as plain functions (no pytest or hypothesis needed).

A statistic's privacy claim is what its :class:`~snapcore.Prepared` declares:
the sensitivity Δ, the value range (B′) and the share of ε per coordinate.  These
functions check the claim on the values the statistic really hands the mechanism, as a
gray-box audit does (Cebere et al., "Privacy in Theory, Bugs in Practice", PETS 2026):
a dataset D and a neighbour D′ under the statistic's own relation go through
:func:`snapcore.release` with the same frozen draws, in one of the containers snapcore
accepts, and the two runs are compared **exactly** (Fractions, no tolerance):

- every coordinate moves by at most Δ, and the coordinates that moved, each spending
  ``ε · epsilon_share``, spend at most ε together;
- f(D) lies in the declared value range for every dataset (extremal ones included);
- everything fixed before noise (clamp interval, granularity, precision, ε split,
  labels, every field of the release record but the values) is identical for D and D′;
- the two releases take the same path: the same number of draws from the same replay
  source, and each released value is the mechanism's output on f(D) for those draws;
- bad input is refused with :class:`~snapcore.errors.ParameterError` before any draw;
- on datasets constructed to expose floating-point arithmetic (Casacuberta et al.,
  CCS 2022: absorption of small records next to a large one, cancellation, orderings
  that change a float sum), f(D) does not depend on the order of the records and moves
  by at most Δ (``check_float_traps``, deterministic, in the default run).

Every failure is a :class:`~snapcore.errors.StatisticConformanceError` whose message ends with a
one-line reproduction.  The checks take the
:class:`~snapcore.testing.statistic_evaluation.Outcome` of a statistic's runs
(:mod:`snapcore.testing.statistic_evaluation`) on the datasets of
:mod:`snapcore.testing.statistic_datasets` held in the containers of
:mod:`snapcore.testing.statistic_containers`, under the settings of
:mod:`snapcore.testing.statistic_settings`.  :mod:`snapcore.testing.statistic_conformance`
wraps the checks as a pytest suite; :func:`run_statistic_conformance` runs a quick
selection without pytest (``snapcore compare`` shows its result for every installed
statistic).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, cast

import attrs

from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import SnapcoreError, StatisticConformanceError
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import Prepared, Statistic
from snapcore.randomness._sources import ReplaySource
from snapcore.testing.statistic_containers import containers
from snapcore.testing.statistic_datasets import (
    RandomChooser,
    draw_pair,
    extremal_datasets,
    extremal_pairs,
    float_trap_pairs,
    range_cases,
)
from snapcore.testing.statistic_evaluation import Outcome, evaluate, frozen_draws, reproduction
from snapcore.testing.statistic_settings import Case, Setting, settings_for

REPLACE = Neighbouring.REPLACE

__all__ = [
    "StatisticReport",
    "check_dataset",
    "check_float_traps",
    "check_pair",
    "run_statistic_conformance",
]


# -- the checks --------------------------------------------------------------------------

#: Release fields that may differ between D and D′.
_RELEASE_FREE = {"value", "snapped"}
#: Prepared fields that may differ between D and D′.
_PREPARED_FREE = {"values"}


def _fail(msg: str, *repros: str) -> StatisticConformanceError:
    body = "[" + ", ".join(f"{r}.values" for r in repros) + "]"
    return StatisticConformanceError(f"{msg}\nreproduce: {reproduction(body)}")


def check_dataset(stat: Statistic, out: Outcome) -> None:
    """f(D) lies in the declared value range; the released values are the mechanism's
    outputs on f(D) for the frozen draws; the ε spent and its split are as declared.

    Raises
    ------
    StatisticConformanceError
    """
    prep = out.prepared
    if prep is None:
        return
    lo, hi = prep.value_range
    for label, v in zip(prep.labels, prep.values, strict=True):
        q = Fraction(v)
        if not lo <= q <= hi:
            raise _fail(
                f"{stat.name}: f(D)[{label}] = {q} lies outside the declared value range "
                f"[{lo}, {hi}] (B′ = {prep.b_prime})",
                out.repro,
            )
    domain = stat.output_domain(prep)
    if domain is not None:
        for label, v in zip(prep.labels, prep.values, strict=True):
            q = Fraction(v)
            inside = (domain.lower is None or domain.lower <= q) and (
                domain.upper is None or q <= domain.upper
            )
            if not inside or (domain.integral and q.denominator != 1):
                raise _fail(
                    f"{stat.name}: f(D)[{label}] = {q} lies outside the declared output "
                    f"domain ({domain.describe()})",
                    out.repro,
                )
    rel = out.release
    if rel is None or prep.sensitivity == 0:
        return
    from snapcore.mechanism._mechanism import SnappingMechanism

    if rel.epsilon_per_value != rel.epsilon_spent * prep.epsilon_share:
        raise _fail(
            f"{stat.name}: each value spent {rel.epsilon_per_value}, not ε · epsilon_share",
            out.repro,
        )
    mech = SnappingMechanism(
        epsilon=rel.epsilon_per_value,
        sensitivity=prep.sensitivity,
        clamp_bounds=rel.clamp_bounds,
        precision=rel.precision,
        backend=rel.backend,
        source=ReplaySource(frozen_draws()),
    )
    want = tuple(float(mech.release(cast(Any, Fraction(v)))) for v in prep.values)
    snapped = rel.snapped if isinstance(rel.snapped, tuple) else (rel.snapped,)
    if want != snapped or out.draws != len(prep.values):
        raise _fail(
            f"{stat.name}: the release is not the mechanism applied to f(D): snapped "
            f"{snapped} with {out.draws} draws, the mechanism gives {want} with "
            f"{len(prep.values)}",
            out.repro,
        )
    projected = want if domain is None else tuple(domain.project(w) for w in want)
    if projected != rel.values:
        raise _fail(
            f"{stat.name}: the released values {rel.values} are not the snapped values "
            f"projected onto the declared output domain, {projected}",
            out.repro,
        )


def _same_fields(
    stat: Statistic,
    cls: type,
    kind: str,
    x: Any,
    y: Any,
    free: set[str],
    a: Outcome,
    b: Outcome,
) -> None:
    """Every field of ``cls`` but those in ``free`` is equal in ``x`` (D) and ``y`` (D′)."""
    for f in attrs.fields(cls):
        if f.name in free:
            continue
        vx, vy = getattr(x, f.name), getattr(y, f.name)
        if vx != vy:
            raise _fail(
                f"{stat.name}: {kind}.{f.name} depends on the data: {vx!r} for D, {vy!r} "
                "for its neighbour D′",
                a.repro,
                b.repro,
            )


def check_pair(stat: Statistic, a: Outcome | None, b: Outcome | None) -> bool:
    """Check two neighbouring outcomes; returns whether both were released (and so
    compared).

    - every coordinate of f moves by at most Δ;
    - the coordinates that moved, each released with ``ε · epsilon_share``, spend at
      most ε together;
    - every Prepared field but ``values`` and every Release field but ``value`` are
      identical (nothing fixed before noise depends on the data);
    - both releases consumed the same number of draws.

    Raises
    ------
    StatisticConformanceError
    """
    if a is None or b is None or a.prepared is None or b.prepared is None:
        return False
    pa, pb = a.prepared, b.prepared
    _same_fields(stat, Prepared, "Prepared", pa, pb, _PREPARED_FREE, a, b)
    if len(pa.values) != len(pb.values):  # pragma: no cover - labels were equal
        raise _fail(f"{stat.name}: the number of values depends on the data", a.repro, b.repro)
    delta = pa.sensitivity
    moved = 0
    for label, x, y in zip(pa.labels, pa.values, pb.values, strict=True):
        d = abs(Fraction(x) - Fraction(y))
        if d > delta:
            raise _fail(
                f"{stat.name}: |f(D) − f(D′)|[{label}] = {d} > Δ = {delta} "
                f"({f'{float(d / delta):.9g}' if delta else 'inf'} Δ) under {pa.relation.value}",
                a.repro,
                b.repro,
            )
        moved += d != 0
    if moved * pa.epsilon_share > 1:
        raise _fail(
            f"{stat.name}: one record changed {moved} coordinates, each released with "
            f"ε · {pa.epsilon_share}: {moved * pa.epsilon_share} ε in all, more than ε",
            a.repro,
            b.repro,
        )
    ra, rb = a.release, b.release
    if ra is not None and rb is not None:
        _same_fields(stat, type(ra), "Release", ra, rb, _RELEASE_FREE, a, b)
        if a.draws != b.draws:
            raise _fail(
                f"{stat.name}: the releases of D and D′ took different paths: {a.draws} and "
                f"{b.draws} draws from the same replay source",
                a.repro,
                b.repro,
            )
    return True


def check_float_traps(stat: Statistic, setting: Setting, relation: Neighbouring) -> int:
    """The constructed datasets of
    ``statistic_datasets.float_trap_pairs`` (Casacuberta et al.,
    CCS 2022), read from a list: f(D) lies in the value range and the output domain;
    a reordered D gives the identical Prepared; a neighbour moves f by at most Δ.
    Deterministic; a failure names the constructed pair.  Returns the pairs compared.

    Raises
    ------
    StatisticConformanceError
    """
    lst = containers(stat.columns, setting.records)[0]
    case = Case(setting=setting, relation=relation, n=None if relation is REPLACE else 64)
    compared = 0
    for name, kind, d, d2 in float_trap_pairs(stat, setting, relation):
        a = evaluate(stat, case, d, lst, release=False)
        b = evaluate(stat, case, d2, lst, release=False)
        try:
            for o in (a, b):
                if o is not None:
                    check_dataset(stat, o)
            if kind == "neighbours":
                compared += check_pair(stat, a, b)
            elif a is not None and b is not None and a.prepared is not None:
                if b.prepared is None or a.prepared != b.prepared:
                    got = None if b.prepared is None else b.prepared.values
                    raise _fail(
                        f"{stat.name}: f(D) = {a.prepared.values} but the same records in "
                        f"another order give {got}: a value that depends on the order of "
                        "the records (a floating-point sum?)",
                        a.repro,
                        b.repro,
                    )
                compared += 1
        except StatisticConformanceError as exc:
            raise StatisticConformanceError(
                f"constructed pair {name!r} ({kind}; Casacuberta et al. 2022) with "
                f"{setting.label} under {relation.value}: D = {d!r}, D′ = {d2!r}\n{exc}"
            ) from None
    return compared


# -- without pytest ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class StatisticReport:
    """The result of :func:`run_statistic_conformance`."""

    statistic: str
    pairs: int
    datasets: int
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return not self.failures

    def summary(self) -> str:
        """``"pass (N pairs, M datasets)"`` or ``"FAIL (first failure)"``."""
        if self.passed:
            return f"pass ({self.pairs} pairs, {self.datasets} datasets)"
        return f"FAIL ({self.failures[0].splitlines()[0]})"


def run_statistic_conformance(
    statistic: Any,
    settings: Sequence[Setting] | None = None,
    *,
    random_pairs: int = 60,
    seed: int = 0,
    max_failures: int = 5,
) -> StatisticReport:
    """A quick run of the statistic checks without pytest.

    Every setting and relation: the constructed float traps
    (``check_float_traps``), the extremal datasets (value range, in a list), the
    neighbours of the smallest ones (prepare only, in a list), and ``random_pairs``
    random neighbouring pairs released through random containers.

    Parameters
    ----------
    statistic : Statistic, Statistic subclass or registered name
    settings : sequence of Setting, optional
        Parameter sets (default: the built-in table, or
        :func:`~snapcore.testing.statistic_settings.default_settings`).
    random_pairs : int
        Random pairs released end to end.
    seed : int
        Seed of the random pairs.
    max_failures : int
        Stop after this many failures.

    Returns
    -------
    StatisticReport
    """
    stat = resolve_statistic(statistic)
    sets = settings_for(stat, settings)
    failures: list[str] = []
    pairs = datasets = 0

    def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (StatisticConformanceError, SnapcoreError) as exc:
            failures.append(str(exc))
            return None

    ch = RandomChooser(seed)
    for setting in sets:
        conts = containers(stat.columns, setting.records)
        lst = conts[0]
        for rel in stat.relations:
            if len(failures) < max_failures:
                pairs += attempt(check_float_traps, stat, setting, rel) or 0
            for d in extremal_datasets(stat, setting):
                for case in range_cases(setting, rel, len(d)):
                    if len(failures) >= max_failures:
                        break
                    out = attempt(evaluate, stat, case, d, lst, release=False)
                    if out is not None:
                        datasets += 1
                        attempt(check_dataset, stat, out)
            n_cap = None if rel is Neighbouring.REPLACE else 2
            case = Case(setting=setting, relation=rel, n=n_cap)
            for d, d2 in extremal_pairs(stat, setting, rel):
                if len(failures) >= max_failures:
                    break
                a = attempt(evaluate, stat, case, d, lst, release=False)
                b = attempt(evaluate, stat, case, d2, lst, release=False)
                pairs += bool(attempt(check_pair, stat, a, b))
            for _ in range(max(1, random_pairs // (len(sets) * len(stat.relations)))):
                if len(failures) >= max_failures:
                    break
                rcase, d, d2 = draw_pair(ch, stat, setting, rel)
                fit = [c for c in conts if c.build(d) is not None and c.build(d2) is not None]
                cont = ch.choice(fit)
                a = attempt(evaluate, stat, rcase, d, cont)
                b = attempt(evaluate, stat, rcase, d2, cont)
                for o in (a, b):
                    if o is not None:
                        attempt(check_dataset, stat, o)
                pairs += bool(attempt(check_pair, stat, a, b))
    return StatisticReport(
        statistic=stat.name, pairs=pairs, datasets=datasets, failures=tuple(failures)
    )
