"""What a release tells its user, on small tables shaped like real ones (category codes
stored as floats, as in statsmodels' fair table): the notes on records not counted,
the finer-grid advice and the public group sizes, each in the words of the Python
API and of the command line."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

import snapcore


@pytest.fixture
def fair_like(tmp_path: Path) -> Path:
    """occupation codes 1..6 as 1.0..6.0 (as statsmodels' fair table holds them)."""
    p = tmp_path / "fair.csv"
    rows = ["occupation,age,religious"]
    rows += [f"{1 + i % 6}.0,{20 + i % 25}.0,{1 + i % 4}.0" for i in range(60)]
    p.write_text("\n".join(rows) + "\n")
    return p


def test_unlisted_categories_are_named_in_the_record(cli, fair_like: Path):
    data = {"occupation": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] * 10}
    r = snapcore.release(
        "histogram", data, categories=[1, 2, 3], epsilon=1, source=snapcore.SeededSource(1)
    )
    assert any("not counted" in t and "other=True" in t for t in r.notes), r.notes
    r = snapcore.release(
        "histogram",
        data,
        categories=[1, 2, 3],
        other=True,
        epsilon=1,
        source=snapcore.SeededSource(1),
    )
    assert any("counts in 'other'" in t for t in r.notes)
    r = snapcore.release(
        "histogram", [5.0, 50.0], bins=[10, 20, 30], epsilon=1, source=snapcore.SeededSource(1)
    )
    assert any("below 10 count in the first bin" in t for t in r.notes)
    r = snapcore.release(
        "histogram", [5.0, 50.0], bins=[10, 20, 30], out_of_range="drop", epsilon=1
    )
    assert any("outside [10, 30] are not counted (out_of_range='drop')" in t for t in r.notes)
    # the command line prints the notes, in its own words
    out = cli(
        "release",
        "histogram",
        str(fair_like),
        "-c",
        "occupation",
        "--categories",
        "1,2,3",
        "-e",
        "1",
    )
    assert out.exit_code == 0, out.stderr
    assert "note: records whose value is not among the categories are not counted" in out.stdout
    assert "(--other adds a bin for them)" in out.stdout and "other=True" not in out.stdout


@pytest.mark.parametrize(
    ("stat", "kwargs"),
    [
        ("mean", {"data_bounds": (0, 100)}),
        ("count", {"n": 1000, "epsilon": Fraction(1, 4)}),
        ("histogram", {"categories": [1, 2]}),
        ("variance", {"data_bounds": (15, 45), "epsilon": Fraction(3, 10)}),
    ],
)
def test_finer_grid_advice_halves_the_step(stat: str, kwargs: dict):
    """The ε that finer_grid names gives exactly half the grid step (checked by
    releasing again with it), and ε just below the threshold it names does not."""
    data = [1.0, 2.0, 2.0, 1.0, 30.0, 44.0, 17.0, 2.0]
    kwargs = {"epsilon": 1, **kwargs}
    r = snapcore.release(stat, data, source=snapcore.SeededSource(1), **kwargs)
    advice = r.finer_grid
    ask = float(advice.split("epsilon=")[1].split(" ")[0])
    again = snapcore.release(
        stat, data, source=snapcore.SeededSource(1), **{**kwargs, "epsilon": ask}
    )
    assert again.grid_step == r.grid_step / 2, (advice, again.grid_step)
    per_value = Fraction(advice.split("ε per value above ")[1].split(")")[0])
    share = r.epsilon_per_value / r.epsilon_spent
    below = snapcore.release(
        stat,
        data,
        source=snapcore.SeededSource(1),
        **{**kwargs, "epsilon": per_value / share * Fraction(999, 1000)},
    )
    assert below.grid_step == r.grid_step
    if stat in ("count", "histogram"):
        assert "fixed" in advice and "data_bounds" not in advice
    else:
        assert "narrower data_bounds" in advice
    assert advice in r.grid_explanation and "clamp interval does not change it" in (
        r.grid_explanation
    )


def test_finer_grid_in_the_cli_names_flags(cli, fair_like: Path):
    r = cli("release", "mean", str(fair_like), "-c", "age", "-b", "0", "100", "-e", "1")
    assert r.exit_code == 0, r.stderr
    line = next(t for t in r.stdout.splitlines() if "finer grid" in t)
    assert "--epsilon 1.001" in line and "--data-bounds" in line and "=" not in line


def test_grouped_sizes_note_in_the_interface_words(cli, fair_like: Path):
    r = snapcore.release(
        "count",
        {"g": [1, 2, 2]},
        by="g",
        keys=[1, 2],
        group_sizes={1: 1, 2: 2},
        relation="replace",
        epsilon=1,
    )
    assert r.group_sizes == "public (declared with group_sizes=)"
    out = cli(
        "release",
        "count",
        str(fair_like),
        "--by",
        "religious",
        "--keys",
        "1,2,3,4",
        "--group-sizes",
        "1=15,2=15,3=15,4=15",
        "--relation",
        "replace",
        "-e",
        "1",
    )
    assert out.exit_code == 0, out.stderr
    assert "group sizes      public (declared with --group-sizes)" in out.stdout
