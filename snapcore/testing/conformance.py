"""The backend conformance suite as pytest test classes.

A backend author runs the whole suite with one line in a test module::

    from snapcore.testing import conformance_suite
    from mypackage import MyBackend

    TestMyBackend = conformance_suite(MyBackend)

or, equivalently, by subclassing::

    class TestMyBackend(BackendConformance):
        backend = MyBackend          # a Backend subclass, an instance, or a registered name

:class:`RegisteredBackendsConformance` runs the same tests once per registered
backend (ids are the backend names; unavailable backends are skipped with their
install hint) — snapcore's own tests use it.  The pipeline comparison uses
``pipeline_draws`` draws per parameter set (10,000 by default); the test marked
``slow`` repeats it with ``slow_pipeline_draws`` (1,000,000) — run it with
``pytest -m slow``.

Requires pytest and hypothesis (``pip install snapcore[test]``).
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from snapcore.pipeline._backend import Backend
from snapcore.testing.checks import (
    BATCH_VALUES,
    EXPONENT_LIMIT,
    OPS,
    PIPELINE_GRID,
    PRECISIONS,
    check_batch,
    check_convert,
    check_dyadic_roundtrip,
    check_ln,
    check_op,
    check_pipeline,
    check_scalar,
    extreme_operands,
    hard_ln_cases,
    offers_batch,
    offers_scalar,
    random_operands,
    resolve_backend,
    special_operands,
)

__all__ = [
    "BackendConformance",
    "RegisteredBackendsConformance",
    "conformance_suite",
    "registered_backend_params",
]

_HYPOTHESIS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
)
_GRID_IDS = [case for case, _ in PIPELINE_GRID]


def _dyadic(
    data: Any, p: int, *, positive: bool = False, spread: int = 1 << 20
) -> tuple[int, int]:
    """A p-bit value: full, short (powers of two, few bits) or near-1 mantissas."""
    kind = data.draw(st.sampled_from(["full", "short", "near-one"]))
    if kind == "full":
        m = data.draw(st.integers(1 << (p - 1), (1 << p) - 1))
        e = data.draw(st.integers(-spread, spread)) - p
    elif kind == "short":
        m = data.draw(st.integers(1, 255))
        e = data.draw(st.integers(-spread, spread))
    else:  # 1 - k*2**-p or 1 + k*2**(1-p)
        k = data.draw(st.integers(1, 1 << 20))
        if data.draw(st.booleans()):
            m, e = (1 << p) - k, -p
        else:
            m, e = (1 << (p - 1)) + k, 1 - p
    if not positive and data.draw(st.booleans()):
        m = -m
    return (m, e)


class BackendConformance:
    """The conformance suite for one backend; set :attr:`backend` in a subclass.

    Every test compares the backend with the independent reference of
    :mod:`snapcore.testing.reference` (exact rationals; MPFR at far higher precision
    with a Ziv check for LN).  A failure message ends with a one-line reproduction.
    """

    #: The backend under test: a Backend subclass, a Backend instance or a registered name.
    backend: ClassVar[Any] = None
    #: Draws per parameter set in the pipeline comparison (default run).
    pipeline_draws: ClassVar[int] = 10_000
    #: Draws per parameter set in the ``slow`` pipeline run.
    slow_pipeline_draws: ClassVar[int] = 1_000_000
    #: Random inputs per precision and primitive (besides hypothesis's examples).
    random_inputs: ClassVar[int] = 300

    @pytest.fixture(scope="class")
    @classmethod
    def conformance_backend(cls) -> Backend:
        """The backend instance under test."""
        if cls.backend is None:
            pytest.skip("set `backend` on the BackendConformance subclass")
        return resolve_backend(cls.backend)

    # -- representation -----------------------------------------------------------
    @pytest.mark.parametrize("p", PRECISIONS)
    def test_dyadic_roundtrip(self, conformance_backend: Backend, p: int) -> None:
        """from_dyadic/to_dyadic/neg are exact, extremes of the exponent range included."""
        arith = conformance_backend.arithmetic(p)
        assert arith.precision == p
        rng = random.Random(p)
        vals = random_operands(rng, p, self.random_inputs) + special_operands(p)
        for a in vals + extreme_operands(p):
            check_dyadic_roundtrip(arith, a, conformance_backend.name)

    @pytest.mark.parametrize("p", PRECISIONS)
    def test_from_dyadic_refuses_wider_values(self, conformance_backend: Backend, p: int) -> None:
        """from_dyadic raises ValueError for a mantissa of p + 1 significant bits."""
        arith = conformance_backend.arithmetic(p)
        for m in ((1 << p) + 1, -((1 << p) + 1), (1 << (p + 5)) + 3):
            with pytest.raises(ValueError):
                arith.from_dyadic(m, -p)

    # -- conversion -----------------------------------------------------------------
    @pytest.mark.parametrize("p", PRECISIONS)
    def test_convert_random(self, conformance_backend: Backend, p: int) -> None:
        """convert rounds rationals, integers and doubles to nearest-even."""
        arith = conformance_backend.arithmetic(p)
        rng = random.Random(1000 + p)
        qs: list[Fraction | int | float] = []
        for _ in range(self.random_inputs):
            qs.append(
                Fraction(rng.getrandbits(2 * p) - (1 << (2 * p - 1)), rng.getrandbits(p) | 1)
            )
            qs.append(rng.uniform(-1.0, 1.0) * 2.0 ** rng.randrange(-1000, 1000))
            qs.append(rng.getrandbits(p + 40) - (1 << (p + 39)))
        # Exact ties at p bits: odd multiples of half an ulp.
        for k in range(1, 40, 2):
            qs.append(Fraction((1 << p) + k, 2))
            qs.append(-Fraction(((1 << p) + k) << 3, 1 << 90))
        qs += [0, 1, -1, 0.5, 5e-324, -5e-324, 1.7976931348623157e308, Fraction(1, 3)]
        for q in qs:
            check_convert(arith, q, conformance_backend.name)

    @pytest.mark.parametrize("p", PRECISIONS)
    @_HYPOTHESIS
    @given(data=st.data())
    def test_convert_hypothesis(self, conformance_backend: Backend, p: int, data: Any) -> None:
        """convert on hypothesis-generated rationals and doubles."""
        q = data.draw(
            st.one_of(
                st.fractions(),
                st.floats(allow_nan=False, allow_infinity=False),
                st.integers(-(1 << (p + 20)), 1 << (p + 20)),
                st.builds(
                    Fraction,
                    st.integers(-(1 << (3 * p)), 1 << (3 * p)),
                    st.integers(1, 1 << (2 * p)),
                ),
            )
        )
        check_convert(conformance_backend.arithmetic(p), q, conformance_backend.name)

    # -- add, sub, mul, div ---------------------------------------------------------
    @pytest.mark.parametrize("op", OPS)
    @pytest.mark.parametrize("p", PRECISIONS)
    def test_op_random(self, conformance_backend: Backend, p: int, op: str) -> None:
        """op on random values (exponents within ±200 and within ±p) and special values."""
        arith = conformance_backend.arithmetic(p)
        rng = random.Random(2000 + p)
        n = self.random_inputs
        xs = random_operands(rng, p, n) + random_operands(rng, p, n, spread=p)
        ys = random_operands(rng, p, n) + random_operands(rng, p, n, spread=2)
        sp = special_operands(p)
        pairs = list(zip(xs, ys, strict=True)) + [(a, b) for a in sp for b in sp[::3]]
        for a, b in pairs:
            check_op(arith, op, a, b, conformance_backend.name)

    @pytest.mark.parametrize("op", OPS)
    @pytest.mark.parametrize("p", PRECISIONS)
    @_HYPOTHESIS
    @given(data=st.data())
    def test_op_hypothesis(self, conformance_backend: Backend, p: int, op: str, data: Any) -> None:
        """op on hypothesis-generated p-bit values (exponents up to ±2**20 apart)."""
        a = _dyadic(data, p)
        b = _dyadic(data, p)
        check_op(conformance_backend.arithmetic(p), op, a, b, conformance_backend.name)

    @pytest.mark.parametrize("op", OPS)
    @pytest.mark.parametrize("p", PRECISIONS)
    def test_op_exponent_extremes(self, conformance_backend: Backend, p: int, op: str) -> None:
        """op on values near each end of the exponent range, with in-range results."""
        arith = conformance_backend.arithmetic(p)
        ext = extreme_operands(p)
        big = [a for a in ext if a[1] > 0]
        small = [a for a in ext if a[1] < 0]
        one = [(1 << (p - 1), 1 - p), ((1 << p) - 1, -p), (-3, 0)]
        pairs = [(a, b) for a in big + small for b in one]
        if op in ("add", "sub"):  # gaps of 2**31 bits; sums of two huge values
            pairs += [(a, b) for a in big for b in small + big] + [
                (a, b) for a in small for b in small + big
            ]
        elif op == "mul":  # huge times tiny is near 1
            pairs += [(a, b) for a in big for b in small]
        else:
            pairs += [(a, b) for a in big for b in big] + [(a, b) for a in small for b in small]
            pairs += [(b, a) for a in big + small for b in one]
        for a, b in pairs:
            check_op(arith, op, a, b, conformance_backend.name)

    @pytest.mark.parametrize("p", PRECISIONS)
    def test_signed_zeros(self, conformance_backend: Backend, p: int) -> None:
        """Zeros of either sign: exact results, (0, 0) from to_dyadic, x - x == 0."""
        arith = conformance_backend.arithmetic(p)
        name = conformance_backend.name
        zeros = [arith.from_dyadic(0, 0), arith.from_dyadic(0, -5), arith.convert(-0.0)]
        zeros.append(arith.neg(zeros[0]))
        x = arith.from_dyadic(-((1 << p) - 1), -p - 3)
        for z in zeros:
            assert arith.to_dyadic(z) == (0, 0), f"[{name}] p={p} zero -> {arith.to_dyadic(z)}"
            assert arith.to_dyadic(arith.neg(z)) == (0, 0)
            assert arith.to_dyadic(arith.add(x, z)) == arith.to_dyadic(x)
            assert arith.to_dyadic(arith.sub(x, z)) == arith.to_dyadic(x)
            assert arith.to_dyadic(arith.add(z, x)) == arith.to_dyadic(x)
            assert arith.to_dyadic(arith.mul(x, z)) == (0, 0)
            assert arith.to_dyadic(arith.div(z, x)) == (0, 0)
            for z2 in zeros:
                assert arith.to_dyadic(arith.add(z, z2)) == (0, 0)
                assert arith.to_dyadic(arith.sub(z, z2)) == (0, 0)
        assert arith.to_dyadic(arith.sub(x, x)) == (0, 0)
        assert arith.to_dyadic(arith.add(x, arith.neg(x))) == (0, 0)
        assert arith.to_dyadic(arith.ln(arith.from_dyadic(1, 0))) == (0, 0)  # ln 1 = +0

    @pytest.mark.parametrize("p", PRECISIONS)
    def test_powers_of_two(self, conformance_backend: Backend, p: int) -> None:
        """Powers of two, and their neighbours, through every primitive."""
        arith = conformance_backend.arithmetic(p)
        name = conformance_backend.name
        pows = [(1, k) for k in (-p - 1, -p, -1, 0, 1, p, 3 * p)]
        pows += [(-1, k) for k in (-2, 5)]
        below = [((1 << p) - 1, k - p) for k in (0, 1, -40)]  # just below 2**k
        for a in pows + below:
            check_convert(arith, Fraction(a[0]) * Fraction(2) ** a[1], name)
            for b in pows + below:
                for op in OPS:
                    check_op(arith, op, a, b, name)
            if a[0] > 0:
                check_ln(arith, a, name)

    # -- LN ---------------------------------------------------------------------------
    @pytest.mark.parametrize("p", PRECISIONS)
    def test_ln_random(self, conformance_backend: Backend, p: int) -> None:
        """LN of random values (U* in (0, 1) mostly), specials and exponent extremes."""
        arith = conformance_backend.arithmetic(p)
        rng = random.Random(3000 + p)
        vals = [
            (m, -p - rng.randrange(0, 60))
            for m, _ in random_operands(rng, p, self.random_inputs, positive=True)
        ]
        vals += random_operands(rng, p, self.random_inputs // 3, positive=True, spread=5000)
        vals += [(m, e) for m, e in special_operands(p) + extreme_operands(p) if m > 0]
        vals += [((1 << (p - 1)) + 1, -p - (EXPONENT_LIMIT >> 1))]  # deep in the tail
        for a in vals:
            check_ln(arith, a, conformance_backend.name)

    @pytest.mark.parametrize("p", PRECISIONS)
    @_HYPOTHESIS
    @given(data=st.data())
    def test_ln_hypothesis(self, conformance_backend: Backend, p: int, data: Any) -> None:
        """LN on hypothesis-generated positive p-bit values, near 1 included."""
        a = _dyadic(data, p, positive=True)
        check_ln(conformance_backend.arithmetic(p), a, conformance_backend.name)

    @pytest.mark.parametrize("p", PRECISIONS)
    def test_ln_hard_cases(self, conformance_backend: Backend, p: int) -> None:
        """LN of the committed inputs lying within 2**-20 ulp (or much closer) of a
        rounding midpoint (scripts/find_hard_ln.py)."""
        arith = conformance_backend.arithmetic(p)
        cases = hard_ln_cases(p)
        assert cases, f"no hard cases for p={p}"
        failures = []
        for a, want, dist, family in cases:
            try:
                check_ln(arith, a, conformance_backend.name, want)
            except AssertionError as exc:
                failures.append(f"{family} (2**{dist} ulp from a midpoint): {exc}")
        assert not failures, f"{len(failures)} of {len(cases)} hard cases wrong:\n" + "\n".join(
            failures
        )

    # -- the pipeline -----------------------------------------------------------------
    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_pipeline(self, conformance_backend: Backend, case: str) -> None:
        """transform is bit-identical to the reference on ``pipeline_draws`` draws."""
        check_pipeline(conformance_backend, case, self.pipeline_draws, 0, conformance_backend.name)

    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_batch(self, conformance_backend: Backend, case: str) -> None:
        """The optional batch release, when offered, agrees bit for bit with the
        element-wise pipeline (or declines before drawing)."""
        if not offers_batch(conformance_backend):
            pytest.skip(f"backend {conformance_backend.name!r} offers no batch release")
        check_batch(conformance_backend, case, BATCH_VALUES, 0, conformance_backend.name)

    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_batch_padded(self, conformance_backend: Backend, case: str) -> None:
        """The batch release of a padded mechanism (by default the batch release) agrees
        bit for bit with the element-wise pipeline (or declines before drawing)."""
        if not offers_batch(conformance_backend):
            pytest.skip(f"backend {conformance_backend.name!r} offers no batch release")
        check_batch(
            conformance_backend, case, BATCH_VALUES, 0, conformance_backend.name, padded=True
        )

    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_scalar_padded(self, conformance_backend: Backend, case: str) -> None:
        """The optional fused scalar release, when offered, agrees bit for bit with the
        pipeline, draw for draw."""
        if not offers_scalar(conformance_backend):
            pytest.skip(f"backend {conformance_backend.name!r} offers no fused scalar release")
        check_scalar(conformance_backend, case, 500, 0, conformance_backend.name, padded=True)

    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_scalar(self, conformance_backend: Backend, case: str) -> None:
        """The scalar release for mechanisms without timing padding (by default the
        padded one) agrees bit for bit with the pipeline, draw for draw."""
        if not check_scalar(conformance_backend, case, 500, 0, conformance_backend.name):
            pytest.skip(f"backend {conformance_backend.name!r} offers no fused scalar release")

    @pytest.mark.slow
    @pytest.mark.parametrize("case", _GRID_IDS)
    def test_pipeline_slow(
        self, conformance_backend: Backend, case: str, request: pytest.FixtureRequest
    ) -> None:
        """transform is bit-identical to the reference on ``slow_pipeline_draws`` draws
        (``pipeline_draws // 10`` when a test suite runs it as a ``slow_sample``)."""
        sampled = request.node.get_closest_marker("slow_sample") is not None
        n = self.pipeline_draws // 10 if sampled else self.slow_pipeline_draws
        check_pipeline(conformance_backend, case, n, 1, conformance_backend.name)


def registered_backend_params() -> list[Any]:
    """One ``pytest.param`` per registered backend (id = name); unavailable ones are
    skipped with their install hint."""
    from snapcore.plugins._manager import get_registries

    reg = get_registries().backends
    params = []
    for name in reg.names():
        cls = reg.get(name)
        marks = []
        if not cls.is_available():
            marks.append(
                pytest.mark.skip(
                    reason=f"backend {name!r} unavailable: library {cls.library!r} missing "
                    f"({cls.install_hint})"
                )
            )
        params.append(pytest.param(name, id=name, marks=marks))
    return params


class RegisteredBackendsConformance(BackendConformance):
    """The conformance suite once per registered backend (built-in and plugins)."""

    @pytest.fixture(scope="class", params=registered_backend_params())
    @classmethod
    def conformance_backend(cls, request: Any) -> Backend:
        from snapcore.plugins._manager import get_registries

        return get_registries().backends.create(request.param)


def conformance_suite(backend: Any, **options: Any) -> type[BackendConformance]:
    """A :class:`BackendConformance` subclass for ``backend``; assign it to a ``Test*`` name.

    ``options`` override class attributes such as ``pipeline_draws``.
    """
    name = getattr(backend, "name", None) or str(backend)
    attrs = {"backend": backend, **options}
    return type(f"TestConformance_{name}", (BackendConformance,), attrs)
