"""The record of a release (snapcore.releases._record.Release): what it derives from its
own fields (B′, the values, the accuracy, the grid and how to make it finer) and its
JSON-ready dict.

Most records here are built by hand for ε = 1, Δ = 10 and the clamp interval
[-10, 110]: B = 60, b = B/Δ = 6, λ just above 1, so Λ = 2 and the grid step Δ·Λ = 20.
What :func:`snapcore.release` puts in a record is tested in ``tests/releases/test_api.py``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import attrs
import pytest

import snapcore
from snapcore.analysis._guarantees import accuracy
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError
from snapcore.releases._record import Release


def record(**changes: Any) -> Release:
    fields: dict[str, Any] = {
        "statistic": "mean",
        "value": 41.0,
        "labels": ("mean",),
        "epsilon_spent": Fraction(1),
        "epsilon_per_value": Fraction(1),
        "composition": "one value: the whole epsilon",
        "relation": Neighbouring.REPLACE,
        "sensitivity": Fraction(10),
        "value_range": (Fraction(-20), Fraction(100)),
        "clamp_bounds": (-10.0, 110.0),
        "half_width": Fraction(60),
        "clamp_reason": "given directly",
        "gamma": None,
        "precision": 118,
        "granularity": Fraction(2),
        "grid_step": Fraction(20),
        "backend": "mpfr",
        "source": "seeded",
        "data_bounds": ((0.0, 100.0),),
        "n": 10,
        "derivation": "by hand",
        "notes": (),
        "snapped": 41.0,
    }
    return Release(**(fields | changes))


def unnoised(**changes: Any) -> Release:
    """A record of a release that drew no noise (Δ = 0: a count with a public n)."""
    return record(
        statistic="count",
        value=10,
        sensitivity=Fraction(0),
        clamp_bounds=None,
        half_width=None,
        precision=None,
        granularity=None,
        grid_step=None,
        **changes,
    )


def test_b_prime_and_values():
    assert record().b_prime == 100  # max(|-20|, |100|)
    assert record(value_range=(Fraction(-300), Fraction(7))).b_prime == 300
    assert record().values == (41.0,)
    assert record(value=(1.0, 2.0, 3.0)).values == (1.0, 2.0, 3.0)


def test_accuracy_is_recomputed_from_the_public_fields():
    """Δ·(ln(1/α)/ε′ + Λ/2) with ε′ ≈ 1, Λ = 2, Δ = 10, below the width 120."""
    assert record().accuracy(0.05) == pytest.approx(10 * (math.log(20) + 1), rel=1e-9)
    # ε per value, not ε spent: ε = 1/2 per value gives λ just above 2 and Λ = 4.
    half = record(
        epsilon_per_value=Fraction(1, 2), granularity=Fraction(4), grid_step=Fraction(40)
    )
    assert half.accuracy(0.05) == pytest.approx(10 * (2 * math.log(20) + 2), rel=1e-9)
    with pytest.raises(ParameterError, match="alpha"):
        record().accuracy(1.5)
    with pytest.raises(ParameterError, match="no clamp interval"):
        unnoised().accuracy(0.05)


def test_release_record_carries_its_accuracy():
    """The record's accuracy is the mechanism's, computed from the record's own fields."""
    r = snapcore.release("mean", [34, 51, 29, 62, 45], epsilon=1.0, data_bounds=(0, 100))
    m = snapcore.SnappingMechanism(
        epsilon=r.epsilon_per_value, sensitivity=r.sensitivity, clamp_bounds=r.clamp_bounds
    )
    assert r.accuracy(0.05) == accuracy(m, 0.05) == m.accuracy(0.05)
    assert 0 < r.accuracy(0.05) <= r.clamp_bounds[1] - r.clamp_bounds[0]
    # Independently: Δ·(ln(1/α)/ε′ + Λ/2) with Δ = 100/5, ε′ ≈ 1 and Λ = 2.
    assert r.accuracy(0.05) == pytest.approx(20 * (math.log(20) + 1), rel=1e-6)


def test_finer_grid_asks_for_the_epsilon_that_halves_lambda():
    """Λ = 2 halves once ε per value passes 2/Λ = 1; with data bounds, Δ can shrink too."""
    text = record().finer_grid
    assert text.startswith("epsilon=1.001 (ε per value above 1) halves the step to 10")
    assert "a smaller Δ (now 10)" in text and "data_bounds" in text
    # Λ = 4 at ε = 1/2 per value: it must pass 2/4; six values composed spend 6 times that.
    six = record(
        epsilon_spent=Fraction(3),
        epsilon_per_value=Fraction(1, 2),
        granularity=Fraction(4),
        grid_step=Fraction(40),
    )
    assert six.finer_grid.startswith("epsilon=3.003 (ε per value above 0.5) halves the step to 20")
    fixed = record(statistic="count", data_bounds=None, sensitivity=Fraction(1))
    assert fixed.finer_grid.endswith("; Δ = 1 is fixed for 'count'")
    assert unnoised().finer_grid == "no grid: nothing was noised"


def test_grid_explanation():
    r = record()
    text = r.grid_explanation
    assert text.startswith("outputs lie on a grid of step 20 (data units)")
    assert "(95% accuracy ±39.9573)" in text  # Δ·(ln 20 + 1) with Δ = 10, as above
    assert text.endswith(f"A finer grid: {r.finer_grid}")
    assert unnoised().grid_explanation == (
        "no grid: nothing was noised (Δ = 0), the value is exact"
    )


def test_to_dict_is_json_ready_with_every_field_and_exact_strings():
    r = record(value=(1.0, 2.0), labels=("a", "b"), epsilon_spent=Fraction(1, 3))
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert {f.name for f in attrs.fields(Release)} <= set(d)
    assert d["value"] == [1.0, 2.0] and d["labels"] == ["a", "b"]
    assert d["epsilon_spent_exact"] == "1/3" and d["epsilon_spent"] == 1 / 3
    assert d["sensitivity_exact"] == "10" and d["granularity_exact"] == "2"
    assert d["grid_step"] == 20.0 and d["grid_step_exact"] == "20"
    assert d["value_range"] == [-20.0, 100.0] and d["b_prime"] == 100.0
    assert d["relation"] == "replace"
    assert d["relation_description"] == Neighbouring.REPLACE.description
    assert d["clamp_bounds"] == [-10.0, 110.0] and d["data_bounds"] == [[0.0, 100.0]]
    assert d["gamma"] is None and d["notes"] == []
    assert d["grid_explanation"] == r.grid_explanation
    d0 = unnoised().to_dict()
    assert d0["value"] == 10 and d0["clamp_bounds"] is None
    assert d0["granularity"] is None and d0["granularity_exact"] is None


def test_a_record_is_frozen():
    r = record()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        r.value = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        Release("mean")  # type: ignore[misc,call-arg]


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_release_and_grouped_release_to_a_data_frame(backend):
    pytest.importorskip(backend)
    r = snapcore.release(
        "histogram",
        ["a", "b", "a"],
        epsilon=1,
        categories=["a", "b"],
        source=snapcore.SeededSource(1),
    )
    df = r.to_frame(backend)
    assert type(df).__module__.split(".")[0] == backend
    assert list(df["label"]) == ["a", "b"] and list(df["value"]) == list(r.value)
    assert list(df["snapped"]) == list(r.snapped)
    # every count is projected into [0, n]
    assert all(0 <= v <= 3 for v in df["value"])
    g = snapcore.release(
        "count",
        {"k": ["x", "y", "x"]},
        by="k",
        keys=["x", "y", "z"],
        n=10,
        epsilon=1,
        source=snapcore.SeededSource(1),
    )
    gf = g.to_frame(backend)
    assert list(gf["k"]) == ["x", "y", "z"]
    assert list(gf["value"]) == [rel.value for rel in g.releases]
