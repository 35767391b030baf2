"""The statistic protocol's own checks (``snapcore.plugins._statistic``), against the rules.

A :class:`~snapcore.plugins._statistic.Prepared` is what the mechanism trusts: its validators
must refuse a sensitivity below 0, a range with ``lo > hi``, a budget share outside
(0, 1], values that are not exact numbers and labels that do not match.  The request
helpers (``check_n``, ``resolve_n``, ``one_column_bounds``, ``check_data_bounds``,
``resolve_statistic``, ``resolve_relation``, ``Neighbouring.parse``) refuse bad input
with a ParameterError whose message names the parameter and the rule and whose
``parameter`` is the keyword at fault.  ``merge`` and ``accumulate`` are checked as
properties: any split of the records into chunks gives the state of the whole, and
``clamp_fraction`` is ``min(max(q, lo), hi)`` on exact rationals.  Every built-in
statistic's Prepared names it and its n (with the note saying where n comes from), and
a wrong n is refused.
"""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from snapcore.statistics.counting import Count, Histogram
from snapcore.statistics.moments import Covariance, Mean, Sum, Variance

from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError
from snapcore.plugins._manager import get_registries, resolve_statistic
from snapcore.plugins._statistic import (
    Prepared,
    Statistic,
    accumulate,
    check_data_bounds,
    check_n,
    clamp_fraction,
    one_column_bounds,
    resolve_n,
    resolve_relation,
)

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE
HOLD = "Prepared.values must hold Fractions, ints or finite floats, got "
BASE = dict(
    statistic="s",
    relation=REPLACE,
    values=(Fraction(1),),
    labels=("s",),
    sensitivity=1,
    value_range=(0, 2),
)


def _raises(message: str, parameter: str | None = None, exc: type = ParameterError):
    class _Check:
        def __enter__(self):
            self._ctx = pytest.raises(exc, match=f"^{re.escape(message)}$")
            self._info = self._ctx.__enter__()

        def __exit__(self, *a):
            out = self._ctx.__exit__(*a)
            if exc is ParameterError:
                assert self._info.value.parameter == parameter
            return out

    return _Check()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"labels": ("a", "b")},
         "Prepared.labels must have one label per value"),
        ({"sensitivity": -1}, "Prepared.sensitivity must be >= 0, got -1"),
        ({"sensitivity": Fraction(-1, 10**30)}, "Prepared.sensitivity must be >= 0, got -1/10"
         + "0" * 29),
        ({"value_range": (3, 2)}, "Prepared.value_range must have lo <= hi, got 3, 2"),
        ({"epsilon_share": 0}, "Prepared.epsilon_share must be in (0, 1], got 0"),
        ({"epsilon_share": Fraction(3, 2)}, "Prepared.epsilon_share must be in (0, 1], got 3/2"),
        ({"values": ()}, "Prepared.values must be a non-empty tuple, got an empty tuple"),
        ({"values": [1]}, "Prepared.values must be a non-empty tuple, got list"),
        ({"values": (float("nan"),)}, HOLD + "a non-finite float"),
        ({"values": (float("inf"),)}, HOLD + "a non-finite float"),
        ({"values": (True,)}, HOLD + "bool"),
        ({"values": ("1",)}, HOLD + "str"),
        ({"values": (1, "1")}, HOLD + "str"),
    ],
)  # fmt: skip
def test_prepared_refuses_what_the_mechanism_cannot_trust(fields, message):
    if "labels" not in fields:  # one label per value, so that only the rule tested fails
        fields["labels"] = ("s",) * max(len(fields.get("values", (1,))), 1)
    fields = {**BASE, **fields}
    with _raises(message):
        Prepared(**fields)


@pytest.mark.parametrize(
    ("fields", "b_prime", "vector"),
    [
        ({"sensitivity": 0, "value_range": (-3, 2)}, 3, False),  # Δ = 0 is allowed
        ({"epsilon_share": 1, "value_range": (-1, 5)}, 5, False),
        ({"epsilon_share": Fraction(1, 2), "values": (1, 2), "labels": ("a", "b")}, 2, True),
        ({"values": (Fraction(1, 3), 2, 0.5), "labels": ("a", "b", "c")}, 2, True),
        ({"value_range": (2, 2)}, 2, False),
    ],
)
def test_prepared_accepts_exact_values_and_reports_b_prime(fields, b_prime, vector):
    p = Prepared(**{**BASE, **fields})
    assert p.b_prime == b_prime and p.is_vector is vector


def test_check_n():
    assert check_n(None) is None
    got = check_n(np.int64(3))
    assert got == 3 and type(got) is int
    assert check_n(0) == 0
    for bad, shown in ((True, "bool True"), (-1, "int -1"), (3.0, "float 3.0")):
        with _raises(f"n must be an int >= 0, got {shown}", "n"):
            check_n(bad)


def test_resolve_n_under_each_relation():
    n, note = resolve_n(3, None, REPLACE, "x")
    assert (
        n == 3 and note == "n = 3 is the number of records; under the replace relation n is public"
    )
    assert resolve_n(3, 3, REPLACE, "x") == (3, "n = 3 (public under the replace relation)")
    msg = (
        "n must equal the number of records under the replace relation (n is public), "
        "got n=4, which differs from it"
    )
    with _raises(msg, "n"):
        resolve_n(3, 4, REPLACE, "x")
    n, note = resolve_n(3, 10, ADD_REMOVE, "x")
    assert n == 10 and note.startswith("n = 10 is a public upper bound on the number of records")
    msg = (
        "statistic 'x' under the add-remove relation needs n=, a public upper bound on the "
        "number of records (the number itself is private; any public cap will do, e.g. the "
        "population size, and a larger cap only widens the clamp interval)"
    )
    with _raises(msg, "n"):
        resolve_n(3, None, ADD_REMOVE, "x")


def test_bounds_checks():
    assert one_column_bounds(((0.0, 1.0),), "mean") == (0.0, 1.0)
    with _raises(
        "statistic 'mean' needs data_bounds=(lower, upper) on the data values", "data_bounds"
    ):
        one_column_bounds(None, "mean")
    with _raises(
        "statistic 'mean' reads one column and needs one (lower, upper) pair, got 2 pairs",
        "data_bounds",
    ):
        one_column_bounds(((0.0, 1.0), (0.0, 1.0)), "mean")
    assert check_data_bounds(None, Count()) is None
    assert check_data_bounds((0.0, 1.0), Mean()) == ((0.0, 1.0),)
    assert check_data_bounds([0, 1], Sum()) == ((0.0, 1.0),)
    two = ((0.0, 1.0), (2.0, 3.0))
    assert check_data_bounds(two, Covariance()) == two
    assert check_data_bounds([[0, 1], (2, 3)], Covariance()) == two
    with _raises(
        "statistic 'mean' needs data_bounds= on the data values: (lower, upper)", "data_bounds"
    ):
        check_data_bounds(None, Mean())
    with _raises(
        "statistic 'covariance' needs data_bounds= on the data values: one (lower, upper) pair "
        "per column",
        "data_bounds",
    ):
        check_data_bounds(None, Covariance())
    for bad, shown in [
        (((0.0, 1.0),), "((0.0, 1.0),)"),
        ((0.0, 1.0), "(0.0, 1.0)"),
        ("ab", "'ab'"),
        (((0.0, 1.0), "ab"), "((0.0, 1.0), 'ab')"),
        (((0.0, 1.0), (2.0, 3.0), (4.0, 5.0)), "((0.0, 1.0), (2.0, 3.0), (4.0, 5.0))"),
    ]:
        with _raises(
            "statistic 'covariance' reads 2 columns and needs one (lower, upper) pair per column, "
            f"got data_bounds={shown}",
            "data_bounds",
        ):
            check_data_bounds(bad, Covariance())
    # a one-column statistic takes one bare (lower, upper) pair (docs/statistics.md)
    for bad, rule in [
        (((0.0, 1.0),), "must be a pair (lower, upper), got 1 items"),
        ("ab", "must be a pair (lower, upper), got str 'ab'"),
        ((1.0, 0.0), "must satisfy lower < upper, got lower=1.0, upper=0.0"),
    ]:
        with _raises(f"data_bounds {rule}", "data_bounds"):
            check_data_bounds(bad, Mean())
    with pytest.raises(ParameterError) as info:  # a pair that is not exact doubles
        check_data_bounds(((0.0, 1.0), (0.0, Fraction(1, 3))), Covariance())
    assert info.value.parameter == "data_bounds" and "data_bounds[1]" in str(info.value)


def test_resolving_a_statistic_and_a_relation():
    assert isinstance(resolve_statistic("count"), Count)
    assert isinstance(resolve_statistic(Count), Count)
    c = Count()
    assert resolve_statistic(c) is c
    # every installed statistic is named: the built-ins and any plugin's
    installed = sorted(get_registries().statistics.names())
    assert {"count", "covariance", "histogram", "mean", "sum", "variance"} <= set(installed)
    with _raises(
        f"statistic must be a statistic name {installed} or a Statistic, got int 3",
        "statistic",
    ):
        resolve_statistic(3)
    assert resolve_relation(Count(), None) is ADD_REMOVE  # the statistic's first
    assert resolve_relation(Histogram(), None) is REPLACE
    assert resolve_relation(Count(), "replace") is REPLACE
    assert Neighbouring.parse(ADD_REMOVE) is ADD_REMOVE
    assert Neighbouring.parse("add-remove") is ADD_REMOVE
    with _raises("statistic 'mean' supports relation ['replace'], got 'add-remove'", "relation"):
        resolve_relation(Mean(), "add-remove")
    with _raises("relation must be one of ['replace', 'add-remove'], got 'x'", "relation"):
        Neighbouring.parse("x")
    assert REPLACE.description == "bounded: n public, one record replaced"
    assert ADD_REMOVE.description == "unbounded: add or remove one record"


def test_a_statistic_without_the_protocol_says_so():
    class Bare(Statistic):
        name = "bare"

    class Whole(Statistic):
        name = "whole"

        def partial(self, chunk, *, data_bounds, **options):
            return (chunk.size,)

        def finalize(self, state, *, data_bounds, n, relation, **options):
            return Prepared(**BASE)

    b = Bare()
    assert b.mergeable is False and Whole().mergeable is True and repr(b) == "<statistic 'bare'>"
    with _raises("statistic 'bare' implements neither prepare() nor partial() and finalize()",
                 exc=NotImplementedError):  # fmt: skip
        b.prepare(as_dataset([1.0], columns=1), data_bounds=None, n=None, relation=REPLACE)
    with _raises("statistic 'bare' does not implement partial()", exc=NotImplementedError):
        b.partial(as_dataset([1.0], columns=1), data_bounds=None)
    with _raises("statistic 'bare' does not implement finalize()", exc=NotImplementedError):
        b.finalize((1,), data_bounds=None, n=None, relation=REPLACE)
    with _raises("statistic 'count' cannot merge states of lengths 2 and 1"):
        Count().merge((1, 2), (3,))


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(st.floats(-10, 10, allow_nan=False), max_size=12),
    cuts=st.lists(st.integers(0, 12), max_size=4),
)
def test_any_split_into_chunks_gives_the_state_of_the_whole(xs, cuts):
    """``merge`` adds states element by element and ``accumulate`` merges chunks in
    order, so every split (including empty chunks, and none at all) gives the state of
    one chunk of all records."""
    edges = sorted({0, len(xs), *(min(c, len(xs)) for c in cuts)})
    chunks = [as_dataset(xs[a:b], columns=1) for a, b in itertools.pairwise(edges)]
    for stat, kw in (
        (Count(), {}),
        (Sum(), {"data_bounds": ((-4.0, 4.0),)}),
        (Histogram(), {"bins": [-5.0, 0.0, 5.0]}),
    ):
        bounds = kw.pop("data_bounds", None)
        whole = stat.partial(as_dataset(xs, columns=1), data_bounds=bounds, **kw)
        assert accumulate(stat, chunks, data_bounds=bounds, **kw) == whole
        assert accumulate(stat, iter(chunks), data_bounds=bounds, **kw) == whole
        if not xs:
            assert accumulate(stat, [], data_bounds=bounds, **kw) == whole
        a = stat.partial(as_dataset(xs[:3], columns=1), data_bounds=bounds, **kw)
        b = stat.partial(as_dataset(xs[3:], columns=1), data_bounds=bounds, **kw)
        assert stat.merge(a, b) == tuple(x + y for x, y in zip(a, b, strict=True)) == whole


fracs = st.fractions(max_denominator=10**6)


@given(q=fracs, lo=fracs, hi=fracs)
def test_clamp_fraction_is_min_max(q, lo, hi):
    lo, hi = min(lo, hi), max(lo, hi)
    assert clamp_fraction(q, lo, hi) == min(max(q, lo), hi)


# -- the built-ins declare the statistic and n, and refuse a wrong n --------------------
# The fields a release reports besides the values (``statistic``, ``n``) against the
# request, for data whose number of records is known here; a public n other than the
# number of records under replace, too few records, and no cap under add-remove are
# refused with an error naming the statistic or the rule.

ONE_COLUMN = ((0.0, 4.0),)
TWO_COLUMNS = ((0.0, 4.0), (-1.0, 1.0))
BUILTIN_CASES = [
    (Sum(), [1.0, 2.5, 3.0], ONE_COLUMN, 1, {}),
    (Mean(), [1.0, 2.5, 3.0], ONE_COLUMN, 1, {}),
    (Variance(), [1.0, 2.5, 3.0], ONE_COLUMN, 1, {}),
    (Covariance(), [(1.0, 0.5), (2.5, -0.5), (3.0, 0.0)], TWO_COLUMNS, 2, {}),
    (Count(), [1.0, 2.5, 3.0], None, 0, {}),
    (Histogram(), [1.0, 2.5, 3.0], None, 1, {"bins": [0.0, 2.0, 4.0]}),
]
BUILTIN_IDS = [c[0].name for c in BUILTIN_CASES]


def _prepare(stat, xs, bounds, columns, opts, relation=REPLACE, n=None):
    ds = as_dataset(xs, columns=columns)
    return stat.prepare(ds, data_bounds=bounds, n=n, relation=relation, **opts)


@pytest.mark.parametrize(
    ("stat", "xs", "bounds", "columns", "opts"), BUILTIN_CASES, ids=BUILTIN_IDS
)
def test_prepared_names_the_statistic_and_n(stat, xs, bounds, columns, opts):
    for n in (None, len(xs)):
        p = _prepare(stat, xs, bounds, columns, opts, n=n)
        assert p.statistic == stat.name
        assert p.n == len(xs)
        # the note saying where n comes from (public under the replace relation)
        assert p.notes[0].startswith(f"n = {len(xs)} ")
        assert "public" in p.notes[0]


@pytest.mark.parametrize(
    ("stat", "xs", "bounds", "columns", "opts"), BUILTIN_CASES, ids=BUILTIN_IDS
)
def test_a_public_n_other_than_the_records_is_refused(stat, xs, bounds, columns, opts):
    for n in (len(xs) - 1, len(xs) + 1):
        with pytest.raises(ParameterError, match=r"^n must equal the number of records"):
            _prepare(stat, xs, bounds, columns, opts, n=n)


@pytest.mark.parametrize(
    ("stat", "xs", "bounds", "columns", "need"),
    [
        (Mean(), [], ONE_COLUMN, 1, 1),
        (Variance(), [2.0], ONE_COLUMN, 1, 2),
        (Covariance(), [(1.0, 0.5)], TWO_COLUMNS, 2, 2),
    ],
    ids=["mean", "variance", "covariance"],
)
def test_too_few_records_are_refused_by_name(stat, xs, bounds, columns, need):
    # n taken from the data is not shown; a declared n is
    msg = rf"^statistic '{stat.name}' needs n >= {need} records$"
    with pytest.raises(ParameterError, match=msg):
        _prepare(stat, xs, bounds, columns, {})
    msg = rf"^statistic '{stat.name}' needs n >= {need} records, got n={len(xs)}$"
    with pytest.raises(ParameterError, match=msg):
        _prepare(stat, xs, bounds, columns, {}, n=len(xs))


@pytest.mark.parametrize("stat", [Sum(), Count()], ids=["sum", "count"])
def test_add_remove_without_a_cap_names_the_statistic(stat):
    bounds, columns = (ONE_COLUMN, 1) if stat.name == "sum" else (None, 0)
    with pytest.raises(ParameterError, match=rf"^statistic '{stat.name}' under the add-remove"):
        _prepare(stat, [1.0, 2.0], bounds, columns, {}, relation=ADD_REMOVE)


@pytest.mark.parametrize("x", [2.5, -3.0, 7.0])
def test_mean_of_one_record_is_that_record_clamped(x):
    """n = 1 is enough for a mean (n >= 1): the value is the one clamped record, Δ = w."""
    p = _prepare(Mean(), [x], ONE_COLUMN, 1, {})
    assert p.values == (min(max(Fraction(x), Fraction(0)), Fraction(4)),)
    assert p.sensitivity == 4 and p.n == 1


def test_an_output_domain_projects_onto_whole_numbers_and_its_interval():
    from snapcore.plugins._statistic import OutputDomain

    counts = OutputDomain(lower=0, upper=10, integral=True)
    # hand-derived: round half to even, then clamp to [0, 10]
    assert [counts.project(v) for v in (-3.5, -0.5, 0.5, 1.5, 2.25, 9.5, 10.5, 42.0)] == [
        0,
        0,
        0,
        2,
        2,
        10,
        10,
        10,
    ]
    assert all(type(counts.project(v)) is int for v in (-1.0, 3.0))
    third = OutputDomain(lower=0, upper=Fraction(1, 3))
    # an end that is no double: the nearest double inside
    assert third.project(5.0) == 0.3333333333333333 and Fraction(third.project(5.0)) < Fraction(
        1, 3
    )
    assert third.project(-1e300) == 0.0 and third.project(0.25) == 0.25
    with pytest.raises(ParameterError):
        OutputDomain(lower=Fraction(1, 3), upper=Fraction(2, 3), integral=True)
