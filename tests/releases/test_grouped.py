"""Group-by with a public key set (snapcore.releases._grouped)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import numpy as np
import pytest

import snapcore
from snapcore.data._missing import check_missing_policy
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import BudgetExceededError, ParameterError
from snapcore.plugins._manager import resolve_statistic
from snapcore.releases._grouped import GroupedRelease, plan_groups
from snapcore.releases._request import ReleaseRequest

SEX = [1, 2, 2.0, 1, 9, "1", 2]
AGE = [31, 45, 52, 28, 60, 70, 200]
DATA = {"sex": SEX, "age": AGE}


def _exact_group_values(stat_name, data, by, keys, rel, **kw):
    """f(D_g) per key, as each group's release prepares it (before any noise)."""
    stat = resolve_statistic(stat_name)
    bounds = kw.pop("checked_bounds", None)
    request = ReleaseRequest(
        statistic=stat,
        data=data,
        epsilon=Fraction(1),
        data_bounds=bounds,
        gamma=None,
        clamp_bounds=None,
        n=kw.pop("n", None),
        relation=rel,
        column=kw.pop("column", None),
        by=by,
        keys=keys,
        group_sizes=kw.pop("group_sizes", None),
        missing=check_missing_policy("error", None, rel),
        backend="mpfr",
        source=None,
        budget=None,
        precision=None,
        timing=None,
        options={},
    )
    _, preps = plan_groups(
        request,
        lambda ds, n_pub: stat.prepare(ds, data_bounds=bounds, n=n_pub, relation=rel),
    )
    return [p.values for p in preps]


def test_exact_group_values_by_hand():
    # sex 1 (and 1.0 alike; the string "1" is another key): ages 31, 28; sex 2: 45, 52,
    # 200 clamped to 100; key 3 absent; 9 and "1" are not in the key set.
    vals = _exact_group_values(
        "sum", DATA, "sex", [1, 2, 3], Neighbouring.ADD_REMOVE,
        column="age", n=10, checked_bounds=((0.0, 100.0),),
    )  # fmt: skip
    assert vals == [(Fraction(59),), (Fraction(197),), (Fraction(0),)]
    vals = _exact_group_values(
        "mean", DATA, "sex", [1, 2], Neighbouring.REPLACE,
        column="age", group_sizes={1: 2, 2.0: 3}, checked_bounds=((0.0, 100.0),),
    )  # fmt: skip
    assert vals == [(Fraction(59, 2),), (Fraction(197, 3),)]
    vals = _exact_group_values("count", DATA, "sex", ["1", 9], Neighbouring.ADD_REMOVE, n=5)
    assert vals == [(Fraction(1),), (Fraction(1),)]


def test_keys_of_equal_value_and_another_kind_stay_apart():
    # True == 1 == 1.0 in Python, but a bool is its own kind of key: each record's key is
    # matched by kind and exact value however often an equal value of another kind came
    # before it; missing and unmatchable records (NaN, None, a list) join no group.
    nan = float("nan")
    sex = [1, True, 1.0, True, "1", 1, nan, None, [1], Fraction(1), True, 0.5, nan]
    age = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    vals = _exact_group_values(
        "sum", {"sex": sex, "age": age}, "sex", [True, 1, "1", Fraction(1, 2)],
        Neighbouring.ADD_REMOVE, column="age", n=20, checked_bounds=((0.0, 5000.0),),
    )  # fmt: skip
    assert vals == [(Fraction(2 + 8 + 1024),), (Fraction(1 + 4 + 32 + 512),), (16,), (2048,)]


def test_count_by_group_under_replace_is_the_public_size():
    g = snapcore.release(
        "count", DATA, by="sex", keys=[1, 2, 3], group_sizes={1: 2, 2: 3, 3: 0},
        relation="replace", epsilon=1,
    )  # fmt: skip
    assert isinstance(g, GroupedRelease)
    assert g.values == {1: 2, 2: 3, 3: 0}
    assert all(type(v) is int for v in g.values.values())


def test_absent_keys_released_and_other_keys_never_appear():
    g = snapcore.release(
        "count", DATA, by="sex", keys=[2, 1, 3], n=50, epsilon=1,
        source=snapcore.SeededSource(4),
    )  # fmt: skip
    assert list(g) == [2, 1, 3] and len(g.releases) == 3
    assert g[3].statistic == "count" and g[1.0] is g[1]
    with pytest.raises(KeyError):
        g[9]
    d = g.to_dict()
    assert [grp["key"] for grp in d["groups"]] == [2, 1, 3]
    # one value per key, in key order, at the top for scripts
    assert d["values"] == [grp["value"] for grp in d["groups"]] == [g[k].value for k in (2, 1, 3)]
    json.dumps(d)
    # Records whose key is outside the key set change nothing: same draws, same output.
    kept = [i for i, s in enumerate(SEX) if s in (1, 2) and not isinstance(s, str)]
    sub = {"sex": [SEX[i] for i in kept], "age": [AGE[i] for i in kept]}
    h = snapcore.release(
        "count", sub, by="sex", keys=[2, 1, 3], n=50, epsilon=1,
        source=snapcore.SeededSource(4),
    )  # fmt: skip
    assert h.values == g.values


def test_group_release_equals_the_release_of_its_records():
    # One group at a time: the grouped release draws group by group from the source,
    # so a one-key grouping equals the plain release of that group's records.
    g = snapcore.release(
        "sum", DATA, column="age", by="sex", keys=[2], n=10, data_bounds=(0, 100),
        relation="add-remove", epsilon=0.5, source=snapcore.SeededSource(7),
    )  # fmt: skip
    r = snapcore.release(
        "sum", [45, 52, 200], data_bounds=(0, 100), n=10, relation="add-remove",
        epsilon=0.5, source=snapcore.SeededSource(7),
    )  # fmt: skip
    assert g[2].value == r.value and g[2].clamp_bounds == r.clamp_bounds


def test_parallel_composition_charges_epsilon_once():
    b = snapcore.Budget(1)
    g = snapcore.release(
        "count", DATA, by="sex", keys=[1, 2, 3, 4, 5], n=10, epsilon=0.75, budget=b
    )
    assert g.epsilon_spent == Fraction(0.75) and b.spent == Fraction(0.75)
    assert "parallel composition" in g.composition
    assert all(r.epsilon_spent == Fraction(0.75) for r in g.releases)
    with pytest.raises(BudgetExceededError):
        snapcore.release("count", DATA, by="sex", keys=[1, 2], n=10, epsilon=0.5, budget=b)
    assert b.spent == Fraction(0.75)


def test_grouped_refusals_before_noise():
    b = snapcore.Budget(1)
    with pytest.raises(ParameterError, match="needs keys="):
        snapcore.release("count", DATA, by="sex", n=10, epsilon=1, budget=b)  # type: ignore[call-overload]
    with pytest.raises(ParameterError, match="group_sizes="):
        snapcore.release("mean", DATA, column="age", data_bounds=(0, 100), by="sex",
                         keys=[1, 2], epsilon=1, budget=b)  # fmt: skip
    with pytest.raises(ParameterError, match="distinct"):
        snapcore.release("count", DATA, by="sex", keys=[1, 1.0], n=5, epsilon=1, budget=b)
    with pytest.raises(ParameterError, match="size declared for key 2 differs") as e:
        snapcore.release("count", DATA, by="sex", keys=[1, 2], group_sizes={1: 2, 2: 4},
                         relation="replace", epsilon=1, budget=b)  # fmt: skip
    assert e.value.parameter == "group_sizes"
    assert not re.search(r"\d", str(e.value).replace("key 2", ""))  # no record count
    with pytest.raises(ParameterError, match="needs n="):
        snapcore.release("count", DATA, by="sex", keys=[1, 2], epsilon=1, budget=b)
    with pytest.raises(ParameterError, match="DataFrame or a mapping"):
        snapcore.release("count", [1, 2], by="sex", keys=[1], n=3, epsilon=1, budget=b)
    assert b.spent == 0


def test_grouped_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(DATA)
    df["sex"] = df["sex"].astype(str)
    g = snapcore.release(
        "histogram", df, column="age", by="sex", keys=["1", "2"], bins=[0, 50, 100],
        relation="add-remove", n=10, epsilon=1,
    )  # fmt: skip
    assert g["1"].labels == ("< 50", "≥ 50")


def test_grouped_release_draws_all_its_noise_or_none():
    """Each group alone could draw from the shared replay source, all together cannot:
    refused before any group draws, nothing consumed, nothing charged."""
    src = snapcore.ReplaySource([(1, 0.5), (-1, 0.25), (1, 0.75)])  # 3 draws, 5 groups
    b = snapcore.Budget(1)
    with pytest.raises(
        snapcore.SourceExhaustedError, match=r"cannot supply 5 draws \(3 draws left\)"
    ):
        snapcore.release(
            "count", DATA, by="sex", keys=[1, 2, 3, 4, 5], n=10, epsilon=1, budget=b,
            source=src,
        )  # fmt: skip
    assert src.remaining == 3 and b.spent == 0


def test_grouped_release_from_partial_states_per_key():
    """{key: Partial} (each key's records, in chunks) releases exactly as the table."""
    keys = [1, 2, 3]
    rows = [(s, a) for s, a in zip(SEX, AGE, strict=True) if s in (1, 2) and s != "1"]
    chunks = [rows[:3], rows[3:]]
    parts = {}
    for k in keys:
        states = [
            snapcore.partial("sum", {"age": [a for s, a in c if s == k]}, data_bounds=(0, 100))
            for c in chunks
        ]
        parts[k] = snapcore.merge(states)
    sizes = {1: 2, 2: 3, 3: 0}
    common = {"by": "sex", "keys": keys, "group_sizes": sizes, "data_bounds": (0, 100),
              "epsilon": 1}  # fmt: skip
    want = snapcore.release(
        "sum", {"sex": [s for s, _ in rows], "age": [a for _, a in rows]}, column="age",
        source=snapcore.SeededSource(8), **common,
    )  # fmt: skip
    got = snapcore.release("sum", parts, source=snapcore.SeededSource(8), **common)
    assert got.values == want.values and [got[k].n for k in keys] == [2, 3, 0]
    # every key needs its state; a policy for missing values applies before the states
    with pytest.raises(ParameterError, match="no entry for key"):
        snapcore.release("sum", {1: parts[1]}, **common)
    with pytest.raises(ParameterError, match="applies to data held in memory"):
        snapcore.release("sum", parts, missing="impute", impute=0, **common)


def test_a_bool_key_and_a_number_key_stay_apart():
    data = {"g": [True, 1, "1", 1.0, np.bool_(True), 2], "x": [0.5] * 6}
    # True and 1 are different category keys but one Python dict key: refused up front
    with pytest.raises(ParameterError, match="a bool is not a number") as e:
        snapcore.release("count", data, by="g", keys=[True, 1], n=9, epsilon=1)
    assert e.value.parameter == "keys"
    g = snapcore.release(
        "count", data, by="g", keys=[True, "1", 2], n=9, epsilon=1,
        source=snapcore.SeededSource(3),
    )  # fmt: skip
    exact = _exact_group_values("count", data, "g", [True, "1", 2], Neighbouring.ADD_REMOVE, n=9)
    assert exact == [(2,), (1,), (1,)]  # True: two bools; "1": one string; 2: one int
    out = g.to_dict()
    assert out["keys"] == [True, "1", 2]
    assert [type(k) for k in out["keys"]] == [bool, str, int]
    assert g[True] is not g["1"] and g[np.bool_(True)] is g[True]
    with pytest.raises(KeyError):
        g[1]


def test_keys_print_by_their_exact_value_in_json():
    keys = [Fraction(1, 3), float(Fraction(1, 3)), np.float32(0.1), 0.1, 10**20]
    data = {"g": keys, "x": [0.5] * len(keys)}
    g = snapcore.release("count", data, by="g", keys=keys, n=9, epsilon=1)
    out = json.loads(json.dumps(g.to_dict()))
    assert out["keys"] == ["1/3", 1 / 3, 0.10000000149011612, 0.1, 10**20]
    assert len({json.dumps(k) for k in out["keys"]}) == len(keys)


def test_a_key_column_with_a_null_groups_by_exact_keys_in_every_frame():
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    big = 2**53 + 1  # float64 would make it 2**53, the next key
    keys = [big, 2**53, 2**53 + 3]
    d = {"g": [big, big, None, 2**53 + 3, 2**53 + 4], "x": [0.5, 0.25, 1.0, 0.5, 0.75]}
    want = _exact_group_values(
        "sum", d, "g", keys, Neighbouring.ADD_REMOVE, n=5, column="x", checked_bounds=((0, 1),)
    )
    assert want == [(Fraction(3, 4),), (0,), (Fraction(1, 2),)]
    frames = [pl.DataFrame(d), pl.DataFrame(d).lazy(), pa.table(d)]
    for frame in frames:
        got = _exact_group_values(
            "sum", frame, "g", keys, Neighbouring.ADD_REMOVE, n=5, column="x",
            checked_bounds=((0, 1),),
        )  # fmt: skip
        assert got == want, type(frame)


# -- means of groups of private size: a noisy sum over a noisy count ----------------------

_MEAN_DATA = {
    "g": ["a", "a", "b", "b", "b", "a", "b"],
    "x": [10.0, 20.0, 30.0, 50.0, 70.0, 35.5, 120.0],  # 120 is clamped to 100
}


def test_a_private_size_mean_is_the_clamped_quotient_of_a_noisy_sum_and_count():
    g = snapcore.release(
        "mean",
        _MEAN_DATA,
        by="g",
        keys=["a", "b", "z"],
        column="x",
        data_bounds=(0, 100),
        n=50,
        epsilon=1,
        source=snapcore.SeededSource(4),
    )
    assert g.relation is Neighbouring.ADD_REMOVE and g.epsilon_spent == 1
    assert "private" in g.group_sizes and "ε/2" in g.composition
    for rel in g.releases:
        s, c = rel.numerator, rel.denominator
        # each half of ε, add-remove, the group's cap
        assert s.statistic == "sum" and c.statistic == "count"
        assert s.epsilon_spent == c.epsilon_spent == Fraction(1, 2)
        assert s.relation is c.relation is Neighbouring.ADD_REMOVE and s.n == c.n == 50
        # the sum is of x − 50 (the middle of the bounds): Δ = 50, not 100
        assert s.sensitivity == 50 and s.data_bounds == ((-50.0, 50.0),)
        if c.value > 0:
            q = 50 + Fraction(s.value) / Fraction(c.value)
            assert rel.value == float(min(max(q, Fraction(0)), Fraction(100)))
        else:
            assert rel.value == 50.0 and rel.snapped is None
        assert 0 <= rel.value <= 100
    # the key with no records is released too
    assert g["z"].denominator.statistic == "count"


def test_a_private_size_mean_spends_epsilon_once_on_the_budget():
    b = snapcore.Budget(1.5)
    snapcore.release(
        "mean",
        _MEAN_DATA,
        by="g",
        keys=["a", "b"],
        column="x",
        data_bounds=(0, 100),
        n=50,
        epsilon=1,
        budget=b,
        source=snapcore.SeededSource(1),
    )
    assert b.spent == 1 and b.history == (("mean by g", Fraction(1)),)


def test_a_private_size_mean_needs_a_cap_before_any_draw():
    from snapcore.testing.sources import NoDraws

    src = NoDraws()
    with pytest.raises(ParameterError) as info:
        snapcore.release(
            "mean",
            _MEAN_DATA,
            by="g",
            keys=["a"],
            column="x",
            data_bounds=(0, 100),
            epsilon=1,
            source=src,
        )
    assert info.value.parameter == "n"


@pytest.mark.parametrize("bounds", [(0, 100), (-3, 10), (0, 5e-324), (-1e300, 1e300)])
def test_a_private_size_mean_from_partial_states_is_the_one_from_memory(bounds):
    """Per-key partial states of the mean (chunked, merged) give the same bits as the
    table in memory, on the same seed: the sum of x − c and the count are derived from
    the mean's exact state (c the middle of the bounds, or 0 when x − c is not exact)."""
    keys = ["a", "b", "z"]
    data = {
        "g": [*_MEAN_DATA["g"], "a", "b"],
        "x": [*_MEAN_DATA["x"], -7.25, 5e-324],
    }
    parts = {}
    for k in keys:
        xs = [x for gk, x in zip(data["g"], data["x"], strict=True) if gk == k]
        chunks = [xs[i : i + 2] for i in range(0, len(xs), 2)] or [[]]
        parts[k] = snapcore.merge(snapcore.partial("mean", c, data_bounds=bounds) for c in chunks)
    common = dict(by="g", keys=keys, data_bounds=bounds, n=50, epsilon=1)
    for seed in range(3):
        mem = snapcore.release(
            "mean", data, column="x", source=snapcore.SeededSource(seed), **common
        )
        got = snapcore.release("mean", parts, source=snapcore.SeededSource(seed), **common)
        assert got.values == mem.values
        for r, m in zip(got.releases, mem.releases, strict=True):
            assert r.numerator.value == m.numerator.value
            assert r.denominator.value == m.denominator.value
            assert r.numerator.data_bounds == m.numerator.data_bounds


def test_a_private_size_mean_refuses_unfit_partial_states_before_any_draw():
    from snapcore.testing.sources import NoDraws

    xs = [10.0, 20.0]
    unfit = [
        ({"a": snapcore.partial("mean", xs, data_bounds=(0, 50))}, "data_bounds"),
        ({"a": snapcore.partial("sum", xs, data_bounds=(0, 100))}, "data"),
    ]
    for parts, parameter in unfit:
        with pytest.raises(ParameterError) as info:
            snapcore.release(
                "mean", parts, by="g", keys=["a"], data_bounds=(0, 100), n=50,
                epsilon=1, source=NoDraws(),
            )  # fmt: skip
        assert info.value.parameter == parameter


def test_the_private_size_mean_accuracy_holds_in_repeated_releases():
    """Against the exact means (Fractions, computed here): the stated 95% bound holds in
    at least 95% of 200 seeded releases per group (it is a union bound: conservative)."""
    lo, hi = Fraction(0), Fraction(100)
    exact = {}
    for k in ("a", "b"):
        xs = [
            min(max(Fraction(x), lo), hi)
            for gk, x in zip(*_MEAN_DATA.values(), strict=True)
            if gk == k
        ]
        exact[k] = sum(xs) / len(xs)
    hits = total = 0
    for seed in range(200):
        g = snapcore.release(
            "mean",
            _MEAN_DATA,
            by="g",
            keys=["a", "b"],
            column="x",
            data_bounds=(0, 100),
            n=50,
            epsilon=4,
            source=snapcore.SeededSource(seed),
        )
        for k in ("a", "b"):
            total += 1
            hits += abs(Fraction(g[k].value) - exact[k]) <= Fraction(g[k].accuracy(0.05))
    assert hits >= 0.95 * total


def test_public_sizes_still_give_the_replace_mean():
    g = snapcore.release(
        "mean",
        _MEAN_DATA,
        by="g",
        keys=["a", "b"],
        column="x",
        data_bounds=(0, 100),
        group_sizes={"a": 3, "b": 4},
        epsilon=1,
        source=snapcore.SeededSource(1),
    )
    assert g.relation is Neighbouring.REPLACE
    assert all(isinstance(r, snapcore.Release) for r in g.releases)


# -- variances of groups of private size: a noisy count, sum and sum of squares -----------

_VAR_KEYS = ["a", "b", "z"]
_VAR_COMMON = {
    "by": "g",
    "keys": _VAR_KEYS,
    "column": "x",
    "data_bounds": (0, 100),
    "n": 50,
}


def _clamped_group(key, lo=Fraction(0), hi=Fraction(100)):
    return [
        min(max(Fraction(x), lo), hi)
        for gk, x in zip(_MEAN_DATA["g"], _MEAN_DATA["x"], strict=True)
        if gk == key
    ]


def _replay_draws(count):
    # p-bit floats in (0, 1) at any precision, both signs, none repeated in a row
    us = [0.5, 0.75, 0.25, 0.625, 0.375, 0.875, 0.125, 0.5625, 0.9375]
    return [(1 if i % 2 else -1, us[i % len(us)]) for i in range(count)]


def test_a_private_size_variance_is_three_noisy_releases_combined_exactly():
    """Reconstruct every group's three noisy values independently (a count, a sum of the
    hand-centred values x − 50 and a sum of their squares, each its own release with the
    same draws) and the variance from them with exact Fractions."""
    eps = Fraction(30)
    g = snapcore.release(
        "variance",
        _MEAN_DATA,
        epsilon=eps,
        source=snapcore.ReplaySource(_replay_draws(9)),
        **_VAR_COMMON,
    )
    assert g.relation is Neighbouring.ADD_REMOVE and g.epsilon_spent == eps
    assert "private" in g.group_sizes and "ε/3" in g.composition
    ref_src = snapcore.ReplaySource(_replay_draws(9))
    ar = {"relation": "add-remove", "n": 50, "epsilon": eps / 3, "source": ref_src}
    # drawn in this order: every count, then every sum, then every sum of squares
    ys = {k: [x - 50 for x in _clamped_group(k)] for k in _VAR_KEYS}
    counts = {k: snapcore.release("count", [float(y) for y in ys[k]], **ar) for k in _VAR_KEYS}
    sums = {
        k: snapcore.release("sum", [float(y) for y in ys[k]], data_bounds=(-50, 50), **ar)
        for k in _VAR_KEYS
    }
    squares = {
        k: snapcore.release("sum", [float(y * y) for y in ys[k]], data_bounds=(0, 2500), **ar)
        for k in _VAR_KEYS
    }
    assert ref_src.remaining == 0
    for k in _VAR_KEYS:
        rel = g[k]
        assert rel.noisy_count.value == counts[k].value
        assert rel.noisy_sum.value == sums[k].value
        assert rel.noisy_squares.value == squares[k].value
        assert rel.noisy_count.sensitivity == 1
        assert rel.noisy_sum.sensitivity == 50 and rel.noisy_squares.sensitivity == 2500
        for part in (rel.noisy_count, rel.noisy_sum, rel.noisy_squares):
            assert part.epsilon_spent == eps / 3 and part.n == 50
            assert part.relation is Neighbouring.ADD_REMOVE
        c = Fraction(counts[k].value)
        if c > 0:
            v = Fraction(squares[k].value) / c - (Fraction(sums[k].value) / c) ** 2
            assert rel.snapped == float(v)
            assert rel.value == float(min(max(v, Fraction(0)), Fraction(2500)))
        else:
            assert rel.value == 1250.0 and rel.snapped is None
            assert rel.accuracy(0.05) == 1250.0
        assert 0 <= rel.value <= 2500 and rel.value_range == (0, 2500)
    # ε = 30 gives little noise: the groups with records are released near their
    # exact population variances (Fractions, computed here)
    for k in ("a", "b"):
        xs = _clamped_group(k)
        m = sum(xs) / len(xs)
        exact = sum((x - m) ** 2 for x in xs) / len(xs)
        assert Fraction(g[k].noisy_count.value) > 0
        assert abs(Fraction(g[k].value) - exact) <= Fraction(g[k].accuracy(0.05))


def test_a_private_size_variance_from_partial_states_equals_the_table():
    """{key: Partial} (each key's records in two chunks) releases what the table does."""
    rows = list(zip(_MEAN_DATA["g"], _MEAN_DATA["x"], strict=True))
    chunks = [rows[:4], rows[4:]]
    parts = {
        k: snapcore.merge(
            [
                snapcore.partial(
                    "variance", {"x": [x for gk, x in c if gk == k]}, data_bounds=(0, 100)
                )
                for c in chunks
            ]
        )
        for k in _VAR_KEYS
    }
    for seed in range(5):
        t = snapcore.release(
            "variance", _MEAN_DATA, epsilon=3, source=snapcore.SeededSource(seed), **_VAR_COMMON
        )
        p = snapcore.release(
            "variance", parts, epsilon=3, source=snapcore.SeededSource(seed), **_VAR_COMMON
        )
        assert p.values == t.values
        assert [r.to_dict() for r in p.releases] == [r.to_dict() for r in t.releases]


def test_a_private_size_variance_spends_epsilon_once_on_the_budget():
    b = snapcore.Budget(5)
    snapcore.release(
        "variance", _MEAN_DATA, epsilon=3, budget=b, source=snapcore.SeededSource(1),
        **_VAR_COMMON,
    )  # fmt: skip
    assert b.spent == 3 and b.history == (("variance by g", Fraction(3)),)


@pytest.mark.parametrize(
    ("change", "parameter"),
    [
        ({"n": None}, "n"),
        ({"clamp_bounds": (0, 10)}, "clamp_bounds"),
        ({"data_bounds": None}, "data_bounds"),
        ({"data_bounds": (-1e300, 1e300)}, "data_bounds"),  # B′² is not a finite double
        ({"relation": "replace"}, "group_sizes"),
        ({"group_sizes": {"a": 3, "b": 4, "z": 0}}, "relation"),  # variance has no add-remove
    ],
)
def test_a_private_size_variance_refuses_before_any_draw_or_charge(change, parameter):
    from snapcore.testing.sources import NoDraws

    b = snapcore.Budget(5)
    kw = {**_VAR_COMMON, **change}
    kw = {k: v for k, v in kw.items() if v is not None}
    if "group_sizes" in change:
        kw["relation"] = "add-remove"
    with pytest.raises(ParameterError) as info:
        snapcore.release("variance", _MEAN_DATA, epsilon=3, budget=b, source=NoDraws(), **kw)
    assert info.value.parameter == parameter
    assert b.spent == 0


def test_a_private_size_variance_refuses_foreign_partial_states_before_drawing():
    from snapcore.testing.sources import NoDraws

    other_bounds = {
        k: snapcore.partial("variance", {"x": [1.0]}, data_bounds=(0, 50)) for k in _VAR_KEYS
    }
    other_stat = {
        k: snapcore.partial("mean", {"x": [1.0]}, data_bounds=(0, 100)) for k in _VAR_KEYS
    }
    b = snapcore.Budget(5)
    for parts, parameter in ((other_bounds, "data_bounds"), (other_stat, "data")):
        with pytest.raises(ParameterError) as info:
            snapcore.release(
                "variance", parts, epsilon=3, budget=b, source=NoDraws(), **_VAR_COMMON
            )
        assert info.value.parameter == parameter
        assert str(1.0) not in str(info.value).replace("(0, 50)", "")
    assert b.spent == 0


def test_a_private_size_variance_draws_all_its_noise_or_none():
    src = snapcore.ReplaySource(_replay_draws(8))  # 3 keys need 9 draws
    b = snapcore.Budget(5)
    with pytest.raises(snapcore.SourceExhaustedError):
        snapcore.release("variance", _MEAN_DATA, epsilon=3, budget=b, source=src, **_VAR_COMMON)
    assert src.remaining == 8 and b.spent == 0


def test_a_private_size_variance_rounds_the_squares_bound_up_when_not_a_double():
    """With bounds whose shifted ends are not doubles the values are not centred, and
    B′² (not a double) is rounded up: Δ of the sum of squares is at least B′²."""
    a, b = Fraction(1e-20), Fraction(0.3)
    assert Fraction(float(b - (a + b) / 2)) != b - (a + b) / 2
    g = snapcore.release(
        "variance",
        {"g": ["a", "a"], "x": [0.15, 0.2]},
        by="g",
        keys=["a"],
        column="x",
        data_bounds=(1e-20, 0.3),
        n=10,
        epsilon=3,
        source=snapcore.SeededSource(0),
    )
    rel = g["a"]
    assert rel.centre == 0 and rel.noisy_sum.sensitivity == b
    hi = Fraction(rel.noisy_squares.data_bounds[0][1])
    assert b * b < hi and rel.noisy_squares.sensitivity == hi
    assert Fraction(float(np.nextafter(float(hi), 0))) < b * b  # the next double down
    assert 0 <= rel.value <= float(((b - a) / 2) ** 2)


def test_the_private_size_variance_accuracy_holds_in_repeated_releases():
    """Against the exact population variances (Fractions, computed here): the stated 95%
    bound holds in at least 95% of 100 seeded releases per group (a union bound)."""
    exact = {}
    for k in ("a", "b"):
        xs = _clamped_group(k)
        m = sum(xs) / len(xs)
        exact[k] = sum((x - m) ** 2 for x in xs) / len(xs)
    hits = total = 0
    for seed in range(100):
        g = snapcore.release(
            "variance", _MEAN_DATA, epsilon=40, source=snapcore.SeededSource(seed),
            **{**_VAR_COMMON, "keys": ["a", "b"]},
        )  # fmt: skip
        for k in ("a", "b"):
            total += 1
            hits += abs(Fraction(g[k].value) - exact[k]) <= Fraction(g[k].accuracy(0.05))
    assert hits >= 0.95 * total
