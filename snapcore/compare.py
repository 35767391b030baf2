"""Compare the registered arithmetic backends: version, conformance, speed.

:func:`compare_backends` measures every registered backend in one run, on the same
mechanism (ε = 1, bounds [0, 100], p = 118) and the same seeded draws, and reports
speeds also as ratios to the first available backend of the list (``mpfr`` when
present), measured in the same run.  ``snapcore compare`` prints the table.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from snapcore.plugins import get_registries

__all__ = ["BackendComparison", "compare_backends", "format_table"]

#: The mechanism every backend is timed on.
BENCH_PARAMS: dict[str, Any] = {"epsilon": 1.0, "bounds": (0.0, 100.0)}


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


def _time_scalar(mech: object, seconds: float) -> float:
    release = mech.release  # type: ignore[attr-defined]
    n, t0 = 0, time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(20):
            release(42.0)
        n += 20
        t = time.perf_counter()
        if t >= deadline:
            return n / (t - t0)


def compare_backends(
    names: Sequence[str] | None = None,
    *,
    size: int = 100_000,
    scalar_seconds: float = 1.0,
    conformance: bool = True,
    seed: int = 2026,
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
        How long to loop scalar releases per backend.
    conformance : bool
        Run :func:`snapcore.testing.run_conformance` (the quick selection) first.
    seed : int
        Seed of the :class:`~snapcore.sources.SeededSource` all backends share, so that
        their array outputs can be compared exactly.

    Returns
    -------
    list of BackendComparison
    """
    from snapcore.mechanism import SnappingMechanism
    from snapcore.sources import SeededSource

    reg = get_registries().backends
    if names is None:  # the reference (mpfr) first, then the others by name
        names = sorted(reg.names(), key=lambda n: (n != "mpfr", n))
    names = list(names)
    values = np.linspace(-20.0, 120.0, size)
    rows: list[BackendComparison] = []
    reference: np.ndarray | None = None
    for name in names:
        cls = reg.get(name)
        if not cls.is_available():
            rows.append(
                BackendComparison(
                    name=name, library=cls.library, available=False, version=cls.install_hint
                )
            )
            continue
        backend = reg.create(name)
        status = "not run"
        if conformance:
            from snapcore.testing.checks import run_conformance

            status = run_conformance(backend).summary()
        mech = SnappingMechanism(**BENCH_PARAMS, backend=backend, source=SeededSource(seed))
        scalar = _time_scalar(mech, scalar_seconds)
        mech = SnappingMechanism(**BENCH_PARAMS, backend=backend, source=SeededSource(seed))
        t0 = time.perf_counter()
        out = mech.release(values)
        dt = time.perf_counter() - t0
        if reference is None:
            reference = out
        rows.append(
            BackendComparison(
                name=name,
                library=cls.library,
                available=True,
                version=backend.version(),
                conformance=status,
                scalar_per_s=scalar,
                vector_per_s=size / dt,
                vector_seconds=dt,
                vector_size=size,
                outputs_agree=bool(np.array_equal(out, reference)),
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
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [head, *table]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*row) for row in table]
    return "\n".join(lines)
