"""Two distinctive plants of private data, for tests that an error depends on no
private value, length or count: a value (above 2**53), a number of digits (above
Python's 4,300-digit limit on ``int(str)``) and a number of records, each different
between the two plants, so the same message for both shows none of them."""

from __future__ import annotations

__all__ = ["PLANTS"]

PLANTS = [
    {"value": 98765432109876543211, "digits": 4321, "count": 7919},
    {"value": 12345678901234567891, "digits": 4409, "count": 6007},
]
