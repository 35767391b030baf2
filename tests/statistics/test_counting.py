"""Count and histogram: the Prepared they hand to the release, and their refusals.

The values, Δ, range, budget share and reported fields are derived by hand for small
datasets (docs/statistics.md): a count is Δ = 1 under add-remove (one record more or
less), capped at the public N, and public (Δ = 0, no ε) under replace; a histogram's
bins are Δ = 1 each, with the full ε under add-remove (parallel composition) and ε/2
under replace (a replaced record moves between two bins).  Every bad option is
refused before anything is drawn, with a ParameterError whose message names the
parameter and the rule and whose ``parameter`` is the Python keyword at fault.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from snapcore.statistics.counting import Count, Histogram

from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE
XS = [1.0, 2.5, 3.0, 7.0, -1.0]


def _ds(xs=XS):
    return as_dataset(xs, columns=1)


@pytest.mark.parametrize("cap", [3, 5, 9])
def test_count_under_add_remove_is_capped_with_sensitivity_one(cap):
    p = Count().prepare(_ds(), data_bounds=None, n=cap, relation=ADD_REMOVE)
    assert p.values == (Fraction(min(len(XS), cap)),)
    # One record added or removed moves the capped count by at most 1, and removing a
    # record from 5 <= cap records moves it by exactly 1: Δ = 1 is tight.
    assert p.sensitivity == 1
    assert p.value_range == (0, cap) and p.epsilon_share == 1
    assert p.statistic == "count" and p.n == cap and p.labels == ("count",)
    assert len(p.notes) == 1 and p.notes[0].startswith(f"n = {cap} is a public upper bound")
    assert "Δ = 1" in p.derivation


def test_count_under_replace_is_public():
    p = Count().prepare(_ds(), data_bounds=None, n=None, relation=REPLACE)
    assert p.values == (Fraction(len(XS)),) and p.sensitivity == 0
    assert p.value_range == (len(XS), len(XS)) and p.n == len(XS)
    assert p.statistic == "count"
    assert p.notes[1] == "the count is public under this relation: no noise, no ε"
    assert p.derivation == "under the replace relation every neighbour has n records: Δ = 0"


@pytest.mark.parametrize(
    ("relation", "n", "counts", "share"),
    [
        # bins [0, 2), [2, 4]: -1.0 clamps into the first, 7.0 into the last
        (REPLACE, None, (2, 3), Fraction(1, 2)),
        (ADD_REMOVE, 9, (2, 3), Fraction(1)),
        (ADD_REMOVE, 2, (2, 2), Fraction(1)),  # counts capped at N
    ],
)
def test_histogram_counts_share_and_fields(relation, n, counts, share):
    p = Histogram().prepare(_ds(), data_bounds=None, n=n, relation=relation, bins=[0.0, 2.0, 4.0])
    assert p.values == counts and p.sensitivity == 1 and p.epsilon_share == share
    n_used = len(XS) if n is None else n
    assert p.value_range == (0, n_used) and p.n == n_used and p.statistic == "histogram"
    assert list(p.labels) == ["< 2", "≥ 2"]


def test_histogram_drops_values_outside_the_edges_on_request():
    p = Histogram().prepare(
        _ds(),
        data_bounds=None,
        n=None,
        relation=REPLACE,
        bins=[0.0, 2.0, 4.0],
        out_of_range="drop",
    )
    assert p.values == (1, 2) and list(p.labels) == ["[0, 2)", "[2, 4]"]


def test_histogram_categories_with_and_without_other():
    ds = as_dataset(["a", "b", "a", "c"], columns=1)
    p = Histogram().prepare(ds, data_bounds=None, n=None, relation=REPLACE, categories=["a", "b"])
    assert p.values == (2, 1) and list(p.labels) == ["a", "b"]
    p = Histogram().prepare(
        ds, data_bounds=None, n=None, relation=REPLACE, categories=["a", "b"], other=True
    )
    assert p.values == (2, 1, 1) and list(p.labels) == ["a", "b", "other"]


BAD_HISTOGRAM = [
    (
        {},
        "statistic 'histogram' needs exactly one of bins= (the bin edges) and categories= "
        "(the category values), got neither",
        "bins",
    ),
    (
        {"bins": [0.0, 1.0], "categories": ["a"]},
        "statistic 'histogram' needs exactly one of bins= (the bin edges) and categories= "
        "(the category values), got both",
        "categories",
    ),
    ({"bins": "ab"}, "bins must be a sequence of bin edges, got 'ab'", "bins"),
    ({"bins": 5}, "bins must be a sequence of bin edges, got 5", "bins"),
    ({"bins": [1.0]}, "bins must have at least 2 edges, got 1", "bins"),
    ({"bins": [1, 2, 2]}, "bins must be strictly increasing, got [1, 2, 2]", "bins"),
    ({"bins": [2.0, 1.0, 3.0]}, "bins must be strictly increasing, got [2.0, 1.0, 3.0]", "bins"),
    ({"bins": [0.0, 1.0, 1.0]}, "bins must be strictly increasing, got [0.0, 1.0, 1.0]", "bins"),
    ({"bins": [0.0, 2.0, 1.0]}, "bins must be strictly increasing, got [0.0, 2.0, 1.0]", "bins"),
    # edges are read exactly: a 2-D array, an int or a rational that is not a double,
    # and NaN are refused, never rounded into a float array
    (
        {"bins": np.array([[0.0, 1.0], [2.0, 3.0]])},
        "bins[0] must be a finite real number read exactly (int, float, Fraction, Decimal, a "
        "NumPy integer or float, or a gmpy2 mpz/mpq/mpfr); got numpy.ndarray array([0., 1.]) "
        "(numpy.ndarray)",
        "bins",
    ),
    (
        {"bins": np.array([0, 2**53 + 1])},
        "bins[1] must be exactly representable as a double, got np.int64(9007199254740993) "
        "(numpy.int64)",
        "bins",
    ),
    (
        {"bins": [Fraction(1, 3), Fraction(2, 3)]},
        "bins[0] must be exactly representable as a double, got Fraction(1, 3) "
        "(fractions.Fraction)",
        "bins",
    ),
    (
        {"bins": [0.0, float("nan")]},
        "bins[1] must be a finite real number read exactly (int, float, Fraction, Decimal, a "
        "NumPy integer or float, or a gmpy2 mpz/mpq/mpfr); got float nan (a NaN float)",
        "bins",
    ),
    ({"categories": [1, float("nan")]}, "categories[1] is a missing value (nan)", "categories"),
    ({"categories": "abc"}, "categories must be a sequence of values, got 'abc'", "categories"),
    ({"categories": 3}, "categories must be a sequence of values, got 3", "categories"),
    ({"categories": []}, "categories must not be empty", "categories"),
    ({"categories": [1, None]}, "categories[1] is a missing value (None)", "categories"),
    (
        {"categories": [1, 1.0]},
        "categories must be distinct under exact-value matching (numbers by their exact "
        "value, strings as strings): categories[0] = 1 and categories[1] = 1.0 are the "
        "same category",
        "categories",
    ),
    (
        {"categories": [1, object()]},
        "categories[1]: a category must be a number (int, float, Fraction, Decimal, a NumPy "
        "integer or float, or a gmpy2 mpz/mpq/mpfr), a string or a bool; got object",
        "categories",
    ),
    (
        {"bins": [0.0, 1.0], "other": True},
        "other=True is for categories=; with bins=, values outside the edges are clamped "
        "into the edge bins (or dropped with out_of_range='drop')",
        "other",
    ),
    (
        {"categories": [1], "out_of_range": "drop"},
        "out_of_range= is for bins=; for categories= use other=True",
        "out_of_range",
    ),
    (
        {"categories": ["other"], "other": True},
        "other=True adds a bin labelled 'other'; a category has that label",
        "other",
    ),
    ({"bins": [0.0, 1.0], "other": 1}, "other must be True or False, got 1", "other"),
    (
        {"bins": [0.0, 1.0], "out_of_range": "x"},
        "out_of_range must be 'clamp' or 'drop', got 'x'",
        "out_of_range",
    ),
]


@pytest.mark.parametrize(("options", "message", "parameter"), BAD_HISTOGRAM)
def test_bad_histogram_options_are_refused_by_name(options, message, parameter):
    for call in ("prepare", "partial"):
        with pytest.raises(ParameterError, match=f"^{re.escape(message)}$") as info:
            if call == "prepare":
                Histogram().prepare(_ds(), data_bounds=None, n=None, relation=REPLACE, **options)
            else:
                Histogram().partial(_ds(), data_bounds=None, **options)
        assert info.value.parameter == parameter


def test_bounds_are_refused_by_count_and_histogram():
    bounds = ((0.0, 1.0),)
    msg = "statistic 'count' does not use bounds; leave data_bounds unset"
    for call in (
        lambda: Count().partial(_ds(), data_bounds=bounds),
        lambda: Count().finalize((3,), data_bounds=bounds, n=None, relation=REPLACE),
    ):
        with pytest.raises(ParameterError, match=f"^{re.escape(msg)}$") as info:
            call()
        assert info.value.parameter == "data_bounds"
    msg = (
        "statistic 'histogram' takes its range from bins= (or categories=); "
        "leave data_bounds unset"
    )
    with pytest.raises(ParameterError, match=f"^{re.escape(msg)}$") as info:
        Histogram().partial(_ds(), data_bounds=bounds, bins=[0.0, 1.0])
    assert info.value.parameter == "data_bounds"


#: Records that are not doubles (exact rationals): the histogram's exact path.
EXACT = [
    Fraction(1, 3),
    Fraction(-1, 3),
    Fraction(0),
    Fraction(2),
    Fraction(4),
    Fraction(13, 3),
    Decimal("0.1"),
    Fraction(7, 2),
]


@pytest.mark.parametrize(
    ("out_of_range", "counts"),
    [
        # [0, 2): -1/3 (clamped to 0), 1/3, 0, 0.1;  [2, 4]: 2, 4, 13/3 (clamped), 7/2
        ("clamp", (4, 4)),
        # -1/3 and 13/3 dropped; 0 and 4 are edges, counted
        ("drop", (3, 3)),
    ],
)
def test_histogram_of_exact_records_clamps_or_drops_at_the_edges(out_of_range, counts):
    ds = as_dataset(EXACT, columns=1)
    assert ds.column(0).doubles is None  # the exact path, not the array one
    state = Histogram().partial(
        ds, data_bounds=None, bins=[0.0, 2.0, 4.0], out_of_range=out_of_range
    )
    assert state == (len(EXACT), *counts)
    p = Histogram().prepare(
        ds, data_bounds=None, n=None, relation=REPLACE, bins=[0.0, 2.0, 4.0],
        out_of_range=out_of_range,
    )  # fmt: skip
    assert p.values == counts


TAIL = (
    "; bins [e_i, e_{i+1}), the last closed; each record is in at most one bin, a bin "
    "changes by at most 1 (Δ = 1) and holds at most n records (B′ = n)"
)


@pytest.mark.parametrize(
    ("out_of_range", "counted"),
    [
        (
            "clamp",
            "values below -1 count in the first bin and values above 4 in the last "
            "(clamped: the labels say so with < and ≥)",
        ),
        ("drop", "values outside [-1, 4] are not counted (out_of_range='drop')"),
    ],
)
def test_histogram_derivation_names_the_outer_edges(out_of_range, counted):
    p = Histogram().prepare(
        _ds(), data_bounds=None, n=None, relation=REPLACE, bins=[-1.0, 2.0, 3.0, 4.0],
        out_of_range=out_of_range,
    )  # fmt: skip
    assert p.notes[1] == counted and p.derivation == counted + TAIL


def test_histogram_finalize_refuses_bounds_and_add_remove_needs_a_cap():
    with pytest.raises(ParameterError, match=r"^statistic 'histogram' takes its range") as info:
        Histogram().finalize(
            (3, 1, 2), data_bounds=((0.0, 1.0),), n=None, relation=REPLACE, bins=[0.0, 2.0, 4.0]
        )
    assert info.value.parameter == "data_bounds"
    with pytest.raises(ParameterError, match=r"^statistic 'histogram' under the add-remove"):
        Histogram().prepare(_ds(), data_bounds=None, n=None, relation=ADD_REMOVE, bins=[0.0, 1.0])


# -- category labels: distinct categories print differently ---------------------------


@pytest.mark.parametrize(
    ("cats", "labels"),
    [
        ([1, "a", True], ("1", "a", "True")),  # no two alike: as str
        ([1, "1"], ("1", "'1'")),
        ([True, "True", 2], ("True", "'True'", "2")),
        ([0.1, np.float32(0.1)], ("0.1", "0.10000000149011612")),
        ([Fraction(1, 3), float(Fraction(1, 3)), np.str_("x")],
         ("1/3", "0.3333333333333333", "x")),
        ([Decimal("0.5"), "0.5", 10**5000], ("0.5", "'0.5'", f"{10**5000:#x}")),
    ],
)  # fmt: skip
def test_category_labels_are_distinct_for_distinct_categories(cats, labels):
    from snapcore.statistics.counting import category_labels

    assert category_labels(cats) == labels
    p = Histogram().prepare(
        as_dataset(list(cats) * 2 + [cats[0]]),
        data_bounds=None,
        n=None,
        relation=Neighbouring.REPLACE,
        categories=cats,
    )
    assert tuple(p.labels) == labels and len(set(p.labels)) == len(cats)
    assert p.values == (3, *[2] * (len(cats) - 1))  # each record in its own bin


def test_other_is_refused_when_a_category_label_is_other():
    with pytest.raises(ParameterError, match="labelled 'other'"):
        Histogram().prepare(
            as_dataset(["other"]), data_bounds=None, n=None,
            relation=Neighbouring.REPLACE, categories=["other"], other=True,
        )  # fmt: skip


# -- parameters read by the value rules, whatever the container -----------------------

_LD_WIDE = np.finfo(np.longdouble).nmant > 52


def _containers(items, dtype=None):
    """The same items in every container a parameter may come in."""
    arr = np.array(items, dtype=dtype) if dtype is not None else np.array(items)
    forms = {
        "list": list(arr),
        "tuple": tuple(arr),
        "ndarray": arr,
        "object-ndarray": np.array(list(arr), dtype=object),
        "masked": np.ma.array(arr),
    }
    import pandas as pd

    forms["pandas"] = pd.Series(arr)
    return forms


@pytest.mark.skipif(not _LD_WIDE, reason="long double is a double on this platform")
def test_long_double_edges_are_refused_in_every_container_alike():
    ld = np.array([0, 1, 2], dtype=np.longdouble)
    ld[1] += np.longdouble(2) ** -60  # not a double: 1 + 2**-60
    assert Fraction(*ld[1].as_integer_ratio()) == 1 + Fraction(1, 2**60)
    messages = set()
    for name, bins in _containers(ld, np.longdouble).items():
        with pytest.raises(ParameterError) as e:
            _hist(bins=bins)
        assert e.value.parameter == "bins", name
        messages.add(str(e.value))
    assert len(messages) == 1 and "bins[1] must be exactly representable" in messages.pop()


def test_long_double_edges_that_are_doubles_give_the_float_edges_release():
    edges = [0.0, 0.1, 0.5, 1.0]
    want = _hist(bins=edges)
    for name, bins in _containers(edges, np.longdouble).items():
        got = _hist(bins=bins)
        assert (got.values, tuple(got.labels)) == (want.values, tuple(want.labels)), name


@pytest.mark.skipif(not _LD_WIDE, reason="long double is a double on this platform")
def test_long_double_categories_are_read_exactly_in_every_container():
    one_plus = np.longdouble(1) + np.longdouble(2) ** -60
    cats = np.array([1, one_plus], dtype=np.longdouble)
    records = [1.0, 1.0, np.longdouble(one_plus)]
    for name, given in _containers(cats, np.longdouble).items():
        p = _hist(data=records, categories=given)
        assert p.values == (2, 1), name  # 1 + 2**-60 is not the category 1


def _hist(data=(0.05, 0.3, 0.7, 0.7), **options):
    return Histogram().prepare(
        as_dataset(list(data)), data_bounds=None, n=None, relation=Neighbouring.REPLACE,
        **options,
    )  # fmt: skip
