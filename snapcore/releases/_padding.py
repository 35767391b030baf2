"""The padding of a statistic's whole release (:func:`snapcore.release`).

The mechanism pads each release of a value (:mod:`snapcore.mechanism._padding`); the
statistic's own computation (reading the data, missing values, f(D)) runs before it and
is padded here: the whole call takes a whole number of quanta of a quantum that
depends on the statistic, its public parameters and the public n only, calibrated on
the first call with those by releasing synthetic data of that shape (with a separate
source of the same kind, no budget).  If the statistic cannot release synthetic data
(a plugin with its own data format), the call is not padded beyond its mechanism and
the release says so in its notes.

A group-by release is padded as a whole the same way, its quantum depending also on
the public key set and the public total n (:func:`grouped_total`).  A group-by release
of per-key partial states reads no records: its time depends on the statistic, its
public parameters (with the states' data bounds and options) and the key set, and its
quantum is calibrated on synthetic partial states of every key
(:func:`_synthetic_state`).

The quantum is looked up when the release calls :func:`ready_padding`, after its
checks and before its budget is charged.  Within
:func:`snapcore.padding.random_delay`, a call padded as a whole then waits a random
delay and its record carries the timing claim.  See ``docs/timing.md``.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import time
from collections.abc import Callable, Hashable, Mapping
from fractions import Fraction
from typing import Any, TypeVar

import attrs
import numpy as np

from snapcore._display import short
from snapcore.data._values import category_key
from snapcore.errors import BudgetExceededError
from snapcore.padding._pad import (
    RandomDelay,
    TimingGuarantee,
    active_delay,
    budget_reps,
    calibrate_quantum,
    calibration_source,
    next_dither,
    pad,
    resolve_mode,
    uniform_doubles,
    wait_until,
)
from snapcore.padding._quanta import STATISTIC_QUANTA, statistic_stats
from snapcore.plugins._manager import get_registries
from snapcore.randomness._sources import RandomSource
from snapcore.releases._grouped import GroupedRelease
from snapcore.releases._record import RatioRelease, Release, VarianceRatioRelease
from snapcore.releases._request import ReleaseRequest

__all__ = [
    "PARTIAL_DEFAULT_N",
    "STATISTIC_DEFAULT_MAX_N",
    "STATISTIC_MARGIN",
    "STATISTIC_MIN_MARGIN",
    "STATISTIC_REPS",
    "STATISTIC_SPREAD_QUANTILE",
    "grouped_total",
    "padded_grouped",
    "padded_statistic",
    "ready_padding",
]

#: Quantum = the slowest synthetic class's median time times a margin derived from the
#: calibration's spread, within ``[STATISTIC_MIN_MARGIN, STATISTIC_MARGIN]``
#: (:func:`~snapcore.padding.calibrate_quantum`).
STATISTIC_MARGIN = 1.2
STATISTIC_MIN_MARGIN = 1.03
#: The quantile of the calibration's spread the margin covers: a whole release is long
#: enough for its classes' overrun rates to differ measurably when a tenth of the
#: slowest class's calls overrun (docs/timing.md), so it covers more of it.
STATISTIC_SPREAD_QUANTILE = 0.97
#: At most this many calibration rounds per class.
STATISTIC_REPS = 15
#: With ``timing=None`` (the default), a statistic's whole release is padded only up to
#: this public n: its quantum is calibrated by releasing synthetic data of that size
#: several times, which at data scale would cost more than the release itself (and the
#: memory of the synthetic copies).  Above it the mechanism's releases are still
#: padded; ``timing="constant"`` pads the whole release at any n.
STATISTIC_DEFAULT_MAX_N = 100_000

#: The number of records of a synthetic partial state for a key without a public n (a
#: partial state's size grows with the log of its record count only).
PARTIAL_DEFAULT_N = 1000
#: Synthetic partial states are built from blocks of at most this many records, merged.
_PARTIAL_BLOCK = 256

#: The shapes of synthetic data a statistic's quantum is calibrated on (:func:`_synthetic`).
_SYNTHETIC_KINDS = ("spread", "subnormal", "outside", "lower", "upper")

_now = time.perf_counter_ns
SingleRelease = Callable[[ReleaseRequest], Release]
GroupedReleaseFn = Callable[[ReleaseRequest], GroupedRelease]
R = TypeVar("R", Release, GroupedRelease)


@attrs.define
class _Pending:
    """A padded call in progress: its quantum, once :func:`ready_padding` looked it up."""

    calibrate: Callable[[int, Any], int]
    request: ReleaseRequest
    delay: RandomDelay | None = None
    ready: bool = False
    quantum: int | None = None
    note: str | None = None
    #: Time spent looking the quantum up (a first call's calibration, on synthetic data
    #: only): not part of the padded call's quantum.
    excluded_ns: int = 0
    #: Whether the call reads records (not when the data are partial states), so that
    #: the default limit on n applies.
    reads_records: bool = True


_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "snapcore_release_padding", default=None
)


def ready_padding(n: int | None, data_bounds: Any, epsilon: Fraction | None = None) -> None:
    """Look up the quantum of the padded release in progress (if any) for the public
    ``n`` (with ``by=``: the public total over the groups, or None) and the data
    bounds used; and, with a :class:`~snapcore.padding.RandomDelay` that charges,
    charge its ε_t to the request's budget (refused, with nothing spent, unless the
    budget also covers the release's own ``epsilon``).

    A release calls it before its budget is charged, so that a problem of a quanta
    store (a warning, which a caller may turn into an error) is decided before any
    spend.  The calibration releases synthetic data, within which this is a no-op.
    """
    pending = _PENDING.get()
    if pending is None or pending.ready:
        return
    pending.ready = True
    token = _PENDING.set(None)  # the calibration's own releases are not padded here
    t0 = _now()
    try:
        pending.quantum, pending.note = _lookup(pending, n, data_bounds)
    finally:
        pending.excluded_ns = _now() - t0
        _PENDING.reset(token)
    delay, budget = pending.delay, pending.request.budget
    if pending.quantum is not None and delay is not None and delay.charge and budget is not None:
        need = delay.epsilon + (epsilon or 0)
        if need > budget.remaining:
            raise BudgetExceededError(
                f"the budget cannot cover the release's ε and the timing's ε_t "
                f"({short(need)} > {short(budget.remaining)} remaining); nothing was spent"
            )
        budget.spend(delay.epsilon, label=f"timing of {pending.request.statistic.name}")


def _lookup(pending: _Pending, n: int | None, data_bounds: Any) -> tuple[int | None, str | None]:
    request = pending.request
    if (
        pending.reads_records
        and request.timing is None
        and n is not None
        and n > STATISTIC_DEFAULT_MAX_N
    ):
        return None, (
            f"timing: the statistic's computation is padded by default only up to "
            f"n = {STATISTIC_DEFAULT_MAX_N} records (timing='constant' pads it at any "
            "n); the mechanism's releases were padded"
        )
    key = None if n is None else _key(request, n, _partial_states(request.data))
    if key is None or n is None:
        return None, "timing: not padded as a whole (no public size or unhashable parameters)"
    try:
        return STATISTIC_QUANTA.get(key, lambda: pending.calibrate(n, data_bounds)), None
    except Warning:  # a quanta store's problem turned into an error: before any spend
        raise
    except Exception as exc:  # the statistic cannot release synthetic data
        return None, (
            "timing: the statistic could not be calibrated on synthetic data "
            f"({type(exc).__name__}); only the mechanism's releases were padded"
        )


def _padded_call(
    release: Callable[[ReleaseRequest], R],
    request: ReleaseRequest,
    calibrate: Callable[[int, Any], int],
    after: Callable[[R], tuple[int | None, Any]],
    note: Callable[[R, str], R],
    guaranteed: Callable[[R, TimingGuarantee], R],
    reads_records: bool = True,
) -> R:
    """``release(request)`` padded as a whole; ``after(out)`` gives the public n and data
    bounds when the release did not call :func:`ready_padding` itself."""
    if resolve_mode(request.timing, _cryptographic(request.source)) == "off":
        return release(request)
    delay = active_delay()
    pending = _Pending(
        calibrate=calibrate, request=request, delay=delay, reads_records=reads_records
    )
    token = _PENDING.set(pending)
    dither = next_dither()
    start = _now()
    try:
        out = release(request)
        if not pending.ready:  # a path without the checkpoint (after the spend: no raise)
            try:
                ready_padding(*after(out))
            except Warning as exc:
                pending.quantum, pending.note = None, f"timing: not padded ({exc})"
    finally:
        _PENDING.reset(token)
    if pending.quantum is None:
        return note(out, pending.note or "timing: not padded as a whole")
    q, begin = pending.quantum, start + pending.excluded_ns
    # Drawn inside the padded call (a few µs, covered by the quantum), from the OS
    # CSPRNG: never from the release's source, whose draws it would shift.
    wait_ns = 0 if delay is None else delay.sample_ns(q)
    j = pad(begin, q, statistic_stats(), dither)
    if delay is None:
        return out
    wait_until(begin + j * q + dither + wait_ns)
    return guaranteed(out, delay.guarantee(q))


def padded_statistic(release: SingleRelease) -> SingleRelease:
    """Decorate the release of one statistic (no group-by): pad the whole call.

    The quantum is looked up when the release calls :func:`ready_padding` (before
    its budget is charged), calibrated by running the undecorated ``release`` on
    synthetic requests (see the module's docstring).
    """

    @functools.wraps(release)
    def padded(request: ReleaseRequest) -> Release:
        def calibrate(n: int, data_bounds: Any) -> int:
            return _calibrate(release, request, n, data_bounds)

        return _padded_call(
            release,
            request,
            calibrate,
            lambda out: (out.n, out.data_bounds),
            _note,
            _guaranteed,
        )

    return padded


def padded_grouped(release: GroupedReleaseFn) -> GroupedReleaseFn:
    """Decorate a group-by release: pad the whole call, every group together.

    The quantum depends on the statistic, its public parameters, the public key set
    and the public total n (the sum of the groups' caps under ``add-remove``, of the
    declared group sizes under ``replace``), and is calibrated on synthetic tables
    with every group full (see :func:`grouped_total`); for per-key partial states, on
    synthetic partial states of every key (see :func:`_calibrate_grouped_partials`).
    """

    @functools.wraps(release)
    def padded(request: ReleaseRequest) -> GroupedRelease:
        parts = _partial_states(request.data)

        def calibrate(n: int, data_bounds: Any) -> int:
            if parts is not None:
                return _calibrate_grouped_partials(release, request, parts)
            return _calibrate_grouped(release, request, data_bounds)

        return _padded_call(
            release,
            request,
            calibrate,
            lambda out: (grouped_total(request), request.data_bounds),
            _note_groups,
            _guaranteed_groups,
            reads_records=parts is None,
        )

    return padded


def grouped_total(request: ReleaseRequest) -> int | None:
    """The public total n of a group-by request: the sum of its groups' public n (caps
    under ``add-remove``, declared sizes under ``replace``), or None when a group has
    none.  For per-key partial states (whose release reads no records), a key without
    a public n counts :data:`PARTIAL_DEFAULT_N` records, as its calibration does."""
    if request.keys is None:
        return None
    if _partial_states(request.data) is not None:
        return sum(_partial_sizes(request))
    per_key = _group_sizes(request)
    return None if per_key is None else sum(per_key)


def _partial_states(data: Any) -> Mapping[Any, Any] | None:
    """``data`` when it is ``{key: Partial}`` with at least one partial state, else None."""
    partials = sys.modules.get("snapcore.releases._partials")
    if partials is None or not isinstance(data, Mapping) or not data:
        return None
    if not all(isinstance(v, partials.Partial) for v in data.values()):
        return None
    return data


def _partial_sizes(request: ReleaseRequest) -> list[int]:
    """Each key's public n, or :data:`PARTIAL_DEFAULT_N` for a key without one."""
    return [PARTIAL_DEFAULT_N if v is None else v for v in _key_sizes(request)]


def _group_sizes(request: ReleaseRequest) -> list[int] | None:
    """Each key's public n (a cap or a declared size), in key-set order, matched by
    exact value as the release matches them; None when one is missing."""
    per_key = _key_sizes(request)
    return None if any(v is None for v in per_key) else [v for v in per_key if v is not None]


def _key_sizes(request: ReleaseRequest) -> list[int | None]:
    """Each key's public n, in key-set order, or None for a key without one (and for
    every key when the release refuses the keys of ``n=`` or ``group_sizes=``)."""
    keys = request.keys or ()
    sizes = request.group_sizes if request.group_sizes is not None else request.n
    if isinstance(sizes, Mapping):
        try:
            table = {category_key(k): v for k, v in sizes.items()}
            per_key = [table.get(category_key(k)) for k in keys]
        except Exception:  # keys the release refuses (it reports them)
            return [None] * len(keys)
    else:
        per_key = [sizes] * len(keys)
    return [int(v) if isinstance(v, int) and not isinstance(v, bool) else None for v in per_key]


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


def _key(request: ReleaseRequest, n: int, parts: Mapping[Any, Any] | None) -> Hashable | None:
    """What a statistic's quantum depends on: its kind, its public parameters (every
    keyword but the data and the budget, printed), the public n, and for per-key
    partial states ``parts`` the data bounds and options they were computed with."""
    stat = request.statistic
    kind = f"{type(stat).__module__}.{type(stat).__qualname__}:{stat.name}"
    fields = attrs.asdict(request, recurse=False)
    try:
        fields_key = tuple(
            sorted(
                (name, repr(value))
                for name, value in fields.items()
                if name not in ("statistic", "data", "budget")
            )
        )
        states = (
            ()
            if parts is None
            else tuple(sorted({repr((p.data_bounds, p.options)) for p in parts.values()}))
        )
    except Exception:
        return None
    return (kind, fields_key, states, n)


def _statistic_quantum(
    release: Callable[[ReleaseRequest], object], classes: list[ReleaseRequest]
) -> int:
    """The quantum of ``release`` over the request ``classes``, in ns: the statistic
    calibration's reps, margin and spread-derived margin floor."""
    return calibrate_quantum(
        release,
        classes,
        reps=budget_reps(release, classes, STATISTIC_REPS),
        margin=STATISTIC_MARGIN,
        warmup=1,
        min_margin=STATISTIC_MIN_MARGIN,
        spread_quantile=STATISTIC_SPREAD_QUANTILE,
    )


def _calibrate(release: SingleRelease, request: ReleaseRequest, n: int, bounds: Any) -> int:
    """The quantum of ``request``'s statistic at ``n`` records with data bounds
    ``bounds``, in ns: its release of synthetic data of each kind, with a fresh source
    and no budget."""
    stat = request.statistic
    base = _calibration_request(request)
    classes = []
    for kind in _SYNTHETIC_KINDS:
        synthetic, names = _synthetic(n, stat.columns, bounds, request.options, request.data, kind)
        column = request.column
        if names is not None:
            column = names if len(names) > 1 else names[0]
        elif column is not None:  # a table with a named column (the CLI, frames)
            synthetic = {column if isinstance(column, str) else column[0]: synthetic}
        classes.append(attrs.evolve(base, data=synthetic, column=column))

    return _statistic_quantum(release, classes)


def _calibration_request(request: ReleaseRequest) -> ReleaseRequest:
    """``request`` for calibration runs: no budget, padded mechanisms, and a source of
    the same kind that is never the caller's stream (a name, or None, makes each
    release build a fresh source, as the caller's calls do)."""
    source = request.source
    fresh = source if source is None or isinstance(source, str) else calibration_source(source)
    return attrs.evolve(request, source=fresh, budget=None, timing=request.timing or "constant")


def _calibrate_grouped(release: GroupedReleaseFn, request: ReleaseRequest, bounds: Any) -> int:
    """The quantum of a group-by request, in ns: its release of synthetic tables, every
    group full to its public n, one table per kind of :func:`_synthetic`."""
    stat, keys, by = request.statistic, request.keys, request.by
    per_key = _group_sizes(request)
    if keys is None or by is None or per_key is None:
        raise ValueError("a group-by request with a public n for every key")
    total = sum(per_key)
    key_column = np.empty(total, dtype=object)
    at = 0
    for k, size in zip(keys, per_key, strict=True):
        key_column[at : at + size] = [k] * size
        at += size
    base = _calibration_request(request)
    classes = []
    for kind in _SYNTHETIC_KINDS:
        values, names = _synthetic(total, stat.columns, bounds, request.options, None, kind)
        column = request.column
        if names is None:
            name = column if isinstance(column, str) else "value"
            table: dict[str, Any] = {name: values}
            column = name
        else:
            wanted = tuple(column) if isinstance(column, tuple) else names
            table = {w: values[c] for w, c in zip(wanted, names, strict=True)}
            column = wanted if len(wanted) > 1 else wanted[0]
        table[by] = key_column
        classes.append(attrs.evolve(base, data=table, column=column))
    return _statistic_quantum(release, classes)


def _calibrate_grouped_partials(
    release: GroupedReleaseFn, request: ReleaseRequest, parts: Mapping[Any, Any]
) -> int:
    """The quantum of a group-by request of per-key partial states, in ns: its release
    of synthetic partial states of every key of the key set, each of the key's public
    n records (:data:`PARTIAL_DEFAULT_N` without one), one set per kind of
    :func:`_synthetic`, with the data bounds and options of the request's states."""
    from snapcore.releases._partials import Partial

    stat, keys = request.statistic, request.keys
    if keys is None:
        raise ValueError("a group-by request with a key set")
    first = next(iter(parts.values()))
    bounds, options = first.data_bounds, dict(first.options)
    sizes = _partial_sizes(request)
    base = _calibration_request(request)
    classes = []
    for kind in _SYNTHETIC_KINDS:
        states = {}
        for k, size in zip(keys, sizes, strict=True):
            state = _synthetic_state(stat, size, bounds, options, kind)
            states[k] = Partial(
                statistic=stat.name, state=state, data_bounds=bounds, options=first.options
            )
        classes.append(attrs.evolve(base, data=states))
    return _statistic_quantum(release, classes)


def _synthetic_state(stat: Any, n: int, bounds: Any, options: Mapping[str, Any], kind: str) -> Any:
    """The partial state of ``n`` synthetic records of ``kind`` (:func:`_synthetic`):
    a block's state merged with itself by doubling, so that building it takes
    O(log n) merges whatever the public n."""
    from snapcore.data._frames import read_dataset
    from snapcore.plugins._statistic import accumulate

    def block_state(size: int) -> Any:
        values, names = _synthetic(size, stat.columns, bounds, options, None, kind)
        column = None if names is None else list(names)
        ds = read_dataset(values, column=column, columns=stat.columns)
        return accumulate(stat, ds.chunks(), data_bounds=bounds, **options)

    whole, rest = divmod(n, _PARTIAL_BLOCK)
    state = block_state(rest)
    power = block_state(_PARTIAL_BLOCK) if whole else None
    while whole:
        if whole & 1:
            state = stat.merge(state, power)
        whole >>= 1
        if whole:
            power = stat.merge(power, power)
    return state


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
            col = uniform_doubles(lo - w / 2, hi + w / 2, n)
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


_One = TypeVar("_One", bound=Release | RatioRelease | VarianceRatioRelease)


def _note(out: _One, note: str) -> _One:
    return attrs.evolve(out, notes=(*out.notes, note))


def _guaranteed(out: _One, g: TimingGuarantee) -> _One:
    return attrs.evolve(out, timing_guarantee=g)


def _guaranteed_groups(out: GroupedRelease, g: TimingGuarantee) -> GroupedRelease:
    releases = tuple(_guaranteed(r, g) for r in out.releases)
    return out.with_releases(releases, out.epsilon_spent)


def _note_groups(out: GroupedRelease, note: str) -> GroupedRelease:
    releases = tuple(_note(r, note) for r in out.releases)
    return out.with_releases(releases, out.epsilon_spent)
