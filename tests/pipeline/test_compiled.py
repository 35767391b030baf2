"""The fast path compiled by numba (snapcore.pipeline._compiled).

- The compiled kernel performs the same IEEE operations as the numpy one: every output
  of the kernel (``t_hi``, ``t_lo``, ``err``, ``ok``) is bit-identical, on parameter
  sets covering the trivial and non-double centre and sensitivity and both output
  stages.
- The compiled TwoProduct (a fused multiply-add) gives the exact error of a product,
  the same pair as Dekker's TwoProduct of the numpy kernel, on random doubles.
- The cached loops carry a fingerprint of the sources they inline from other modules
  (the kernel and the draw's row format) in their closures, which numba's cache key
  includes: editing those modules cannot load stale compiled code.

The compiled output stage's certificate is tested beside the numpy one
(test_engine_certificate.py), the compiled row decoder beside the numpy one
(tests/randomness/test_draw.py), and the release of one value through MPFR's scalar
path (tests/backends/test_mpfr.py).
"""

from __future__ import annotations

import hashlib
import inspect
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from snapcore import SnappingMechanism
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _compiled, _engine, _kernel
from snapcore.randomness import _draw
from snapcore.randomness._sources import SeededSource

pytestmark = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

#: (mechanism keyword arguments, value range).
PARAMS = [
    (dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)), (-20.0, 120.0)),
    (dict(epsilon=0.3, clamp_bound=1e6), (-1.3e6, 1.3e6)),
    (dict(epsilon=2.0, clamp_bounds=(-3.5, 7.25), sensitivity=0.1), (-5.0, 9.0)),
    (dict(epsilon=0.5, clamp_bounds=(-1.0, 2.0), sensitivity=Fraction(1, 3)), (-2, 3)),
    (
        dict(epsilon=1.5, clamp_bounds=(-123456.75, 987654.3), sensitivity=0.7),
        (-2e5, 1.1e6),
    ),
]


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


@pytest.mark.parametrize(("kw", "vrange"), PARAMS, ids=[str(i) for i in range(len(PARAMS))])
def test_numba_kernel_same_bits_as_numpy(kw, vrange):
    mech = SnappingMechanism(**kw)
    n = 20000
    rng = np.random.default_rng(9)
    values = rng.uniform(*vrange, n)
    values[: n // 50] = rng.choice([*vrange, 0.0, 1.0, -1.0], n // 50)
    batch = _engine.batch_draws(SeededSource(10), n, mech.precision)
    eng = _engine.engine_for(mech.calibration)
    a = eng.diagnose(values, batch, "numpy")
    b = eng.diagnose(values, batch, "numba")
    for x, y in zip(a[:3], b[:3], strict=True):
        assert _identical(x, y)
    assert np.array_equal(a[3], b[3])


def test_cached_loops_close_over_the_fingerprint_of_what_they_inline():
    compiled = _compiled.compiled()
    assert compiled is not None
    text = inspect.getsource(_kernel) + inspect.getsource(_draw)
    want = hashlib.sha256(text.encode("utf-8")).hexdigest()
    loops = [compiled.decide, compiled.diagnose, compiled.fused, compiled.scalar]
    for loop in [*loops, _compiled._nb_decode_rows]:
        assert loop.stats.cache_path is not None  # cached on disk
        cells = [c.cell_contents for c in loop.py_func.__closure__]
        assert cells == [want], loop.py_func.__qualname__


_PRODUCT_FACTORS = st.floats(
    min_value=-(2.0**490), max_value=2.0**490, allow_nan=False, allow_infinity=False
).filter(lambda x: x == 0.0 or abs(x) >= 2.0**-480)


@settings(max_examples=400, deadline=None)
@given(a=_PRODUCT_FACTORS, b=_PRODUCT_FACTORS)
def test_compiled_two_prod_is_the_exact_error_and_dekkers(a, b):
    """``p + err == a·b`` exactly (Fractions) and ``(p, err)`` equals Dekker's pair, for
    factors whose product neither overflows nor underflows."""
    if _compiled._nb_fma is None:  # pragma: no cover - numba without the extension API
        pytest.skip("this numba has no LLVM intrinsics")
    import numba

    fma_prod = numba.njit(_compiled._two_prod_fma)
    p, err = fma_prod(a, b)
    assert Fraction(p) + Fraction(err) == Fraction(a) * Fraction(b)
    assert (p, err) == _kernel.two_prod(a, b)
