"""The mpmath and arb backends beyond the conformance suite: registration, missing
libraries, no global state, threads; and self-tests of the suite's reference."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
import threading
from fractions import Fraction
from pathlib import Path

import flint
import gmpy2
import mpmath
import pluggy
import pytest
import tomllib

from snapcore.errors import BackendUnavailableError
from snapcore.exact._dyadic import round_ratio
from snapcore.plugins import _hookspecs as hookspecs
from snapcore.plugins._manager import BUILTIN_PLUGINS, Registries, get_registries
from snapcore.testing.checks import hard_ln_cases
from snapcore.testing.reference import (
    ln_enclosure,
    ln_midpoint_distance,
    ln_nearest,
    round_nearest,
)

ROOT = Path(__file__).resolve().parents[2]


def _canon(a, p):
    """Canonical (p-bit mantissa) form of an exact dyadic pair."""
    return round_nearest(a[0], 1, p, a[1]) if a[0] else (0, 0)


# -- registration -----------------------------------------------------------------------


def test_backends_registered_as_entry_points_and_builtins():
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for name, module in (
        ("mpmath", "snapcore.backends.mpmath_backend"),
        ("arb", "snapcore.backends.arb"),
    ):
        assert eps["snapcore"][name] == module
        assert BUILTIN_PLUGINS[name] == module
        assert name in get_registries().backends.available()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("mpmath") for d in deps)
    assert any(d.startswith("python-flint") for d in deps)


def test_versions_name_the_library():
    reg = get_registries().backends
    assert mpmath.__version__ in reg.create("mpmath").version()
    assert flint.__version__ in reg.create("arb").version()


# -- a missing library: unavailable with the install hint, never a fallback -----------


@pytest.mark.parametrize(
    ("module", "library", "name", "hint"),
    [
        ("snapcore.backends.mpmath_backend", "mpmath", "mpmath", "pip install mpmath"),
        ("snapcore.backends.arb", "flint", "arb", "pip install python-flint"),
    ],
)
def test_missing_library_makes_backend_unavailable(monkeypatch, module, library, name, hint):
    monkeypatch.setitem(sys.modules, library, None)  # `import library` now raises ImportError
    spec = importlib.util.find_spec(module)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    backend_cls = next(
        v for v in vars(fresh).values() if isinstance(v, type) and getattr(v, "name", None) == name
    )
    assert backend_cls.is_available() is False

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(fresh, name=name)
    reg = Registries(pm)
    assert name in reg.backends.names()
    assert name not in reg.backends.available()
    with pytest.raises(BackendUnavailableError, match=hint):
        reg.backends.create(name)

    import snapcore.plugins._manager
    from snapcore.mechanism._mechanism import SnappingMechanism

    monkeypatch.setattr(snapcore.plugins._manager, "_registries", reg)
    with pytest.raises(BackendUnavailableError, match=hint):
        SnappingMechanism(epsilon=1.0, clamp_bound=1.0, backend=name)

    from snapcore.testing.conformance import registered_backend_params

    (param,) = registered_backend_params()
    assert param.id == name
    assert param.marks[0].name == "skip" and hint in param.marks[0].kwargs["reason"]


# -- no global state ----------------------------------------------------------------------


def test_mpmath_backend_never_touches_global_context():
    arith = get_registries().backends.create("mpmath").arithmetic(118)
    old = (mpmath.mp.prec, mpmath.mp.rounding if hasattr(mpmath.mp, "rounding") else None)
    mpmath.mp.prec = 10  # a caller's low global precision must not leak in
    try:
        u = arith.from_dyadic((1 << 117) + 12345, -118)
        got = arith.to_dyadic(arith.ln(u))
        assert _canon(got, 118) == ln_nearest((1 << 117) + 12345, -118, 118)
        third = arith.to_dyadic(arith.div(arith.from_dyadic(1, 0), arith.from_dyadic(3, 0)))
        assert _canon(third, 118) == round_nearest(1, 3, 118)
        assert mpmath.mp.prec == 10
    finally:
        mpmath.mp.prec = old[0]


def test_arb_backend_restores_flint_precision():
    arith = get_registries().backends.create("arb").arithmetic(200)
    saved = flint.ctx.prec
    flint.ctx.prec = 17
    try:
        u = arith.from_dyadic((1 << 199) + 99, -200)
        assert _canon(arith.to_dyadic(arith.ln(u)), 200) == ln_nearest((1 << 199) + 99, -200, 200)
        assert flint.ctx.prec == 17
    finally:
        flint.ctx.prec = saved


@pytest.mark.parametrize("name", ["mpmath", "arb"])
def test_threads_at_different_precisions(name):
    backend = get_registries().backends.create(name)
    rng = random.Random(9)
    jobs = [
        (p, rng.getrandbits(p - 1) | (1 << (p - 1))) for p in (53, 118, 400) for _ in range(30)
    ]
    expected = {(p, m): ln_nearest(m, -p, p) for p, m in jobs}
    errors: list[str] = []

    def work(chunk):
        for p, m in chunk:
            a = backend.arithmetic(p)
            got = a.to_dyadic(a.ln(a.from_dyadic(m, -p)))
            if _canon(got, p) != expected[(p, m)]:
                errors.append(f"p={p} m={m}")

    threads = [threading.Thread(target=work, args=(jobs[i::4] * 3,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_ln_of_one_is_zero_and_bad_arguments_raise():
    for name in ("mpmath", "arb"):
        a = get_registries().backends.create(name).arithmetic(64)
        assert a.to_dyadic(a.ln(a.from_dyadic(1, 0))) == (0, 0)
        with pytest.raises(ValueError):
            a.ln(a.from_dyadic(-1, 0))
        with pytest.raises((ValueError, ZeroDivisionError)):
            a.ln(a.from_dyadic(0, 0))
        with pytest.raises(ZeroDivisionError):
            a.div(a.from_dyadic(1, 0), a.from_dyadic(0, 0))


def test_mpmath_ln_enclosure_is_rigorous_and_tight():
    from mpmath import libmp
    from snapcore.backends.mpmath_backend import ln_enclosure as mp_enclosure

    rng = random.Random(3)
    for _ in range(200):
        p = rng.choice([53, 118, 400])
        m, e = rng.getrandbits(p - 1) | (1 << (p - 1)), rng.randrange(-3 * p, 2 * p)
        w = p + 24
        lo, hi = mp_enclosure(libmp.from_man_exp(m, e), w)
        rlo, rhi = ln_enclosure(m, e, 2 * w + 64)  # MPFR, directed, far more bits
        to_f = lambda t: Fraction(int(t[1]) * (-1 if t[0] else 1)) * Fraction(2) ** int(t[2])  # noqa: E731
        ref_lo = Fraction(rlo[0]) * Fraction(2) ** rlo[1]
        ref_hi = Fraction(rhi[0]) * Fraction(2) ** rhi[1]
        assert to_f(lo) <= ref_lo and ref_hi <= to_f(hi)
        width = (to_f(hi) - to_f(lo)) / abs(ref_lo)
        assert width < Fraction(1, 2 ** (w - 8))


# -- the reference checks itself against MPFR -------------------------------------------


def test_reference_rounding_agrees_with_mpfr():
    rng = random.Random(11)
    for _ in range(3000):
        p = rng.choice([2, 3, 53, 64, 118, 200])
        num = rng.getrandbits(rng.randrange(1, 400)) * rng.choice([1, -1])
        den = rng.getrandbits(rng.randrange(1, 300)) | 1
        if rng.random() < 0.2:  # exact ties
            num, den = (2 * rng.getrandbits(p) + 1) * rng.choice([1, -1]), 2
        ctx = gmpy2.context(precision=p, round=gmpy2.RoundToNearest)
        ref = ctx.div(gmpy2.mpz(num), gmpy2.mpz(den))
        m, e = round_nearest(num, den, p)
        if num == 0:
            assert (m, e) == (0, 0)
            continue
        assert 1 << (p - 1) <= abs(m) < 1 << p
        assert Fraction(m) * Fraction(2) ** e == Fraction(*ref.as_integer_ratio())


def test_core_round_ratio_agrees_with_reference():
    # Quotients of every bit length, (p+1)-bit ones included, rounded at the right bit.
    rng = random.Random(12)
    for _ in range(3000):
        p = rng.choice([2, 53, 118, 200])
        num = rng.getrandbits(rng.randrange(1, 400)) * rng.choice([1, -1]) or 1
        den = rng.getrandbits(rng.randrange(1, 300)) or 1
        assert round_ratio(num, den, p) == round_nearest(num, den, p)
    assert round_ratio(8979960475707056 * 5695838511590207, 1, 53) == (5678613658198791, 53)


def test_reference_ln_agrees_with_mpfr_nearest():
    rng = random.Random(13)
    for _ in range(500):
        p = rng.choice([53, 118, 400])
        m, e = rng.getrandbits(p - 1) | (1 << (p - 1)), rng.randrange(-5 * p, 5 * p)
        ctx = gmpy2.context(precision=p, round=gmpy2.RoundToNearest)
        ref = ctx.log(ctx.mul_2exp(gmpy2.mpz(m), e))
        ym, ye = ln_nearest(m, e, p)
        assert Fraction(ym) * Fraction(2) ** ye == Fraction(*ref.as_integer_ratio())


# -- the committed hard cases -----------------------------------------------------------


def test_hard_cases_are_as_hard_as_claimed():
    data = json.loads((ROOT / "snapcore/testing/data/hard_ln.json").read_text())
    assert data["format"] == "snapcore-hard-ln-v1"
    by_p: dict[int, list[float]] = {}
    for case in data["cases"]:
        by_p.setdefault(case["p"], []).append(case["log2_distance"])
    assert sorted(by_p) == [53, 64, 118, 200, 400]
    for p, dists in by_p.items():
        assert len(dists) >= 20 and max(dists) <= -20, p
    rng = random.Random(14)
    for a, want, dist, _ in rng.sample(hard_ln_cases(), 40):
        p = next(c["p"] for c in data["cases"] if int(c["m"], 16) == a[0] and c["e"] == a[1])
        assert ln_nearest(a[0], a[1], p) == want
        d = ln_midpoint_distance(a[0], a[1], p)
        assert math.log2(d) == pytest.approx(dist, abs=0.01)
        # Independent look: MPFR at 4p bits, the value's offset from the rounded result
        # is within 2**-19 ulp of a half ulp.
        ctx = gmpy2.context(precision=4 * p + 64, round=gmpy2.RoundToNearest)
        exact = ctx.log(ctx.mul_2exp(gmpy2.mpz(a[0]), a[1]))
        offset = (exact - ctx.mul_2exp(gmpy2.mpz(want[0]), want[1])) / ctx.mul_2exp(1, want[1])
        assert abs(abs(offset) - 0.5) < 2.0**-19 or abs(abs(offset) - 0.25) < 2.0**-19


def test_core_round_ratio_directed_modes_agree_with_mpfr():
    # The same for the directed roundings the calibration uses (λ = RU(1/ε′)).
    from snapcore.exact._dyadic import Rounding

    modes = {
        Rounding.NEAREST: gmpy2.RoundToNearest,
        Rounding.TOWARD_ZERO: gmpy2.RoundToZero,
        Rounding.UP: gmpy2.RoundUp,
        Rounding.DOWN: gmpy2.RoundDown,
    }
    rng = random.Random(15)
    for _ in range(2000):
        p = rng.choice([2, 53, 118, 200])
        num = (rng.getrandbits(rng.randrange(1, 300)) or 1) * rng.choice([1, -1])
        den = rng.getrandbits(rng.randrange(1, 200)) or 1
        for mode, mpfr_mode in modes.items():
            ctx = gmpy2.context(precision=p, round=mpfr_mode)
            ref = ctx.div(gmpy2.mpz(num), gmpy2.mpz(den))
            m, e = round_ratio(num, den, p, mode)
            assert Fraction(m) * Fraction(2) ** e == Fraction(*ref.as_integer_ratio()), (
                num,
                den,
                p,
                mode,
            )
