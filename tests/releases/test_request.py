"""One call of snapcore.release as one value (snapcore.releases._request.ReleaseRequest).

How :func:`snapcore.release` checks its keywords into a request is tested in
``tests/releases/test_api.py`` and ``tests/releases/test_grouped.py``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest

from snapcore.data._missing import check_missing_policy
from snapcore.data._neighbouring import Neighbouring
from snapcore.plugins._manager import resolve_statistic
from snapcore.releases._request import ReleaseRequest


def request(**changes: Any) -> ReleaseRequest:
    fields: dict[str, Any] = {
        "statistic": resolve_statistic("sum"),
        "data": [1.0, 2.0],
        "epsilon": Fraction(1),
        "data_bounds": (0, 10),
        "gamma": Fraction(1, 20),
        "clamp_bounds": None,
        "n": None,
        "relation": Neighbouring.REPLACE,
        "column": None,
        "by": None,
        "keys": None,
        "group_sizes": None,
        "missing": check_missing_policy("error", None, Neighbouring.REPLACE),
        "backend": "mpfr",
        "source": None,
        "budget": None,
        "precision": None,
        "timing": None,
        "options": {},
    }
    return ReleaseRequest(**(fields | changes))


@pytest.mark.parametrize(
    ("changes", "grouped"),
    [
        ({}, False),
        ({"column": "age"}, False),
        ({"by": "sex"}, True),
        ({"keys": [1, 2]}, True),
        ({"group_sizes": {1: 3}}, True),
        ({"by": "sex", "keys": [1, 2], "group_sizes": {1: 3, 2: 4}}, True),
    ],
    ids=str,
)
def test_grouped_when_by_keys_or_group_sizes_is_given(changes, grouped):
    assert request(**changes).grouped is grouped


def test_a_request_is_frozen_and_compared_by_identity():
    """The private data may be an array or a list: a request is neither compared nor
    hashed by its fields, so holding them never fails."""
    arr = request(data=np.arange(3.0))
    same = request(data=np.arange(3.0))
    assert arr == arr and arr != same  # no elementwise comparison of the data
    assert len({request(), request()}) == 2  # a list as data: hashable all the same
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        arr.epsilon = Fraction(2)  # type: ignore[misc]


def test_a_request_holds_tuples_and_read_only_copies():
    """A one-shot key generator is read once; the caller's mappings may change after."""
    options: dict[str, Any] = {"bins": 3}
    sizes = {1: 3, 2: 4}
    r = request(by="sex", keys=(k for k in [1, 2]), group_sizes=sizes, options=options)
    options["bins"] = 5
    sizes[1] = 9
    assert r.keys == (1, 2) and r.keys == (1, 2)
    assert r.options["bins"] == 3 and r.group_sizes is not None and r.group_sizes[1] == 3
    with pytest.raises(TypeError):
        r.options["bins"] = 4  # type: ignore[index]


def test_release_checks_n_and_the_data_bounds_into_the_request():
    """release() checks n (one per key with by=) and the data bounds once, before any
    data is read."""
    import snapcore
    from snapcore.errors import ParameterError

    # object() is no data at all: only a check made before the data are read names n or
    # the data bounds.
    unreadable = object()
    with pytest.raises(ParameterError, match=r"^n must be an int >= 0") as exc:
        snapcore.release("count", unreadable, epsilon=1, n=-1, relation="add-remove")
    assert exc.value.parameter == "n"
    with pytest.raises(ParameterError, match=r"^data_bounds must satisfy lower < upper") as exc:
        snapcore.release("sum", unreadable, epsilon=1, data_bounds=(3, 1))
    assert exc.value.parameter == "data_bounds"
    with pytest.raises(ParameterError, match=r"^n must be an int >= 0") as exc:
        snapcore.release("count", unreadable, by="s", keys=[1], n={1: -1}, epsilon=1)
    assert exc.value.parameter == "n"


def test_a_request_checks_threads():
    """``threads`` is None (the default) or an int >= 1; anything else is refused with
    the rule and the type."""
    from snapcore.errors import ParameterError

    assert request().threads is None
    assert request(threads=4).threads == 4
    for bad, shown in ((0, "int 0"), (2.5, "float"), (True, "bool")):
        with pytest.raises(ParameterError) as exc:
            request(threads=bad)
        assert str(exc.value) == f"threads must be None or an int >= 1, got {shown}"
