"""Compare the registered arithmetic backends (version, conformance, speed) and show
every installed statistic's conformance.

:func:`compare_backends` measures every registered backend in one run, on the same
mechanism (ε = 1, bounds [0, 100], p = 118) and the same seeded draws, and reports
speeds also as ratios to the first available backend of the list (``mpfr`` when
present), measured in the same run.  :func:`compare_statistics` runs the quick
statistic conformance check (:func:`snapcore.testing.run_statistic_conformance`) on
every registered statistic, built-in or plugin.  ``snapcore compare`` prints both
tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from snapcore.plugins._manager import get_registries

__all__ = [
    "BackendComparison",
    "StatisticComparison",
    "compare_backends",
    "compare_statistics",
    "format_statistics_table",
    "format_table",
]

#: The mechanism every backend is timed on.
BENCH_PARAMS: dict[str, Any] = {"epsilon": 1.0, "clamp_bounds": (0.0, 100.0)}


@attrs.frozen(kw_only=True)
class BackendComparison:
    """One backend's row of the comparison.

    Attributes
    ----------
    name, library : str
        Backend name and the library doing the arithmetic.
    available : bool
        Whether the library is installed (if not, ``version`` is the install hint and
        nothing else is measured).
    version : str
        The library's version string.
    conformance : str
        ``"pass (N checks)"``, ``"FAIL (...)"`` or ``"not run"``.
    scalar_per_s : float or None
        Scalar releases per second (``release(x)`` in a loop).
    vector_per_s : float or None
        Elements per second of one ``release`` of a ``vector_size``-element array.
    vector_seconds : float or None
        Wall time of that one array release.
    vector_size : int
        Size of the array release.
    outputs_agree : bool or None
        Whether the array release gave exactly the reference backend's outputs (same
        seeded draws).
    """

    name: str
    library: str
    available: bool
    version: str
    conformance: str = "not run"
    scalar_per_s: float | None = None
    vector_per_s: float | None = None
    vector_seconds: float | None = None
    vector_size: int = 0
    outputs_agree: bool | None = None


def _scalar_rates(mechs: dict[str, Any], seconds: float, rounds: int = 5) -> dict[str, float]:
    """Scalar releases per second of each mechanism, timed round-robin in ``rounds``
    slices so that a change of machine load affects every backend alike."""
    counts = dict.fromkeys(mechs, 0)
    spent = dict.fromkeys(mechs, 0.0)
    for _ in range(rounds):
        for name, mech in mechs.items():
            release = mech.release
            n, t0 = 0, time.perf_counter()
            deadline = t0 + seconds / rounds
            while True:
                for _ in range(20):
                    release(42.0)
                n += 20
                t = time.perf_counter()
                if t >= deadline:
                    break
            counts[name] += n
            spent[name] += t - t0
    return {name: counts[name] / spent[name] for name in mechs}


def compare_backends(
    names: Sequence[str] | None = None,
    *,
    size: int = 100_000,
    scalar_seconds: float = 1.0,
    conformance: bool = True,
    seed: int = 2026,
    repeat: int = 1,
    progress: Callable[[str, int], None] | None = None,
) -> list[BackendComparison]:
    """Measure each backend: version, quick conformance, scalar and array release speed.

    Parameters
    ----------
    names : sequence of str, optional
        Backends to compare (default: every registered backend, ``mpfr`` first).  The
        first available one is the reference for the speed ratios and the outputs.
    size : int
        Elements of the array release (10**5 by default).
    scalar_seconds : float
        How long to loop scalar releases per backend (in five round-robin slices).
    conformance : bool
        Run :func:`snapcore.testing.run_conformance` (the quick selection) first.
    seed : int
        Seed of the :class:`~snapcore.SeededSource` all backends share, so that
        their array outputs can be compared exactly.
    repeat : int
        Array releases per backend (round-robin); the fastest counts.
    progress : callable, optional
        Called as ``progress(step, total)`` before each step (a conformance run, the
        untimed warm-up of every backend, the scalar loop, one array release), with the
        total number of steps.

    Returns
    -------
    list of BackendComparison
    """
    from snapcore.mechanism._mechanism import SnappingMechanism
    from snapcore.randomness._sources import SeededSource

    reg = get_registries().backends
    if names is None:  # the reference (mpfr) first, then the others by name
        names = sorted(reg.names(), key=lambda n: (n != "mpfr", n))
    names = list(names)
    values = np.linspace(-20.0, 120.0, size)
    backends: dict[str, Any] = {}
    status: dict[str, str] = {}
    available = [n for n in names if reg.get(n).is_available()]
    total = (len(available) if conformance else 0) + 2 + repeat * len(available)

    def step(what: str) -> None:
        if progress is not None:
            progress(what, total)

    for name in names:
        cls = reg.get(name)
        if cls.is_available():
            backends[name] = reg.create(name)
            status[name] = "not run"
            if conformance:
                from snapcore.testing.checks import run_conformance

                step(f"conformance {name}")
                status[name] = run_conformance(backends[name]).summary()

    def mechanism(backend: Any) -> SnappingMechanism:
        return SnappingMechanism(**BENCH_PARAMS, backend=backend, source=SeededSource(seed))

    # Untimed: a first release pays one-off costs (numba compiling the fast engine,
    # imports, caches) that would otherwise be charged to whichever backend runs first.
    step("warm-up")
    warm = values[: min(size, 4096)]
    for backend in backends.values():
        m = mechanism(backend)
        m.release(42.0)
        m.release(warm)
    step("scalar releases")
    scalar = _scalar_rates({n: mechanism(b) for n, b in backends.items()}, scalar_seconds)
    best: dict[str, float] = {}
    outputs: dict[str, Any] = {}
    for _ in range(repeat):  # round-robin again; keep each backend's fastest run
        for name, backend in backends.items():
            step(f"array release {name}")
            mech = mechanism(backend)  # the same seeded draws every time
            t0 = time.perf_counter()
            outputs[name] = mech.release(values)
            dt = time.perf_counter() - t0
            best[name] = min(dt, best.get(name, dt))
    reference: Any = outputs[next(iter(backends))] if backends else None
    rows: list[BackendComparison] = []
    for name in names:
        cls = reg.get(name)
        if name not in backends:
            rows.append(
                BackendComparison(
                    name=name, library=cls.library, available=False, version=cls.install_hint
                )
            )
            continue
        rows.append(
            BackendComparison(
                name=name,
                library=cls.library,
                available=True,
                version=backends[name].version(),
                conformance=status[name],
                scalar_per_s=scalar[name],
                vector_per_s=size / best[name],
                vector_seconds=best[name],
                vector_size=size,
                outputs_agree=bool(np.array_equal(outputs[name], reference)),
            )
        )
    return rows


def format_table(rows: Sequence[BackendComparison], *, markdown: bool = False) -> str:
    """The comparison as a plain-text (or Markdown) table, with speed ratios to the
    first measured backend."""
    base = next((r for r in rows if r.scalar_per_s), None)
    size = base.vector_size if base else 0
    head = [
        "backend",
        "library version",
        "conformance",
        "scalar releases/s",
        f"{size:,}-element release: values/s (s)",
        "same outputs",
    ]
    table = []
    for r in rows:
        if not r.available:
            table.append([r.name, f"unavailable: {r.version}", "-", "-", "-", "-"])
            continue
        assert r.scalar_per_s is not None and r.vector_per_s is not None
        ratio_s = f" ({r.scalar_per_s / base.scalar_per_s:.2f}x)" if base else ""  # type: ignore[operator]
        ratio_v = f" ({r.vector_per_s / base.vector_per_s:.2f}x)" if base else ""  # type: ignore[operator]
        table.append(
            [
                r.name,
                r.version,
                r.conformance if len(r.conformance) < 60 else r.conformance[:57] + "...",
                f"{r.scalar_per_s:,.0f}{ratio_s}",
                f"{r.vector_per_s:,.0f}{ratio_v} ({r.vector_seconds:.2f} s)",
                "yes" if r.outputs_agree else "NO",
            ]
        )
    return _render(head, table, markdown)


@attrs.frozen(kw_only=True)
class StatisticComparison:
    """One statistic's row: where it comes from and whether it passes its suite.

    Attributes
    ----------
    name, origin : str
        Registered name and the plugin (entry point) that registered it.
    relations : tuple of str
        The neighbouring relations it supports.
    conformance : str
        ``"pass (N pairs, M datasets)"``, ``"FAIL (...)"`` or ``"not run"``.
    seconds : float or None
        Time the quick check took.
    """

    name: str
    origin: str
    relations: tuple[str, ...]
    conformance: str = "not run"
    seconds: float | None = None


def compare_statistics(
    names: Sequence[str] | None = None, *, conformance: bool = True, random_pairs: int = 24
) -> list[StatisticComparison]:
    """The quick statistic conformance check of each registered statistic.

    Parameters
    ----------
    names : sequence of str, optional
        Statistics to check (default: every registered one).
    conformance : bool
        Run :func:`snapcore.testing.run_statistic_conformance` (else ``"not run"``).
    random_pairs : int
        Random neighbouring pairs released end to end per statistic.

    Returns
    -------
    list of StatisticComparison
    """
    reg = get_registries().statistics
    rows = []
    for name in reg.names() if names is None else names:
        stat = reg.get(name)
        status, seconds = "not run", None
        if conformance:
            from snapcore.testing.statistic_checks import run_statistic_conformance

            t0 = time.perf_counter()
            status = run_statistic_conformance(stat, random_pairs=random_pairs).summary()
            seconds = time.perf_counter() - t0
        rows.append(
            StatisticComparison(
                name=name,
                origin=reg.origin(name),
                relations=tuple(r.value for r in stat.relations),
                conformance=status,
                seconds=seconds,
            )
        )
    return rows


def format_statistics_table(rows: Sequence[StatisticComparison], *, markdown: bool = False) -> str:
    """The statistics' rows as a plain-text (or Markdown) table."""
    head = ["statistic", "plugin", "relations", "conformance", "time"]
    table = [
        [
            r.name,
            r.origin,
            ", ".join(r.relations),
            r.conformance if len(r.conformance) < 90 else r.conformance[:87] + "...",
            "-" if r.seconds is None else f"{r.seconds:.1f} s",
        ]
        for r in rows
    ]
    return _render(head, table, markdown)


def _render(head: list[str], table: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [head, *table]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in table]
    return "\n".join(lines)
