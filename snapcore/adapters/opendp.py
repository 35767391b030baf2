"""snapcore releases as OpenDP measurements (``pip install snapcore[opendp]``).

Two kinds of constructor, both built with OpenDP's ``make_user_measurement`` under
the ``max_divergence`` (pure ε-DP) measure, so they compose with OpenDP's
compositors, privacy filters and odometers, and convert with
``make_pureDP_to_zCDP``:

* :func:`make_snapping` / :func:`then_snapping`: the scalar snapping mechanism on
  ``atom_domain`` under ``absolute_distance``, to chain after an OpenDP
  transformation (``(domain, metric) >> ... >> then_snapping(...)``);
* :func:`make_statistic` / :func:`then_statistic`: a whole snapcore statistic
  (``count``, ``sum``, ``mean``, ``variance``, ``histogram``, a plugin's) on
  ``vector_domain(atom_domain(...))``, or one that reads k >= 2 columns per record
  (``covariance``) on OpenDP's records of k numbers,
  ``dp.numpy.array2_domain(num_columns=k, nan=False, T=float)``, under
  ``change_one_distance`` (snapcore's ``replace`` relation) or ``symmetric_distance``
  (``add-remove``).  The statistic is computed exactly inside snapcore; prefer
  this to chaining OpenDP's float ``then_sum`` into :func:`then_snapping`, whose
  stability map carries rounding slack (for Δ = 100 it reports
  ``100.00000000000148``, which crosses the next multiple of Δ and so costs 2ε
  under the map below).

**The privacy maps are correct for every d_in, by group privacy.**  ``d_in`` is in
the input metric's units, not snapcore's Δ:

* scalar: inputs at absolute distance ``d_in`` are joined by ``k = ⌈d_in/Δ⌉`` steps
  of at most Δ (the mechanism is defined on every real, so each step is a valid
  input), and pure DP composes along the chain: ``map(d_in) = k·ε``;
* statistic: ``d_in`` counts changed records (``change_one_distance``) or added
  and removed records (``symmetric_distance``; one replaced record is ``d_in = 2``
  there); a chain of ``d_in`` single-record neighbours gives ``map(d_in) = d_in·ε``.
  Under ``symmetric_distance`` the chain removes before it adds, so every dataset
  on it respects the public cap ``n``.

Every map works in exact rationals and rounds ε **up** to a double.  A ``d_in``
that is negative, NaN or infinite, or whose ε would overflow, is refused.

The constructors refuse domains and metrics they cannot honour: floats must come
from a domain without NaN (``atom_domain(T=float, nan=False)``, ``array2_domain(...,
nan=False)``; OpenDP's float transformations produce such domains), records must
have the statistic's number of columns, and the metric must be one named above
whose relation the statistic supports (``covariance`` is ``replace`` only).

**Budgets.**  OpenDP's compositors, privacy filters and odometers keep their budget
in process memory; they check a query's privacy map before invoking it and count the
query once the measurement returns (OpenDP 0.16: a measurement that raises is not
counted).  A snapcore release refuses bad input before drawing anything, so only a
draw that fails part way (a failing source) is affected.  For ε taken durably before
any noise, pass ``budget=`` to :func:`make_statistic` (for instance
:meth:`snapcore.Budget.from_ledger`): each invocation reserves its ε there before
drawing, and building the measurement charges nothing.  Not behind a privacy
filter, which invokes a measurement before it refuses it (docs/embedding.md).

The OpenDP features ``contrib`` and ``honest-but-curious`` are enabled when this
module is imported: the second is OpenDP's acknowledgement that a user
measurement's privacy claim is the author's (here, snapcore's and this module's),
not OpenDP's.

>>> import opendp.prelude as dp
>>> from snapcore.adapters.opendp import then_snapping
>>> from snapcore import SeededSource
>>> m = (dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)) >> then_snapping(
...     epsilon=0.5, sensitivity=1, clamp_bounds=(-10, 10), source=SeededSource(1))
>>> m.map(1.0), m.map(2.5)
(0.5, 1.5)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

import numpy as np

try:
    import opendp.prelude as dp
    from opendp.extras.numpy import NPArray2Domain
    from opendp.mod import Domain, Measurement, Metric, _PartialConstructor
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        'snapcore.adapters.opendp needs OpenDP 0.16: pip install "snapcore[opendp]"'
    ) from exc

from snapcore.analysis._accounting import ReleaseCurve
from snapcore.calibration._params import check_real
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError
from snapcore.exact._ieee754 import round_down_double, round_up_double
from snapcore.mechanism._mechanism import SnappingMechanism
from snapcore.pipeline._backend import Backend
from snapcore.plugins._manager import get_registries
from snapcore.plugins._statistic import Statistic
from snapcore.randomness._sources import RandomSource
from snapcore.releases._api import release as _release
from snapcore.releases._budget import Budget

__all__ = [
    "make_snapping",
    "make_snapping_approx",
    "make_statistic",
    "then_snapping",
    "then_statistic",
]

dp.enable_features("contrib", "honest-but-curious")

_FLOAT_TYPES = ("f64", "f32")
_INT_TYPES = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128")
_METRIC_RELATION = {
    "ChangeOneDistance": Neighbouring.REPLACE,
    "SymmetricDistance": Neighbouring.ADD_REMOVE,
}


def _epsilon_double(q: Fraction) -> float:
    """A privacy map's ε as the least double >= ``q`` (never understated).

    Raises
    ------
    ParameterError
        If ``q`` exceeds the largest double.
    """
    f = round_up_double(q)
    if not math.isfinite(f):
        raise ParameterError(
            f"epsilon of about 2**{q.numerator.bit_length() - q.denominator.bit_length()} "
            "does not fit a double"
        )
    return f


def _d_in(d_in: Any) -> Fraction:
    d = check_real("d_in", d_in)
    if d < 0:
        raise ParameterError(f"d_in must be >= 0, got {d_in!r}")
    return d


def _atom_type(domain: Domain, what: str) -> str:
    """The element type of an ``atom_domain``, refusing NaN-admitting float domains."""
    kind = str(domain.type)
    if not (kind.startswith("AtomDomain<") and kind.endswith(">")):
        raise ParameterError(
            f"{what} must be an OpenDP atom_domain of numbers, got {domain!r} ({kind})"
        )
    t = kind[len("AtomDomain<") : -1]
    if t in _FLOAT_TYPES:
        if bool(getattr(domain, "nan", True)):
            raise ParameterError(
                f"{what} {domain!r} admits NaN; snapcore refuses NaN, so use "
                "atom_domain(T=float, nan=False) (or a transformation that outputs it)"
            )
    elif t not in _INT_TYPES:
        raise ParameterError(f"{what} must hold floats or integers, got {domain!r}")
    return t


def _scalar_mechanism(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: Any,
    sensitivity: Any,
    clamp_bounds: Any,
    backend: str | Backend,
    source: str | RandomSource | None,
    precision: int | None,
) -> SnappingMechanism:
    """The mechanism of :func:`make_snapping`, after the domain and metric checks."""
    t = _atom_type(input_domain, "input_domain")
    if str(input_metric.type) != f"AbsoluteDistance<{t}>":
        raise ParameterError(
            f"input_metric must be absolute_distance(T={t}) for {input_domain!r}, "
            f"got {input_metric!r}"
        )
    return SnappingMechanism(
        epsilon=epsilon,
        sensitivity=sensitivity,
        clamp_bounds=clamp_bounds,
        backend=backend,
        source=source,
        precision=precision,
    )


def _scalar_function(mech: SnappingMechanism) -> Callable[[Any], float]:
    """The measurement's function: one release of ``mech``, as a float."""

    def function(x: Any) -> float:
        return float(mech.release(x))

    return function


def make_snapping(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: Any,
    sensitivity: Any,
    clamp_bounds: Any,
    *,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    precision: int | None = None,
) -> Measurement:
    """The scalar snapping mechanism as an OpenDP measurement.

    Parameters
    ----------
    input_domain : Domain
        ``atom_domain`` of floats (without NaN) or integers.
    input_metric : Metric
        ``absolute_distance`` of the domain's type.
    epsilon : real
        ε for inputs at absolute distance at most ``sensitivity``.
    sensitivity : real
        Δ > 0 in the input metric's units.
    clamp_bounds : (lower, upper)
        The clamp interval; outputs lie in it.
    backend, source, precision
        As for :class:`~snapcore.SnappingMechanism`.

    Returns
    -------
    Measurement
        Under ``max_divergence``, with ``map(d_in) = ε·⌈d_in/Δ⌉`` rounded up.

    Raises
    ------
    ParameterError
        On a domain or metric it cannot honour, or invalid parameters.
    """
    mech = _scalar_mechanism(
        input_domain, input_metric, epsilon, sensitivity, clamp_bounds, backend, source, precision
    )
    eps, delta = mech.epsilon, mech.sensitivity

    def privacy_map(d_in: Any) -> float:
        d = _d_in(d_in)
        return _epsilon_double(eps * math.ceil(d / delta))

    return dp.m.make_user_measurement(
        input_domain,
        input_metric,
        dp.max_divergence(),
        function=_scalar_function(mech),
        privacy_map=privacy_map,
        TO="f64",
    )


def make_snapping_approx(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: Any,
    sensitivity: Any,
    clamp_bounds: Any,
    delta: Any,
    *,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    precision: int | None = None,
) -> Measurement:
    """The scalar snapping mechanism as an OpenDP ``(ε, δ)`` measurement.

    The same mechanism and parameters as :func:`make_snapping`, under
    ``approximate(max_divergence)``: ``map(d_in) = (ε_k(δ), δ)``, where ``ε_k(δ)`` is
    the ε at ``delta`` of the certified curve of the implemented mechanism for inputs
    ``k = ⌈d_in/Δ⌉`` steps apart (the Laplace profile of ``k·ε`` with the rounding
    slack; docs/budgets.md), an upper bound for every pair at that distance.
    OpenDP's compositors compose it as approximate DP.

    Returns
    -------
    Measurement
        Under ``approximate(max_divergence)``.
    """
    mech = _scalar_mechanism(
        input_domain, input_metric, epsilon, sensitivity, clamp_bounds, backend, source, precision
    )
    eps, step = mech.epsilon, mech.sensitivity
    d = check_real("delta", delta, positive=True)
    if not d < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}", parameter="delta")
    d_float = round_down_double(d)

    def privacy_map(d_in: Any) -> tuple[float, float]:
        k = math.ceil(_d_in(d_in) / step)
        if k == 0:
            return 0.0, 0.0
        return ReleaseCurve("snapping", eps * k).epsilon_for_delta(d_float), d_float

    return dp.m.make_user_measurement(
        input_domain,
        input_metric,
        dp.approximate(dp.max_divergence()),
        function=_scalar_function(mech),
        privacy_map=privacy_map,
        TO="f64",
    )


def then_snapping(
    epsilon: Any,
    sensitivity: Any,
    clamp_bounds: Any,
    *,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    precision: int | None = None,
) -> Any:
    """Partial constructor of :func:`make_snapping`, for ``>>`` chains."""

    def build(input_domain: Domain, input_metric: Metric) -> Measurement:
        return make_snapping(
            input_domain,
            input_metric,
            epsilon,
            sensitivity,
            clamp_bounds,
            backend=backend,
            source=source,
            precision=precision,
        )

    return cast(Any, _PartialConstructor)(build)


def _statistic(statistic: str | Statistic) -> Statistic:
    if isinstance(statistic, Statistic):
        return statistic
    if isinstance(statistic, str):
        st: Statistic = get_registries().statistics.get(statistic)
        return st
    raise ParameterError(f"statistic must be a statistic name or a Statistic, got {statistic!r}")


def make_statistic(
    input_domain: Domain,
    input_metric: Metric,
    statistic: str | Statistic,
    epsilon: Any,
    *,
    data_bounds: Any = None,
    n: int | None = None,
    gamma: Any = None,
    clamp_bounds: Any = None,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    precision: int | None = None,
    **options: Any,
) -> Measurement:
    """A whole snapcore statistic as an OpenDP measurement on a dataset of records.

    Parameters
    ----------
    input_domain : Domain
        For a single-column statistic, ``vector_domain(atom_domain(...))`` of floats
        (without NaN) or integers: its ``size``, if set, is the public n; its element
        bounds, if set, are the data bounds when the statistic needs them and
        ``data_bounds`` is not given.  For a statistic of k >= 2 columns
        (``covariance``: k = 2), OpenDP's records of k numbers,
        ``dp.numpy.array2_domain(num_columns=k, nan=False, T=float)`` (or an integer
        ``T``): its ``size``, if set, is the public n; its row-norm bound, if set
        (``norm``, ``p``, ``origin``), gives the data bounds ``origin_j ± norm`` of
        column j when ``data_bounds`` is not given (a row in the norm ball has every
        coordinate in that box).  The measurement is invoked on a 2-D NumPy array of
        shape (n, k), as OpenDP's own array transformations are.
    input_metric : Metric
        ``change_one_distance()`` (snapcore's ``replace``) or ``symmetric_distance()``
        (``add-remove``; needs a public cap ``n`` or a sized domain).
    statistic : str or Statistic
        A snapcore statistic (``count``, ``sum``, ``mean``, ``variance``,
        ``covariance``, ``histogram``, or a plugin's).
    epsilon : real
        The ε of one release, for neighbours at distance 1.
    data_bounds, n, gamma, clamp_bounds, backend, source, precision, **options
        As for :func:`snapcore.release` (``covariance``: ``data_bounds=((a, b), (c, d))``).

    Returns
    -------
    Measurement
        Under ``max_divergence``, with ``map(d_in) = d_in·ε`` rounded up; it returns
        a float, or a list of floats for a vector statistic (a histogram).

    Raises
    ------
    ParameterError
        On a domain, metric or statistic it cannot honour (a domain whose records do
        not have the statistic's number of columns, a metric whose relation the
        statistic does not support), or invalid parameters.
    """
    stat = _statistic(statistic)
    if stat.columns > 1:
        size, domain_bounds = _records_domain(input_domain, stat)
    else:
        size, domain_bounds = _vector_domain(input_domain, stat)
    relation = _METRIC_RELATION.get(str(input_metric.type))
    if relation is None:
        raise ParameterError(
            "input_metric must be change_one_distance() (replace) or symmetric_distance() "
            f"(add-remove), got {input_metric!r}"
        )
    if relation not in stat.relations:
        raise ParameterError(
            f"statistic {stat.name!r} supports relation {[r.value for r in stat.relations]}, "
            f"not {relation.value!r} ({input_metric!r})"
        )
    if n is None:
        n = size
    elif size is not None and n != size:
        raise ParameterError(f"n = {n!r} differs from the domain's size {size}")
    if data_bounds is None and stat.needs_data_bounds:
        data_bounds = domain_bounds
    eps = check_real("epsilon", epsilon, positive=True)
    kwargs: dict[str, Any] = {
        "epsilon": eps,
        "data_bounds": data_bounds,
        "n": n,
        "gamma": gamma,
        "clamp_bounds": clamp_bounds,
        "relation": relation,
        "backend": backend,
        "source": source,
        "precision": precision,
        **options,
    }
    # Check every parameter now, on a public stand-in dataset, without drawing noise:
    # a bad parameter must fail at construction, not inside an OpenDP invocation.
    _check_parameters(stat, kwargs)

    def privacy_map(d_in: Any) -> float:
        d = _d_in(d_in)
        if d.denominator != 1:
            raise ParameterError(f"d_in must be a whole number of records, got {d_in!r}")
        return _epsilon_double(eps * d)

    api = _api_kwargs(kwargs)
    columns = stat.columns

    def function(data: Any) -> Any:
        # A 2-D array of shape (n, k) is read column by column, exactly; any other
        # shape is refused by the release, before noise is drawn.
        # A list (what OpenDP passes) is not copied: a copy would take a time that
        # grows with the record count, outside the release's padding.
        rows = data if columns > 1 or isinstance(data, list) else list(data)
        r = _release(stat, rows, **api)
        return list(r.value) if isinstance(r.value, tuple) else r.value

    return dp.m.make_user_measurement(
        input_domain,
        input_metric,
        dp.max_divergence(),
        function=function,
        privacy_map=privacy_map,
        TO="ExtrinsicObject",
    )


def _vector_domain(input_domain: Domain, stat: Statistic) -> tuple[int | None, Any]:
    """The public size and element bounds of a ``vector_domain(atom_domain(...))``."""
    kind = str(input_domain.type)
    if not kind.startswith("VectorDomain<"):
        raise ParameterError(
            f"statistic {stat.name!r} needs input_domain = an OpenDP "
            f"vector_domain(atom_domain(...)), got {input_domain!r}"
        )
    _atom_type(input_domain.element_domain, "input_domain's element domain")
    return input_domain.size, input_domain.element_domain.bounds


def _records_domain(input_domain: Domain, stat: Statistic) -> tuple[int | None, Any]:
    """The public size, and the data bounds implied by the row-norm bound, of an
    ``array2_domain`` whose records have the statistic's ``k`` columns."""
    k = stat.columns
    want = f"dp.numpy.array2_domain(num_columns={k}, nan=False, T=float)"
    desc = getattr(input_domain, "descriptor", None) if _is_extrinsic(input_domain) else None
    if not isinstance(desc, NPArray2Domain):
        raise ParameterError(
            f"statistic {stat.name!r} reads {k} columns per record and needs input_domain "
            f"= {want}, got {input_domain!r}"
        )
    if desc.num_columns != k:
        raise ParameterError(
            f"statistic {stat.name!r} reads {k} columns per record; input_domain has "
            f"num_columns={desc.num_columns} ({input_domain!r}); use {want}"
        )
    t = str(desc.T)
    if t in _FLOAT_TYPES:
        if desc.nan:
            raise ParameterError(
                f"input_domain {input_domain!r} admits NaN; snapcore refuses NaN, so use {want}"
            )
    elif t not in _INT_TYPES:
        raise ParameterError(f"input_domain must hold floats or integers, got {input_domain!r}")
    bounds = None
    if desc.norm is not None:
        # ||x - o||_p <= norm implies |x_j - o_j| <= norm for every j (p = 1 or 2).
        radius = Fraction(float(desc.norm))
        centre = np.zeros(k) if desc.origin is None else desc.origin
        origin = [Fraction(float(o)) for o in np.broadcast_to(centre, (k,))]
        bounds = tuple((o - radius, o + radius) for o in origin)
    return desc.size, bounds


def _is_extrinsic(domain: Domain) -> bool:
    return str(domain.type).startswith("ExtrinsicDomain")


def _api_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    if out["gamma"] is None:
        del out["gamma"]
    return out


def _check_parameters(stat: Statistic, kwargs: dict[str, Any]) -> None:
    """Run the release's checks on public data with a source that refuses to draw."""
    probe = _api_kwargs(kwargs)  # a copy
    probe["source"] = _NoDraws()
    if isinstance(probe.get("budget"), Budget):
        probe["budget"] = None  # the probe releases nothing: it must charge nothing
    record: Any = _stand_in_record(stat, probe["data_bounds"])
    n = probe["n"]
    if n is None:
        size = 2
    elif probe["relation"] is Neighbouring.REPLACE:
        size = n if isinstance(n, int) and 0 <= n <= 10**6 else 2
    else:
        size = min(n, 2) if isinstance(n, int) and n >= 0 else 2
    if probe["relation"] is Neighbouring.REPLACE and isinstance(n, int) and size != n:
        probe["n"] = None
    with contextlib.suppress(_Probed):
        _release(stat, [record] * size, **probe)


def _stand_in_record(stat: Statistic, bounds: Any) -> Any:
    """A public record inside the data bounds (their lower ends), or zeros when the
    bounds are missing or malformed (the release then refuses them)."""

    def lower(pair: Any) -> Any:
        ok = hasattr(pair, "__len__") and not isinstance(pair, str) and len(pair) == 2
        return pair[0] if ok else 0

    if stat.columns > 1:
        pairs = bounds if hasattr(bounds, "__len__") and len(bounds) == stat.columns else ()
        return [lower(pairs[j]) if pairs else 0 for j in range(stat.columns)]
    return 0 if bounds is None else lower(bounds)


class _Probed(Exception):
    pass


class _NoDraws(RandomSource):
    name = "no-draws"

    def draw(self, precision: int) -> Any:
        raise _Probed


def then_statistic(statistic: str | Statistic, epsilon: Any, **kwargs: Any) -> Any:
    """Partial constructor of :func:`make_statistic`, for ``>>`` chains."""

    def build(input_domain: Domain, input_metric: Metric) -> Measurement:
        return make_statistic(input_domain, input_metric, statistic, epsilon, **kwargs)

    return cast(Any, _PartialConstructor)(build)
