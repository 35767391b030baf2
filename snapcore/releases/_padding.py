"""The padding of a statistic's whole release (:func:`snapcore.release`).

The mechanism pads each release of a value (:mod:`snapcore.mechanism._padding`); the
statistic's own computation (reading the data, missing values, f(D)) runs before it and
is padded here: the whole call takes a whole number of quanta of a quantum that
depends on the statistic, its public parameters and the public n only, calibrated on
the first call with those by releasing synthetic data of that shape (with a separate
source of the same kind, no budget).  If the statistic cannot release synthetic data
(a plugin with its own data format), the call is not padded beyond its mechanism and
the release says so in its notes.  See ``docs/timing.md``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import attrs
import numpy as np

from snapcore.padding._pad import (
    budget_reps,
    calibrate_quantum,
    calibration_source,
    pad,
    resolve_mode,
)
from snapcore.padding._quanta import STATISTIC_QUANTA, statistic_stats
from snapcore.plugins._manager import get_registries
from snapcore.randomness._sources import RandomSource
from snapcore.releases._record import Release
from snapcore.releases._request import ReleaseRequest

__all__ = ["STATISTIC_DEFAULT_MAX_N", "STATISTIC_MARGIN", "STATISTIC_REPS", "padded_statistic"]

#: Quantum = the slowest synthetic class's median time times the margin.
STATISTIC_MARGIN = 1.2
#: At most this many calibration rounds per class.
STATISTIC_REPS = 15
#: With ``timing=None`` (the default), a statistic's whole release is padded only up to
#: this public n: its quantum is calibrated by releasing synthetic data of that size
#: several times, which at data scale would cost more than the release itself (and the
#: memory of the synthetic copies).  Above it the mechanism's releases are still
#: padded; ``timing="constant"`` pads the whole release at any n.
STATISTIC_DEFAULT_MAX_N = 100_000

#: The shapes of synthetic data a statistic's quantum is calibrated on (:func:`_synthetic`).
_SYNTHETIC_KINDS = ("spread", "subnormal", "outside", "lower", "upper")

_now = time.perf_counter_ns
SingleRelease = Callable[[ReleaseRequest], Release]


def padded_statistic(release: SingleRelease) -> SingleRelease:
    """Decorate the release of one statistic (no group-by): pad the whole call.

    The quantum is calibrated by running the undecorated ``release`` on synthetic
    requests (see the module's docstring).
    """

    @functools.wraps(release)
    def padded(request: ReleaseRequest) -> Release:
        if resolve_mode(request.timing, _cryptographic(request.source)) == "off":
            return release(request)
        start = _now()
        out = release(request)
        if request.timing is None and out.n is not None and out.n > STATISTIC_DEFAULT_MAX_N:
            return _note(
                out,
                f"timing: the statistic's computation is padded by default only up to "
                f"n = {STATISTIC_DEFAULT_MAX_N} records (timing='constant' pads it at any "
                "n); the mechanism's releases were padded",
            )
        n = out.n
        key = None if n is None else _key(request, n)
        if key is None or n is None:
            return _note(out, "timing: not padded (no public size or unhashable parameters)")
        t_cal = _now()
        try:
            q = STATISTIC_QUANTA.get(key, lambda: _calibrate(release, request, n, out))
        except Exception as exc:  # the statistic cannot release synthetic data
            return _note(
                out,
                "timing: the statistic could not be calibrated on synthetic data "
                f"({type(exc).__name__}); only the mechanism's releases were padded",
            )
        # A first call's calibration (synthetic data only) is not part of its quantum.
        pad(start + (_now() - t_cal), q, statistic_stats())
        return out

    return padded


def _cryptographic(source: str | RandomSource | None) -> bool:
    """Whether a release's ``source=`` (an instance, a registered name, or None: the
    release's default, the OS or ChaCha20) is cryptographic."""
    if source is None:
        return True
    if isinstance(source, str):
        try:
            kind = get_registries().sources.get(source)
        except Exception:  # an unknown name: the release reports it
            return False
        return isinstance(kind, type) and issubclass(kind, RandomSource) and kind.cryptographic
    return source.cryptographic


def _key(request: ReleaseRequest, n: int) -> Hashable | None:
    """What a statistic's quantum depends on: its kind, its public parameters (every
    keyword but the data and the budget, printed) and the public n."""
    stat = request.statistic
    kind = f"{type(stat).__module__}.{type(stat).__qualname__}:{stat.name}"
    fields = attrs.asdict(request, recurse=False)
    try:
        parts = tuple(
            sorted(
                (name, repr(value))
                for name, value in fields.items()
                if name not in ("statistic", "data", "budget")
            )
        )
    except Exception:
        return None
    return (kind, parts, n)


def _calibrate(release: SingleRelease, request: ReleaseRequest, n: int, out: Release) -> int:
    """The quantum of ``request``'s statistic at ``n`` records (``out`` is its release),
    in ns: its release of synthetic data of each kind, with a fresh source and no
    budget."""
    source = request.source
    stat = request.statistic
    # A name (or None) makes each release build a fresh source, as the caller's calls
    # do; an instance is replaced by a fresh one of the same kind (the caller's stream
    # is never read).
    fresh = source if source is None or isinstance(source, str) else calibration_source(source)
    base = attrs.evolve(request, source=fresh, budget=None, timing=request.timing or "constant")
    bounds = out.data_bounds
    classes = []
    for kind in _SYNTHETIC_KINDS:
        synthetic, names = _synthetic(n, stat.columns, bounds, request.options, request.data, kind)
        column = request.column
        if names is not None:
            column = names if len(names) > 1 else names[0]
        elif column is not None:  # a table with a named column (the CLI, frames)
            synthetic = {column if isinstance(column, str) else column[0]: synthetic}
        classes.append(attrs.evolve(base, data=synthetic, column=column))

    return calibrate_quantum(
        release,
        classes,
        reps=budget_reps(release, classes, STATISTIC_REPS),
        margin=STATISTIC_MARGIN,
        warmup=1,
    )


def _synthetic(
    n: int, columns: int, bounds: Any, options: Mapping[str, Any], like: Any, kind: str
) -> tuple[Any, tuple[str, ...] | None]:
    """Public worst-case data of ``n`` records shaped like ``like``; and their column
    names when they are a table of several columns.

    ``kind`` is one of :data:`_SYNTHETIC_KINDS`: full-mantissa doubles spread over
    twice the data bounds (about half clamped), with subnormals and ±1e300 mixed in;
    all subnormal; all far outside; all at the lower or the upper bound.  Categories
    cycle when the statistic takes ``categories``.
    """
    rng = np.random.default_rng()
    categories = options.get("categories")
    cols: list[np.ndarray] = []
    for j in range(max(columns, 1)):
        if categories is not None:
            cat_list = list(categories)
            cols.append(np.array([cat_list[i % len(cat_list)] for i in range(n)], dtype=object))
            continue
        if bounds is not None:
            lo, hi = bounds[j] if columns > 1 else bounds[0]
        elif options.get("bins") is not None:
            lo, hi = float(options["bins"][0]), float(options["bins"][-1])
        else:
            lo, hi = -1.0, 1.0
        w = hi - lo
        if kind == "spread":
            col = rng.uniform(lo - w / 2, hi + w / 2, n)
            col[0:n:97] = 5e-324
            col[1:n:89] = 1e300
            col[2:n:83] = -1e300
        elif kind == "subnormal":
            col = np.where(np.arange(n) % 2 == 0, 5e-324, -5e-324 * 3)
        elif kind == "outside":
            col = np.where(np.arange(n) % 2 == 0, 1e300, -1e300)
        else:
            col = np.full(n, lo if kind == "lower" else hi)
        cols.append(col)
    if columns == 0:
        cols = [np.zeros(n)]
    if isinstance(like, list | tuple):
        if len(cols) == 1:
            return cols[0].tolist(), None
        return [list(r) for r in zip(*(c.tolist() for c in cols), strict=True)], None
    if len(cols) == 1:
        return cols[0], None
    names = tuple(f"c{j}" for j in range(len(cols)))
    return dict(zip(names, cols, strict=True)), names


def _note(out: Release, note: str) -> Release:
    return attrs.evolve(out, notes=(*out.notes, note))
