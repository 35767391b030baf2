"""Long doubles are read exactly whatever the x87 FPU's precision control says.

Some libraries set the x87 precision control to 53 bits for the whole process (a
correctly rounded math library does so on initialisation).  Long-double arithmetic
then rounds to 53 bits, and NumPy's ``longdouble.as_integer_ratio`` (computed in that
arithmetic) silently drops mantissa bits: 1 + 2**-60 reads as 1.  snapcore decodes a
long double from its bits instead.  Each check runs in a fresh interpreter, since the
control word is process-wide state.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    not (
        sys.platform.startswith("linux")
        and platform.machine() in ("x86_64", "AMD64", "i686")
        and np.finfo(np.longdouble).nmant == 63
    ),
    reason="the x87 precision control exists only for x87 extended long doubles",
)

SCRIPT = textwrap.dedent(
    """
    import ctypes, ctypes.util
    from fractions import Fraction
    import numpy as np

    # 53-bit precision control, as a library's initialisation may leave it.
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    env = ctypes.create_string_buffer(64)
    assert libm.fegetenv(env) == 0
    raw = bytearray(env.raw)
    cw = int.from_bytes(raw[:2], "little")
    raw[:2] = ((cw & ~0x300) | 0x200).to_bytes(2, "little")
    assert libm.fesetenv(ctypes.create_string_buffer(bytes(raw), 64)) == 0

    LD = np.longdouble
    assert LD(1) + LD(2) ** -60 == LD(1)  # the arithmetic now rounds to 53 bits

    def encode(sign, mant, biased):  # x87 extended: 64-bit significand, 15-bit exponent
        bits = (sign << 79) | (biased << 64) | mant
        return np.frombuffer(bits.to_bytes(10, "little") + bytes(6), dtype=LD)[0]

    cases = [
        (0, (1 << 63) | 1, 16383),            # 1 + 2**-63
        (1, (1 << 63) | (1 << 3), 16383 + 5),  # -(32 + 2**-55)
        (0, (1 << 64) - 1, 16383 - 1000),       # 64 ones, tiny
        (0, 12345, 0),                          # subnormal
        (1, (1 << 63) | 0xABCDEF, 16383 + 200), # large
    ]
    from snapcore.data._values import read_value, read_values
    exact = []
    for sign, mant, biased in cases:
        e = (biased or 1) - 16383 - 63
        want = (-1) ** sign * Fraction(mant) * Fraction(2) ** e
        x = encode(sign, mant, biased)
        assert read_value(x) == want, (x, read_value(x), want)
        exact.append(want)
    arr = np.array([encode(*c) for c in cases], dtype=LD)
    got = read_values(arr)
    assert [Fraction(*r) for r in got.as_ratios()] == exact
    import snapcore
    kw = dict(epsilon=1, clamp_bounds=(1, 1 + 2**-52), sensitivity=2**-60)
    one = encode(0, (1 << 63) | 8, 16383)  # 1 + 2**-60
    a = snapcore.SnappingMechanism(**kw, source=snapcore.SeededSource(3)).release(one)
    b = snapcore.SnappingMechanism(**kw, source=snapcore.SeededSource(3)).release(
        Fraction(1) + Fraction(1, 2**60)
    )
    c = snapcore.SnappingMechanism(**kw, source=snapcore.SeededSource(3)).release(1.0)
    assert a == b, (a, b)
    print("ok", a, c)
    """
)


def test_long_doubles_are_read_from_their_bits_under_53_bit_precision_control() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok")
