"""Two IEEE-754 double algorithms of the snapping mechanism, by bit manipulation.

The mechanism itself snaps exactly on ``(mantissa, exponent)`` pairs of p-bit numbers
(``snap`` in ``snapcore.pipeline._stages``).  This module implements the two steps
for binary64 doubles (docs/ieee754.md), reading and writing the IEEE-754 fields directly:

* :func:`granularity_from_double` — ``Λ``, the smallest power of two ``>= λ``;
* :func:`snap_double` — ``x`` rounded to the nearest multiple of a power of
  two ``Λ``, **ties toward +∞** (docs/semantics.md [S7]), in four cases;
* :func:`snap_doubles` — the same algorithm vectorised over a ``uint64`` view of a
  NumPy array, bit-identical to :func:`snap_double` elementwise;
* :func:`double_bits` and :func:`double_from_bits` — a double's binary64 word as an
  unsigned integer, and back.

A double is ``(-1)**s · (1.m1…m52)₂ · 2**(E − 1023)`` for an exponent field
``1 <= E <= 2046``, or ``(-1)**s · (0.m1…m52)₂ · 2**−1022`` for ``E = 0`` (zero and the
subnormals).  The low 63 bits, ``E·2**52 + F`` with ``F = (m1…m52)₂``, are called the
*magnitude word*: as an integer it is increasing in ``|x|``, and inside one binade (and
across the whole subnormal range) it is ``|x|`` divided by the binade's ulp.

**Departure from a sign-and-magnitude formulation.** Rounding the *magnitude* of ``x/Λ`` half up
(case 2 tests the half bit ``m_{y+1}``; case 3 always rounds the magnitude up), so a
negative exact tie goes away from zero: ``−Λ/2 ↦ −Λ`` and ``−3Λ/2 ↦ −2Λ``. The
mechanism's snap is ``⌊x/Λ + 1/2⌋·Λ``, ties toward +∞: ``−Λ/2 ↦ 0`` and ``−3Λ/2 ↦ −Λ``.
Mironov's privacy proof is for that function, and these routines must agree bit for bit
with the exact integer snap, so for negative ``x`` the magnitude is rounded half *down*:
the only change is that an exact negative tie keeps the smaller magnitude. Every zero
result is ``+0.0`` (``k = 0`` and ``0·Λ = +0``), including ``−0.0`` and negative ``x``
that snap to zero.
"""

from __future__ import annotations

import math
import numbers
import struct
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from snapcore.errors import ParameterError, SnapOverflowError

__all__ = [
    "MAX_GRANULARITY_LOG2",
    "MIN_GRANULARITY_LOG2",
    "double_bits",
    "double_from_bits",
    "granularity_from_double",
    "power_of_two_exponent",
    "round_down_double",
    "round_up_double",
    "snap_double",
    "snap_doubles",
]

#: ``Λ = 2**L`` must be a double: ``-1074 <= L <= 1023`` (the smallest subnormal to
#: the largest power of two below ``DBL_MAX``).
MIN_GRANULARITY_LOG2 = -1074
MAX_GRANULARITY_LOG2 = 1023

_FRAC_BITS = 52
_FRAC_MASK = (1 << _FRAC_BITS) - 1
_EXP_MAX = 0x7FF  # all ones: inf / NaN
_BIAS = 1023
_SIGN = 1 << 63
_MAG_MASK = _SIGN - 1
_INF_WORD = _EXP_MAX << _FRAC_BITS


_PACK_D = struct.Struct("<d")
_PACK_Q = struct.Struct("<Q")


def double_bits(x: float) -> int:
    """The IEEE-754 binary64 word of ``x`` as an unsigned integer (sign bit 63).

    For doubles ``>= +0.0`` the word is increasing in ``x``, and consecutive doubles
    have consecutive words: a search over positive doubles can bisect their words.
    """
    word: int = _PACK_Q.unpack(_PACK_D.pack(x))[0]
    return word


def double_from_bits(word: int) -> float:
    """The double whose IEEE-754 binary64 word is ``word`` (``0 <= word < 2**64``):
    the inverse of :func:`double_bits`."""
    value: float = _PACK_D.unpack(_PACK_Q.pack(word))[0]
    return value


def _as_double(name: str, value: Any) -> float:
    """``value`` as a finite double, exactly, or a ParameterError naming ``name``."""
    if type(value) is float and math.isfinite(value):  # the common case, fast
        return value
    if isinstance(value, bool | np.bool_):
        raise ParameterError(f"{name} must be a finite double, got the bool {value!r}")
    if isinstance(value, float | np.floating) and np.dtype(type(value)).itemsize <= 8:
        f = float(value)
    elif isinstance(value, numbers.Integral):
        try:
            f = float(int(value))
        except OverflowError:
            raise ParameterError(
                f"{name} must be a finite double, got the int {value!r} (too large)"
            ) from None
        if f != int(value):
            raise ParameterError(
                f"{name} must be exactly representable as a double, got the int {value!r}"
            )
    else:
        raise ParameterError(
            f"{name} must be a finite double, got {type(value).__name__} {value!r}"
        )
    if not math.isfinite(f):
        raise ParameterError(f"{name} must be a finite double, got {f!r}")
    return f


def power_of_two_exponent(granularity: float) -> int:
    """``L`` with ``granularity == 2**L``, read off the bits.

    Parameters
    ----------
    granularity : float
        A positive power of two that is a double (normal or subnormal).

    Returns
    -------
    int
        ``L`` in ``[-1074, 1023]``.

    Raises
    ------
    ParameterError
        If ``granularity`` is not a finite positive power of two.

    Examples
    --------
    >>> power_of_two_exponent(0.25), power_of_two_exponent(2.0**-1074)
    (-2, -1074)
    """
    g = _as_double("granularity", granularity)
    word = double_bits(g)
    exp_field, frac = word >> _FRAC_BITS, word & _FRAC_MASK
    if g > 0.0 and frac == 0:  # a normal power of two
        return exp_field - _BIAS
    if g > 0.0 and exp_field == 0 and frac & (frac - 1) == 0:  # a subnormal one
        return frac.bit_length() - 1 + MIN_GRANULARITY_LOG2
    raise ParameterError(
        "granularity must be a power of two 2**L with "
        f"{MIN_GRANULARITY_LOG2} <= L <= {MAX_GRANULARITY_LOG2}, got {g!r}"
    )


def granularity_from_double(lam: float) -> float:
    """``Λ``, the smallest power of two ``>= λ``, read off λ's IEEE-754 bits (docs/ieee754.md).

    With ``λ = (1.m1…m52)₂ · 2**(E − 1023)`` (seed eq. 4.1):

    * ``m1 = … = m52 = 0``: λ is a power of two and ``Λ = λ``;
    * otherwise: clear the fraction and add one to the exponent field,
      ``Λ = 2**(E − 1022)``.

    Subnormal λ (``E = 0``, no implicit leading 1) are not covered by that
    formula.  There ``λ = F · 2**−1074`` and the word of the double ``2**j · 2**−1074``
    is the integer ``2**j`` for every ``0 <= j <= 52`` (``j = 52`` gives ``2**−1022``,
    the smallest normal), so ``Λ`` is ``λ`` when ``F`` is a power of two and otherwise
    the double whose word is ``2**bit_length(F)``.

    Parameters
    ----------
    lam : float
        The scale λ; a finite double with ``0 < λ <= 2**1023``.

    Returns
    -------
    float
        ``Λ``, a power of two with ``λ <= Λ < 2λ``.

    Raises
    ------
    ParameterError
        If λ is not a finite double > 0 (NaN, ±inf, zero, negative, bool, other types),
        or if ``λ > 2**1023``: then ``Λ = 2**1024`` is not a finite double.

    Examples
    --------
    >>> granularity_from_double(0.25), granularity_from_double(3.0), granularity_from_double(4.5)
    (0.25, 4.0, 8.0)
    """
    f = _as_double("lam", lam)
    if not f > 0.0:
        raise ParameterError(f"lam must be a finite double > 0, got {f!r}")
    word = double_bits(f)
    exp_field, frac = word >> _FRAC_BITS, word & _FRAC_MASK
    if frac == 0:  # a (normal) power of two: Λ = λ
        return f
    if exp_field == 0:  # subnormal: the word is λ / 2**-1074
        return f if frac & (frac - 1) == 0 else double_from_bits(1 << frac.bit_length())
    if exp_field + 1 == _EXP_MAX:
        raise ParameterError(
            f"lam must be <= 2**{MAX_GRANULARITY_LOG2} so that Lambda (the smallest power "
            f"of two >= lam) is a finite double, got {f!r} (Lambda would be 2**1024)"
        )
    return double_from_bits((exp_field + 1) << _FRAC_BITS)


def snap_double(x: float, granularity: float) -> float:
    """``x`` rounded to the nearest multiple of ``Λ``, ties toward +∞, by bit manipulation.

    Computes ``⌊x/Λ + 1/2⌋ · Λ`` exactly (docs/semantics.md [S7]; the exact version is
    ``snap`` of the pipeline) on the IEEE-754 fields.  ``x/Λ`` is never formed as a
    double (it may be out of range); its unbiased exponent is ``y = E − 1023 − L`` for
    ``Λ = 2**L`` and normal ``x``, and with ``t = 52 − y`` fraction bits below ``Λ``:

    * **zero** (``±0.0``): ``+0.0``.
    * **case 1, y >= 52**: ``x`` is already an integer multiple of ``Λ``; returned as is.
    * **case 2, 0 <= y <= 51**: the half bit is ``m_{y+1}`` (bit ``t − 1`` of the word).
      Add ``2**(t−1)`` to the 63-bit magnitude word and clear its low ``t`` bits; when
      ``m_{y+1} … m52`` are all ones the carry runs into the exponent field (the
      "increment the exponent" edge).  For negative ``x`` add ``2**(t−1) − 1`` instead,
      so an exact tie keeps the smaller magnitude (ties toward +∞).
    * **case 3, y = −1** (``Λ/2 <= |x| < Λ``): ``Λ`` for ``x > 0``; ``−Λ`` for ``x < 0``,
      except the exact tie ``x = −Λ/2``, which gives ``+0.0``.
    * **case 4, y < −1** (``|x| < Λ/2``): ``+0.0``.

    The sign bit is kept for non-zero results.  Subnormal ``x`` use the same word add
    with ``t = L + 1074`` (the word is ``|x| / 2**−1074``); for ``t > 52``,
    ``|x| < 2**−1022 <= Λ/2`` and the result is ``+0.0``.

    Departure from a sign-and-magnitude formulation, which rounds the magnitude half up (a negative
    tie goes away from zero, case 3 always rounds the magnitude up).  The mechanism
    rounds ties toward +∞, so negative ties round the magnitude down; see the module
    docstring.

    Parameters
    ----------
    x : float
        A finite double (an int is accepted if it is exactly a double).
    granularity : float
        ``Λ``, a power of two double, ``2**−1074 <= Λ <= 2**1023``.

    Returns
    -------
    float
        ``⌊x/Λ + 1/2⌋ · Λ``; a zero result is ``+0.0``.

    Raises
    ------
    ParameterError
        If ``x`` is NaN, ±inf or not a number, or ``granularity`` is not a power of two.
    SnapOverflowError
        If the result is ``±2**1024`` (``|x|`` within ``Λ/2`` of ``2**1024``, e.g.
        ``x = DBL_MAX``, ``Λ = 2**972``): not a finite double.

    Examples
    --------
    >>> snap_double(5.5, 2.0), snap_double(-5.0, 2.0), snap_double(-3.0, 2.0)
    (6.0, -4.0, -2.0)
    >>> snap_double(-0.5, 1.0), snap_double(-0.0, 1.0)
    (0.0, 0.0)
    """
    xf = _as_double("x", x)
    L = power_of_two_exponent(granularity)
    word = double_bits(xf)
    neg = word >> 63
    mag = word & _MAG_MASK
    if mag == 0:  # ±0.0
        return 0.0
    exp_field = mag >> _FRAC_BITS
    if exp_field == 0:  # subnormal x: t = L + 1074 fraction bits below Λ
        t = L - MIN_GRANULARITY_LOG2
        if t > _FRAC_BITS:
            return 0.0
        y = _FRAC_BITS - t
    else:
        y = exp_field - _BIAS - L  # unbiased exponent of x/Λ
    if y >= _FRAC_BITS:  # case 1: already a multiple of Λ
        return xf
    if y >= 0:  # case 2: half bit m_{y+1}, carry into the exponent by a word add
        t = _FRAC_BITS - y
        mag = (mag + (1 << (t - 1)) - neg) >> t << t
        if mag == 0:
            return 0.0
        if mag >= _INF_WORD:
            raise SnapOverflowError(
                f"snap_double({xf!r}, 2**{L}): the nearest multiple of the granularity is "
                f"{'-' if neg else ''}2**1024, not a finite double"
            )
        return double_from_bits(neg << 63 | mag)
    if y == -1:  # case 3: |x|/Λ in [1/2, 1)
        if neg and mag & _FRAC_MASK == 0:  # x = -Λ/2 exactly: tie toward +∞
            return 0.0
        return double_from_bits(neg << 63 | double_bits(math.ldexp(1.0, L)))
    return 0.0  # case 4: |x| < Λ/2


def snap_doubles(x: npt.ArrayLike, granularity_log2: int) -> npt.NDArray[np.float64]:
    """:func:`snap_double` vectorised: every element snapped to a multiple of ``2**L``.

    The same four cases, computed on a ``uint64`` view with whole-array integer
    operations (no per-element Python), bit-identical to ``snap_double(x_i, 2.0**L)``
    for every element.

    Parameters
    ----------
    x : array_like
        Doubles (any shape); float16 and float32 are widened exactly, other dtypes are
        refused.  The input is not modified.
    granularity_log2 : int
        ``L`` with ``Λ = 2**L``, ``-1074 <= L <= 1023``.

    Returns
    -------
    numpy.ndarray
        A new float64 array of the same shape: ``⌊x/Λ + 1/2⌋ · Λ`` elementwise, zeros
        as ``+0.0``.

    Raises
    ------
    ParameterError
        If ``L`` is not an int in range, the dtype is not a float of at most 64 bits,
        or any element is NaN or ±inf (the first one is named).
    SnapOverflowError
        If any element's nearest multiple is ``±2**1024`` (the first one is named).
        Nothing is returned in either case.

    Examples
    --------
    >>> snap_doubles([5.5, -5.0, -3.0, -0.5, -0.0], 0).tolist()
    [6.0, -5.0, -3.0, 0.0, 0.0]
    """
    if isinstance(granularity_log2, bool | np.bool_) or not isinstance(
        granularity_log2, numbers.Integral
    ):
        raise ParameterError(
            f"granularity_log2 must be an int, got {type(granularity_log2).__name__} "
            f"{granularity_log2!r}"
        )
    L = int(granularity_log2)
    if not MIN_GRANULARITY_LOG2 <= L <= MAX_GRANULARITY_LOG2:
        raise ParameterError(
            f"granularity_log2 must satisfy {MIN_GRANULARITY_LOG2} <= L <= "
            f"{MAX_GRANULARITY_LOG2} (Lambda = 2**L a double), got {L}"
        )
    arr = np.asarray(x)
    if arr.dtype.kind != "f" or arr.dtype.itemsize > 8:
        raise ParameterError(
            f"x must hold floats of at most 64 bits (float16/32/64), got dtype {arr.dtype}"
        )
    arr = np.asarray(arr, dtype=np.float64, order="C")
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.flatnonzero(~finite.ravel())[0])
        raise ParameterError(
            f"x must hold finite doubles, got {float(arr.ravel()[i])!r} at flat index {i}"
        )

    u64 = np.uint64
    word = arr.reshape(-1).view(u64)  # 1-d (a view: arr is C-contiguous)
    neg = word >> u64(63)
    mag = word & u64(_MAG_MASK)
    exp_field = (mag >> u64(_FRAC_BITS)).view(np.int64)
    # t = 52 − y fraction bits below Λ, y the unbiased exponent of x/Λ; a subnormal x
    # counts as exponent field 1 (its word is |x| / 2**−1074), i.e. t = L + 1074.
    t = np.maximum(exp_field, 1)
    np.subtract(_BIAS + _FRAC_BITS + L, t, out=t)
    # Case 2 on every lane (shift kept in [1, 52]; lanes of other cases overwritten):
    # add 2**(t−1), or 2**(t−1) − 1 for x < 0, to the word and clear its low t bits.
    tc = np.clip(t, 1, _FRAC_BITS).view(u64)
    out = u64(1) << (tc - u64(1))
    out -= neg
    out += mag
    out >>= tc
    out <<= tc
    np.copyto(out, mag, where=t <= 0)  # case 1, y >= 52: already a multiple of Λ
    beyond = t > _FRAC_BITS
    if beyond.any():
        out[beyond] = 0  # case 4, y < −1 (and subnormal |x| < 2**−1022 <= Λ/2)
        # Case 3, y = −1 (normal x only): Λ, except the exact negative tie x = −Λ/2.
        case3 = (t == _FRAC_BITS + 1) & (exp_field >= 1)
        case3 &= ~((neg == u64(1)) & ((mag & u64(_FRAC_MASK)) == u64(0)))
        out[case3] = double_bits(math.ldexp(1.0, L))
    over = out >= u64(_INF_WORD)
    if over.any():
        i = int(np.flatnonzero(over.ravel())[0])
        raise SnapOverflowError(
            f"snap_doubles: element {float(arr.ravel()[i])!r} at flat index {i} snaps to "
            f"±2**1024 at granularity 2**{L}, not a finite double"
        )
    out |= (neg << u64(63)) * (out != u64(0))  # x's sign on non-zero results; zero is +0.0
    return out.view(np.float64).reshape(arr.shape)


# -- Exact values rounded to a double, upward or downward -----------------------------

#: The largest finite double.
_LARGEST = double_from_bits(_INF_WORD - 1)


def round_up_double(q: Fraction) -> float:
    """The least double ``>= q``: ``inf`` when ``q`` is above the largest finite double,
    ``-DBL_MAX`` when ``q`` is below the lowest one.

    The one directed rounding of an exact value to a double in snapcore: the clamp
    interval, the accuracy guarantees, the padded pipeline's input range and the ε
    the adapters report are rounded with it and :func:`round_down_double`.

    Examples
    --------
    >>> round_up_double(Fraction(1, 10)) == 0.1, round_up_double(Fraction(1, 3)) > 1 / 3
    (True, True)
    """
    try:
        r = q.numerator / q.denominator  # correctly rounded to nearest (or overflow)
    except OverflowError:
        return math.inf if q > 0 else -_LARGEST
    if Fraction(r) < q:
        r = math.nextafter(r, math.inf)
    return r


def round_down_double(q: Fraction) -> float:
    """The greatest double ``<= q``: ``-inf`` when ``q`` is below the lowest finite
    double, ``DBL_MAX`` when ``q`` is above the largest one."""
    return -round_up_double(-q)
