"""One short-decimal rule for every number a person reads (snapcore._display.short)."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, strategies as st

from snapcore import Budget
from snapcore._display import DIGITS, DOUBLE_DIGITS, short
from snapcore.mechanism._mechanism import SnappingMechanism


@given(
    st.fractions(min_value=Fraction(-(10**30)), max_value=Fraction(10**30)).filter(
        lambda q: q != 0
    )
)
def test_short_is_the_correctly_rounded_12_digit_decimal(q: Fraction) -> None:
    text = short(q)
    marked = text.startswith("≈")
    body = text.removeprefix("≈")
    d = Fraction(Decimal(body))  # the decimal printed, exactly
    if q.denominator == 1 and abs(q) < 10**15:
        assert text == str(q)
        return
    num, den = abs(q.numerator), q.denominator
    log2 = num.bit_length() - den.bit_length()
    power_of_two = (num == 1 or den == 1) and num & (num - 1) == 0 and den & (den - 1) == 0
    if power_of_two and not -1074 <= log2 <= 1023:
        assert text == f"{'-' if q < 0 else ''}2**{log2}"
        return
    # Independent reference: the 12-digit decimals either side of q, by integer arithmetic.
    a = abs(q)
    k = 0  # 10**k <= a < 10**(k+1)
    while Fraction(10) ** (k + 1) <= a:
        k += 1
    while Fraction(10) ** k > a:
        k -= 1
    unit = Fraction(10) ** (k + 1 - DIGITS)
    lo = (a // unit) * unit
    hi = lo + unit
    want = lo if (a - lo < hi - a or (a - lo == hi - a and (lo / unit) % 2 == 0)) else hi
    assert abs(d) == want and (d < 0) == (q < 0), (q, text)
    assert marked == (d != q)


def test_the_pains_of_the_issue() -> None:
    b = Budget(1)
    b.spend(0.7)
    assert repr(b) == "Budget(total=1, spent=≈0.7, remaining=≈0.3)"  # not 0.30000000000000004
    assert b.remaining == 1 - Fraction(0.7)  # exact on request
    assert short(Fraction(1, 5)) == "0.2" and short(Fraction(0.4)) == "≈0.4"
    assert short(Fraction(1, 3), exact=True) == "≈0.333333333333 (exactly 1/3)"
    assert short(Fraction(1, 2**25)) == "≈2.98023223877e-8"
    assert short(10**20) == "1e+20" and short(123456789012345) == "123456789012345"
    for eps, delta, shown in ((1, 1, "1"), (0.3, 0.226, "≈0.3")):
        m = SnappingMechanism(epsilon=eps, clamp_bounds=(0, 100), sensitivity=delta)
        text = repr(m.privacy)
        assert not re.search(r"[0-9]{13}", text), text  # no long Fractions or digit runs
        assert text.startswith(f"PrivacyAnalysis(epsilon={shown}, "), text


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=0.0, exclude_min=True))
def test_double_digits_tell_neighbouring_doubles_apart(x: float) -> None:
    up = math.nextafter(x, math.inf)
    if math.isfinite(up):
        assert short(x, digits=DOUBLE_DIGITS) != short(up, digits=DOUBLE_DIGITS)


def test_messages_compare_with_a_limit_at_17_digits() -> None:
    just_above_one = Fraction(1) + Fraction(8, 10**17)
    assert short(just_above_one) == "≈1"
    assert short(just_above_one, digits=DOUBLE_DIGITS) == "≈1.0000000000000001"
    assert short(Fraction(3 * 2**54), digits=DOUBLE_DIGITS) == "5.4043195528445952e+16"


def test_powers_of_two_beyond_the_doubles_are_exact_and_quick() -> None:
    assert short(Fraction(1, 2**1100)) == "2**-1100" and short(-(2**2000)) == "-2**2000"
    assert short(Fraction(1, 1 << (1 << 29))) == "2**-536870912"  # no decimal computed
    assert short(Fraction(2) ** -1074) == "≈4.94065645841e-324"  # a double: decimal
