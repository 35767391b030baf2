"""The conformance checks as plain functions (no pytest needed).

Each ``check_*`` function compares one backend against the independent reference
(:mod:`snapcore.testing.reference`) and raises :class:`~snapcore.errors.ConformanceError` — an
``AssertionError`` whose message ends with a one-line reproduction — at the first
difference.  :mod:`snapcore.testing.conformance` wraps them as a pytest suite, and
:func:`run_conformance` runs a quick selection without pytest (used by
``snapcore compare``).
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Iterable
from fractions import Fraction
from importlib import resources
from typing import Any

import attrs

from snapcore.errors import ConformanceError
from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend
from snapcore.randomness._draw import Draw
from snapcore.randomness._sources import SeededSource
from snapcore.testing.reference import (
    ReferenceBackend,
    ln_nearest,
    ref_add,
    ref_div,
    ref_mul,
    round_nearest,
)

__all__ = [
    "BATCH_VALUES",
    "EXPONENT_LIMIT",
    "OPS",
    "PIPELINE_GRID",
    "PRECISIONS",
    "ConformanceReport",
    "check_batch",
    "check_convert",
    "check_dyadic_roundtrip",
    "check_ln",
    "check_op",
    "check_pipeline",
    "check_scalar",
    "extreme_operands",
    "hard_ln_cases",
    "offers_batch",
    "offers_scalar",
    "pipeline_draws",
    "random_operands",
    "resolve_backend",
    "run_conformance",
    "special_operands",
]

#: The precisions every primitive is checked at.
PRECISIONS = (53, 64, 118, 200, 400)
#: The binary operations, by ``Arithmetic`` method name.
OPS = ("add", "sub", "mul", "div")
#: Values snapcore may use lie in ``[2**-EXPONENT_LIMIT, 2**EXPONENT_LIMIT)`` in magnitude
#: (the contract's exponent range); the extreme checks stay 64 bits inside it.
EXPONENT_LIMIT = 1 << 30

Dyadic = tuple[int, int]


def resolve_backend(backend: Any) -> Backend:
    """A Backend instance from an instance, a Backend subclass or a registered name."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, type) and issubclass(backend, Backend):
        if not backend.is_available():
            from snapcore.errors import BackendUnavailableError

            raise BackendUnavailableError(
                f"backend {backend.name!r} is unavailable; install it with: {backend.install_hint}"
            )
        return backend()
    if isinstance(backend, str):
        from snapcore.plugins._manager import get_registries

        return get_registries().backends.create(backend)
    raise TypeError(f"backend must be a Backend, a Backend subclass or a name, got {backend!r}")


def _fmt(a: Dyadic) -> str:
    return f"({a[0]}, {a[1]})"


def _canon(a: Dyadic, p: int) -> Dyadic:
    """Canonical form (p-bit mantissa) of an exact dyadic, for comparison."""
    return round_nearest(a[0], 1, p, a[1]) if a[0] else (0, 0)


def _result(arith: Arithmetic, x: Any, what: str, repro: str) -> Dyadic:
    try:
        m, e = arith.to_dyadic(x)
    except Exception as exc:  # pragma: no cover - reported as a failure
        raise ConformanceError(f"{what}: to_dyadic failed ({exc!r}); reproduce: {repro}") from exc
    if not isinstance(m, int) or not isinstance(e, int):
        raise ConformanceError(f"{what}: to_dyadic returned non-integers {m!r}, {e!r}")
    return (int(m), int(e))


def _repro(backend_name: str, p: int, expr: str) -> str:
    return f"a = <backend {backend_name!r}>.arithmetic({p}); {expr}"


def check_dyadic_roundtrip(arith: Arithmetic, a: Dyadic, name: str = "?") -> None:
    """``to_dyadic(from_dyadic(a)) == a`` and ``neg`` is exact."""
    p = arith.precision
    expr = f"a.to_dyadic(a.from_dyadic({a[0]}, {a[1]}))"
    got = _canon(_result(arith, arith.from_dyadic(*a), "from_dyadic", expr), p)
    want = _canon(a, p)
    if got != want:
        raise ConformanceError(
            f"[{name}] p={p} from_dyadic/to_dyadic: got {_fmt(got)}, expected {_fmt(want)}; "
            f"reproduce: {_repro(name, p, expr)}"
        )
    neg = _canon(_result(arith, arith.neg(arith.from_dyadic(*a)), "neg", expr), p)
    if neg != (-want[0], want[1]):
        raise ConformanceError(
            f"[{name}] p={p} neg: got {_fmt(neg)}, expected {(-want[0], want[1])}; "
            f"reproduce: {_repro(name, p, f'a.neg(a.from_dyadic({a[0]}, {a[1]}))')}"
        )


def check_op(arith: Arithmetic, op: str, a: Dyadic, b: Dyadic, name: str = "?") -> None:
    """``op`` (add, sub, mul, div) of two p-bit values against the exact reference."""
    p = arith.precision
    if op == "add":
        want = ref_add(a, b, p)
    elif op == "sub":
        want = ref_add(a, (-b[0], b[1]), p)
    elif op == "mul":
        want = ref_mul(a, b, p)
    elif op == "div":
        want = ref_div(a, b, p)
    else:
        raise ValueError(f"unknown op {op!r}")
    want = _canon(want, p)
    expr = f"a.to_dyadic(a.{op}(a.from_dyadic({a[0]}, {a[1]}), a.from_dyadic({b[0]}, {b[1]})))"
    x = getattr(arith, op)(arith.from_dyadic(*a), arith.from_dyadic(*b))
    got = _canon(_result(arith, x, op, expr), p)
    if got != want:
        raise ConformanceError(
            f"[{name}] p={p} {op}: got {_fmt(got)}, expected {_fmt(want)}; "
            f"reproduce: {_repro(name, p, expr)}"
        )


def check_convert(arith: Arithmetic, q: Fraction | int | float, name: str = "?") -> None:
    """``convert(q)`` is the p-bit float nearest the rational ``q``."""
    p = arith.precision
    f = Fraction(q)
    want = round_nearest(f.numerator, f.denominator, p)
    expr = f"a.to_dyadic(a.convert({q!r}))"
    got = _canon(_result(arith, arith.convert(q), "convert", expr), p)
    if got != want:
        raise ConformanceError(
            f"[{name}] p={p} convert: got {_fmt(got)}, expected {_fmt(want)}; "
            f"reproduce: {_repro(name, p, expr)}"
        )


def check_ln(arith: Arithmetic, a: Dyadic, name: str = "?", want: Dyadic | None = None) -> None:
    """``ln(a)`` (``a > 0``) is the p-bit float nearest ``ln(a)``."""
    p = arith.precision
    if want is None:
        want = ln_nearest(a[0], a[1], p)
    want = _canon(want, p)
    expr = f"a.to_dyadic(a.ln(a.from_dyadic({a[0]}, {a[1]})))"
    got = _canon(_result(arith, arith.ln(arith.from_dyadic(*a)), "ln", expr), p)
    if got != want:
        raise ConformanceError(
            f"[{name}] p={p} ln: got {_fmt(got)}, expected {_fmt(want)}; "
            f"reproduce: {_repro(name, p, expr)}"
        )


# -- inputs ---------------------------------------------------------------------------


def random_operands(
    rng: random.Random, p: int, n: int, *, spread: int = 200, positive: bool = False
) -> list[Dyadic]:
    """``n`` random p-bit values with full mantissas and exponents within ``±spread``."""
    out = []
    for _ in range(n):
        m = rng.getrandbits(p - 1) | (1 << (p - 1))
        if not positive and rng.getrandbits(1):
            m = -m
        out.append((m, rng.randrange(-spread, spread + 1) - p))
    return out


def special_operands(p: int) -> list[Dyadic]:
    """Powers of two, the largest and smallest mantissas, and values next to 1."""
    top = (1 << p) - 1
    vals: list[Dyadic] = []
    for e in (-p, 1 - p, 0, 7, -70):
        vals += [(1 << (p - 1), e), (top, e), ((1 << (p - 1)) + 1, e), (1, e), (3, e)]
    vals += [(top, -p), ((1 << (p - 1)) + 1, 1 - p)]  # 1 - 2**-p and 1 + 2**(1-p)
    return vals + [(-m, e) for m, e in vals]


def extreme_operands(p: int) -> list[Dyadic]:
    """Values 64 bits inside each end of the exponent range ``[2**-2**30, 2**2**30)``."""
    hi = EXPONENT_LIMIT - 64 - p
    lo = -EXPONENT_LIMIT + 64
    top = (1 << p) - 1
    return [(top, hi), (1 << (p - 1), hi), (top, lo), (1 << (p - 1), lo), (-top, hi), (-top, lo)]


def hard_ln_cases(p: int | None = None) -> list[tuple[Dyadic, Dyadic, float, str]]:
    """The committed hard-to-round LN inputs: ``(input, expected, log2_distance, family)``."""
    return [(c[1], c[2], c[3], c[4]) for c in _load_hard_cases() if p is None or c[0] == p]


@functools.cache
def _load_hard_cases() -> tuple[tuple[int, Dyadic, Dyadic, float, str], ...]:
    text = resources.files("snapcore.testing").joinpath("data/hard_ln.json").read_text()
    data = json.loads(text)
    if data.get("format") != "snapcore-hard-ln-v1":
        raise ValueError("hard_ln.json: unknown format")
    return tuple(
        (
            c["p"],
            (int(c["m"], 16), c["e"]),
            (int(c["ln_m"], 16), c["ln_e"]),
            float(c["log2_distance"]),
            c["family"],
        )
        for c in data["cases"]
    )


# -- the whole pipeline ---------------------------------------------------------------

#: Parameter sets for the pipeline comparison: (id, SnappingMechanism keyword arguments).
PIPELINE_GRID: tuple[tuple[str, dict[str, Any]], ...] = (
    ("symmetric", {"epsilon": 1.0, "clamp_bound": 10.0}),
    ("asymmetric", {"epsilon": 0.5, "clamp_bounds": (-3.5, 100.25)}),
    ("sensitivity", {"epsilon": 2.0, "clamp_bounds": (0.0, 1000.0), "sensitivity": 3.7}),
    ("tiny-epsilon", {"epsilon": 1e-40, "clamp_bound": 1e42, "sensitivity": 0.5}),
    ("large-epsilon", {"epsilon": 40.0, "clamp_bounds": (-1.0, 1.0), "sensitivity": 0.01}),
    ("precision-200", {"epsilon": 1.0, "clamp_bounds": (-5.0, 5.0), "precision": 200}),
)


def pipeline_values(kwargs: dict[str, Any], seed: int = 0) -> list[float]:
    """Values inside, at and outside the bounds, and at the centre."""
    if "clamp_bounds" in kwargs:
        lo, hi = kwargs["clamp_bounds"]
    else:
        lo, hi = -kwargs["clamp_bound"], kwargs["clamp_bound"]
    width = hi - lo
    rng = random.Random(seed)
    vals = [lo, hi, (lo + hi) / 2, lo - width, hi + width, lo - 1e300, hi + 1e300, 0.0]
    vals += [rng.uniform(lo - width / 4, hi + width / 4) for _ in range(40)]
    return vals


def pipeline_draws(p: int, n: int, seed: int = 0) -> list[Draw]:
    """``n`` draws: U* near 1 and deep in the tail first, then seeded random draws."""
    half = 1 << (p - 1)
    special = []
    for k in range(8):
        special.append(Draw(sign=1, mantissa=(1 << p) - 1 - k, exponent=-p))  # 1 - (k+1)/2**p
        special.append(Draw(sign=-1, mantissa=(1 << p) - 1 - k, exponent=-p))
    for t in (64, 1000, 20000):
        special.append(Draw(sign=1, mantissa=half, exponent=-p - t))  # 2**-(t+1)
        special.append(Draw(sign=-1, mantissa=(1 << p) - 1, exponent=-p - t))
    rest = SeededSource(seed).draws(max(0, n - len(special)), p)
    return (special + rest)[:n]


@functools.lru_cache(maxsize=32)
def _reference_outputs(case: str, n: int, seed: int) -> tuple[float, ...]:
    kwargs = dict(PIPELINE_GRID)[case]
    return tuple(_transform_all(ReferenceBackend(), kwargs, n, seed))


def _transform_all(backend: Backend, kwargs: dict[str, Any], n: int, seed: int) -> list[float]:
    from snapcore.mechanism._mechanism import SnappingMechanism

    mech = SnappingMechanism(**kwargs, backend=backend, source=SeededSource(seed))
    vals = pipeline_values(kwargs, seed)
    nv = len(vals)
    return [
        mech.transform(vals[i % nv], d.u, d.sign)
        for i, d in enumerate(pipeline_draws(mech.precision, n, seed))
    ]


@functools.lru_cache(maxsize=32)
def _reference_stages(case: str, n: int, seed: int) -> tuple[tuple[Any, ...], ...]:
    return tuple(_stages_all(ReferenceBackend(), dict(PIPELINE_GRID)[case], n, seed))


def _stages_all(
    backend: Backend, kwargs: dict[str, Any], n: int, seed: int
) -> list[tuple[Any, ...]]:
    """``(noise, y, k, z)`` of every draw, exact and canonical."""
    from snapcore.calibration._params import calibrate
    from snapcore.pipeline._stages import Pipeline

    cal = calibrate(**kwargs)
    pipe = Pipeline(cal, backend.arithmetic(cal.precision))
    p = cal.precision
    vals = pipeline_values(kwargs, seed)
    out = []
    for i, d in enumerate(pipeline_draws(p, n, seed)):
        st = pipe.stages(Fraction(vals[i % len(vals)]), d)
        out.append((_canon(st["noise"], p), _canon(st["y"], p), st["k"], st["z"]))  # type: ignore[arg-type]
    return out


def offers_batch(backend: Backend) -> bool:
    """Whether ``backend`` overrides :meth:`~snapcore.Backend.batch` (the optional capability)."""
    return type(backend).batch is not Backend.batch


def check_batch(
    backend: Backend, case: str, n: int, seed: int = 0, name: str = "?", padded: bool = False
) -> bool:
    """``backend.batch`` agrees bit for bit with the element-wise pipeline, or declines
    (with ``padded``, ``backend.batch_padded`` with an exact floor of 3).

    The element-wise reference runs the pipeline of ``backend`` itself on the draws
    ``SeededSource(seed).draws_raw(n, p)``; ``batch`` gets the same values (a float64
    array) and a fresh ``SeededSource(seed)``.  A batch that declines (returns None)
    must not have drawn anything.  Returns whether the batch answered.
    """
    import numpy as np

    from snapcore.calibration._params import calibrate
    from snapcore.pipeline._stages import Pipeline

    kwargs = dict(PIPELINE_GRID)[case]
    cal = calibrate(**kwargs)
    p = cal.precision
    pipe = Pipeline(cal, backend.arithmetic(p))
    vals = pipeline_values(kwargs, seed)
    arr = np.array([vals[i % len(vals)] for i in range(n)], dtype=np.float64)
    src = SeededSource(seed)
    got = backend.batch_padded(pipe, arr, src, 3) if padded else backend.batch(pipe, arr, src)
    if got is None:
        nxt = src.draw_raw(p)
        if nxt != SeededSource(seed).draw_raw(p):
            raise ConformanceError(
                f"[{name}] batch {case}: declined (returned None) after drawing from the source"
            )
        return False
    want = pipe.run_many(
        [pipe.centre(Fraction(v)) for v in arr.tolist()], SeededSource(seed).draws_raw(n, p)
    )
    got_a = np.asarray(got)
    if got_a.shape != arr.shape or got_a.dtype != np.float64:
        raise ConformanceError(
            f"[{name}] batch {case}: returned shape {got_a.shape} dtype {got_a.dtype}, "
            f"expected {arr.shape} float64"
        )
    bits_got = got_a.view(np.uint64).tolist()
    bits_want = np.array(want, dtype=np.float64).view(np.uint64).tolist()
    bad = [i for i, (g, w) in enumerate(zip(bits_got, bits_want, strict=True)) if g != w]
    if bad:
        i = bad[0]
        raise ConformanceError(
            f"[{name}] batch {case}: {len(bad)} of {n} outputs differ from the element-wise "
            f"pipeline; first at {i}: got {got_a[i]!r}, expected {want[i]!r} for value "
            f"{arr[i]!r}; reproduce: check_batch(backend, {case!r}, {n}, {seed})"
        )
    return True


def offers_scalar(backend: Backend) -> bool:
    """Whether ``backend`` overrides :meth:`~snapcore.Backend.scalar_padded` (the optional
    capability)."""
    return type(backend).scalar_padded is not Backend.scalar_padded


def check_scalar(
    backend: Backend, case: str, n: int, seed: int = 0, name: str = "?", padded: bool = False
) -> bool:
    """``backend.scalar`` agrees bit for bit with the pipeline, draw for draw, or declines.

    With ``padded``, the same for ``backend.scalar_padded`` (the release a mechanism
    padded to a time quantum uses).

    The reference runs the pipeline of ``backend`` on ``SeededSource(seed).draws_raw(n,
    p)``; the fused release gets the same values one by one and a fresh
    ``SeededSource(seed)``, and must then be at the same place in the stream.  Returns
    whether the backend answered.
    """
    from snapcore.calibration._params import calibrate
    from snapcore.pipeline._stages import Pipeline

    kwargs = dict(PIPELINE_GRID)[case]
    cal = calibrate(**kwargs)
    p = cal.precision
    pipe = Pipeline(cal, backend.arithmetic(p))
    vals = [float(v) for v in pipeline_values(kwargs, seed)]
    vals = [vals[i % len(vals)] for i in range(n)]
    src = SeededSource(seed)
    fused = (backend.scalar_padded if padded else backend.scalar)(pipe, src)
    if fused is None:
        return False
    ref = SeededSource(seed)
    for i, v in enumerate(vals):
        got = fused(v)
        want = pipe.run(pipe.centre_ratio(*v.as_integer_ratio()), ref.draw_raw(p))
        if math.copysign(1.0, got) != math.copysign(1.0, want) or got != want:
            raise ConformanceError(
                f"[{name}] scalar {case}: release {i} of value {v!r} gave {got!r}, the "
                f"pipeline {want!r}; reproduce: check_scalar(backend, {case!r}, {n}, {seed}, "
                f"padded={padded})"
            )
    if src.draw_raw(p) != ref.draw_raw(p):
        raise ConformanceError(f"[{name}] scalar {case}: drew more or less than one draw each")
    return True


#: Values per case in the batch check (above the built-in fast path's threshold).
BATCH_VALUES = 1500

#: Draws whose intermediate values (noise, y, k, z) are compared as well.
STAGE_DRAWS = 2000


def check_pipeline(backend: Backend, case: str, n: int, seed: int = 0, name: str = "?") -> None:
    """``transform`` on ``backend`` equals the reference's, bit for bit, on ``n`` draws.

    On the first ``STAGE_DRAWS`` draws the exact intermediates — the noise
    ``N``, the sum ``y``, the snapped ``k`` and the clamped ``z′`` — must match too,
    which a wrong last bit of ``N`` or ``y`` cannot pass (snapping hides most of them
    from the output).
    """
    kwargs = dict(PIPELINE_GRID)[case]
    m = min(n, STAGE_DRAWS)
    want_st = _reference_stages(case, m, seed)
    got_st = _stages_all(backend, kwargs, m, seed)
    for i, (g, w) in enumerate(zip(got_st, want_st, strict=True)):
        if g != w:
            raise ConformanceError(
                f"[{name}] pipeline {case}: draw {i}: stages (noise, y, k, z) got {g}, "
                f"expected {w}; reproduce: snapcore.pipeline._stages.Pipeline("
                f"calibrate(**{kwargs!r}), "
                f"backend.arithmetic(p)).stages(value, pipeline_draws(p, {m}, {seed})[{i}])"
            )
    want = _reference_outputs(case, n, seed)
    got = _transform_all(backend, kwargs, n, seed)
    bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    if bad:
        from snapcore.mechanism._mechanism import SnappingMechanism

        i = bad[0]
        p = SnappingMechanism(**kwargs, backend=backend).precision
        d = pipeline_draws(p, n, seed)[i]
        v = pipeline_values(kwargs, seed)[i % len(pipeline_values(kwargs, seed))]
        raise ConformanceError(
            f"[{name}] pipeline {case}: {len(bad)} of {n} outputs differ from the reference; "
            f"first: got {got[i]!r}, expected {want[i]!r}; reproduce: "
            f"SnappingMechanism(**{kwargs!r}, backend={name!r}).transform({v!r}, "
            f"Fraction({d.mantissa}, 2**{-d.exponent}), {d.sign})"
        )


# -- a quick run without pytest -------------------------------------------------------


@attrs.frozen(kw_only=True)
class ConformanceReport:
    """Outcome of :func:`run_conformance`: the checks run and the failures."""

    backend: str
    checks: int
    failures: tuple[str, ...]
    description: str

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return not self.failures

    def summary(self) -> str:
        """``"pass (N checks)"`` or ``"FAIL (k of N): first failure"``."""
        if self.passed:
            return f"pass ({self.checks} checks)"
        return f"FAIL ({len(self.failures)} of {self.checks}): {self.failures[0]}"


QUICK_DESCRIPTION = (
    "at p = 53, 118, 400: 50 random operand pairs per operation (add, sub, mul, div) and "
    "50 random conversions and LNs, powers of two and extreme exponents, and every "
    "committed hard-to-round LN case at those precisions; then 2,000 draws of transform "
    "on two parameter sets, bit-identical to the reference"
)


def run_conformance(backend: Any, *, quick: bool = True, seed: int = 1) -> ConformanceReport:
    """Run a selection of the checks without pytest and collect the failures.

    Parameters
    ----------
    backend : Backend, Backend subclass or str
        The backend to check.
    quick : bool
        The quick selection (see ``QUICK_DESCRIPTION``); ``False`` runs all
        precisions with 10 times more random inputs and 10,000 pipeline draws.
    seed : int
        Seed of the random inputs.
    """
    be = resolve_backend(backend)
    name = be.name
    rng = random.Random(seed)
    precisions = (53, 118, 400) if quick else PRECISIONS
    n = 50 if quick else 500
    draws = 2000 if quick else 10_000
    cases = PIPELINE_GRID[:2] if quick else PIPELINE_GRID
    failures: list[str] = []
    count = 0

    def run(fn: Any, *args: Any) -> None:
        nonlocal count
        count += 1
        try:
            fn(*args)
        except AssertionError as exc:
            failures.append(str(exc))
        except Exception as exc:
            failures.append(f"[{name}] {fn.__name__}{args[1:]!r} raised {exc!r}")

    for p in precisions:
        arith = be.arithmetic(p)
        xs = random_operands(rng, p, n) + special_operands(p)
        ys = random_operands(rng, p, n) + special_operands(p)[::-1]
        for a in xs + extreme_operands(p):
            run(check_dyadic_roundtrip, arith, a, name)
        for op in OPS:
            for a, b in zip(xs, ys, strict=False):
                if op == "div" and b[0] == 0:
                    continue
                run(check_op, arith, op, a, b, name)
        for q in _random_fractions(rng, n):
            run(check_convert, arith, q, name)
        for a in random_operands(rng, p, n, positive=True) + [
            (m, e) for m, e in special_operands(p) + extreme_operands(p) if m > 0
        ]:
            run(check_ln, arith, a, name)
        for a, want, _, _ in hard_ln_cases(p):
            run(check_ln, arith, a, name, want)
    for case, _ in cases:
        run(check_pipeline, be, case, draws, seed, name)
        if offers_batch(be):
            run(check_batch, be, case, BATCH_VALUES, seed, name)
        if offers_scalar(be):
            run(check_scalar, be, case, STAGE_DRAWS // 4, seed, name)
    return ConformanceReport(
        backend=name,
        checks=count,
        failures=tuple(failures),
        description=QUICK_DESCRIPTION if quick else "the full non-hypothesis selection",
    )


def _random_fractions(rng: random.Random, n: int) -> Iterable[Fraction | int | float]:
    for i in range(n):
        k = i % 3
        if k == 0:
            yield Fraction(rng.getrandbits(300) - (1 << 299), rng.getrandbits(200) | 1)
        elif k == 1:
            yield rng.uniform(-1e10, 1e10) * 2.0 ** rng.randrange(-300, 300)
        else:
            yield rng.getrandbits(500) - (1 << 499)
