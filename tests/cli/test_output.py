"""What every subcommand shares (snapcore.cli._output): the documented exit codes, the
JSON error report and the one form of exact numbers in JSON output; shown on releases."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import snapcore
from snapcore.cli import EXIT_DATA, EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, EXIT_USAGE


def js(r) -> dict:
    return json.loads(r.stdout)


@pytest.fixture
def diabetes_like(tmp_path: Path) -> Path:
    """sex stored as 1.0/2.0 (as in scikit-learn's unscaled diabetes frame), a blank
    cell, and an unlisted code."""
    p = tmp_path / "d.csv"
    rows = [
        "sex,age,bmi",
        "1.0,30,20",
        "2.0,40,25",
        "2.0,50,",
        "1.0,60,30",
        "2.0,70,35",
        "3.0,80,40",
    ]
    p.write_text("\n".join(rows) + "\n")
    return p


def test_release_json_and_errors(cli, diabetes_like: Path):
    r = cli("release", "mean", "-c", "age", "-b", "0", "100", "-e", "1", "--json")
    assert r.exit_code == EXIT_OK
    d = js(r)
    assert d["statistic"] == "mean" and "grid_explanation" in d
    assert "--epsilon 1.001" in d["grid_explanation"]  # the ε that halves the step
    # count without --n: the error names the CLI flag, not the Python keyword
    msg = cli.error(EXIT_USAGE, "usage", "release", "count", "-e", "1", "--json")
    assert "--n" in msg and "n=" not in msg
    msg = cli.error(EXIT_USAGE, "usage", "release", "mean", "-c", "age", "-e", "1", "--json")
    assert "--data-bounds" in msg
    # a missing value is a data error (3), and so is a missing column or file
    args = ("release", "mean", str(diabetes_like), "-c", "bmi", "-b", "0", "50", "-e", "1")
    msg = cli.error(EXIT_DATA, "data", *args, "--json")
    assert "--missing" in msg
    cli.error(
        EXIT_DATA, "data",
        "release", "mean", str(diabetes_like), "-c", "nope", "-b", "0", "1", "-e", "1", "--json",
    )  # fmt: skip
    cli.error(EXIT_DATA, "data", "release", "count", "/no/such.csv", "-e", "1", "--json")
    # unknown option: a usage error, in JSON too
    cli.error(EXIT_USAGE, "usage", "release", "mean", "--frobnicate", "--json")
    # the plain-text error goes to stderr with the same exit status
    r = cli("release", "count", "-e", "1")
    assert r.exit_code == EXIT_USAGE and "--n" in r.stderr and r.stdout == ""


def test_release_missing_policies(cli, diabetes_like: Path):
    base = ("release", "mean", str(diabetes_like), "-c", "bmi", "-b", "0", "50", "-e", "1")
    r = cli(*base, "--missing", "impute", "--impute", "25", "--json")
    assert r.exit_code == EXIT_OK and js(r)["n"] == 6
    msg = cli.error(EXIT_USAGE, "usage", *base, "--missing", "drop", "--json")
    assert "replace" in msg
    r = cli(
        "release", "sum", str(diabetes_like), "-c", "bmi", "-b", "0", "50", "-e", "1",
        "--relation", "add-remove", "--n", "10", "--missing", "drop", "--json",
    )  # fmt: skip
    assert r.exit_code == EXIT_OK


def test_histogram_categories_are_values(cli, diabetes_like: Path):
    # 1 and 2 typed on the command line match the cells 1.0 and 2.0 (exact values);
    # check the exact counts through a huge ε: the noise is then below 0.01 (seeded,
    # so deterministic), and rounding recovers the count.
    base = ("release", "histogram", str(diabetes_like), "-c", "sex", "--seed", "1")
    r = cli(*base, "--categories", "1,2", "-e", "2000", "--json")
    d = js(r)
    assert d["labels"] == ["1", "2"] and [round(v) for v in d["value"]] == [2, 3]
    assert "not counted" in d["derivation"]
    r = cli(*base, "--categories", "1,2", "--other", "-e", "2000", "--json")
    d = js(r)
    assert d["labels"] == ["1", "2", "other"] and [round(v) for v in d["value"]] == [2, 3, 1]
    # at ε = 1 (ε/2 per bin) the grid step is 4 between integral clamp bounds: ints
    d = js(cli(*base, "--categories", "1,2", "--other", "-e", "1", "--json"))
    assert d["grid_step"] == 4 and all(type(v) is int for v in d["value"])
    r = cli(
        "release", "histogram", str(diabetes_like), "-c", "age", "--bins", "40,50,60",
        "-e", "2000", "--seed", "1", "--json",
    )  # fmt: skip
    d = js(r)
    assert d["labels"] == ["< 50", "≥ 50"] and [round(v) for v in d["value"]] == [2, 4]
    r = cli(
        "release", "histogram", str(diabetes_like), "-c", "age", "--bins", "40,50,60",
        "--out-of-range", "drop", "-e", "2000", "--seed", "1", "--json",
    )  # fmt: skip
    d = js(r)
    assert d["labels"] == ["[40, 50)", "[50, 60]"] and [round(v) for v in d["value"]] == [1, 2]


def test_grouped_release_cli(cli, diabetes_like: Path):
    base = ("release", "count", str(diabetes_like), "--by", "sex", "--keys", "1,2,9")
    r = cli(*base, "--group-sizes", "1=2,2=3,9=0", "--relation", "replace", "-e", "1", "--json")
    assert r.exit_code == EXIT_OK, r.stdout
    d = js(r)
    assert d["keys"] == [1, 2, 9] and [g["value"] for g in d["groups"]] == [2, 3, 0]
    assert d["epsilon_spent"] == 0
    r = cli(*base, "--n", "100", "-e", "0.5", "--json")
    d = js(r)
    assert d["relation"] == "add-remove" and d["epsilon_spent"] == 0.5
    assert [g["key"] for g in d["groups"]] == [1, 2, 9]
    assert "3" not in json.dumps([g["labels"] for g in d["groups"]])
    r = cli(*base, "--n", "100", "-e", "0.5")
    assert r.exit_code == EXIT_OK and "parallel composition" in r.stdout
    msg = cli.error(EXIT_USAGE, "usage", *base, "-e", "1", "--json")
    assert "--n" in msg
    cli.error(EXIT_USAGE, "usage", "release", "count", "--by", "sex", "-e", "1", "--json")


def test_budget_refusal_is_exit_4_and_internal_is_1(cli, monkeypatch):
    import snapcore.releases._api
    from snapcore.errors import BudgetExceededError

    def refuse(*a, **k):
        raise BudgetExceededError("release refused: no budget left")

    monkeypatch.setattr(snapcore.releases._api, "release", refuse)
    cli.error(EXIT_REFUSED, "privacy refused", "release", "count", "-e", "1", "--json")

    def crash(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(snapcore.releases._api, "release", crash)
    msg = cli.error(EXIT_INTERNAL, "internal", "release", "count", "-e", "1", "--json")
    assert "RuntimeError" in msg


def test_exact_numbers_in_json_have_one_form(cli, tmp_path: Path):
    """``*_exact`` fields are str(Fraction) in every subcommand ("1", "7/10")."""
    path = tmp_path / "l.db"
    assert cli("budget", "init", str(path), "-e", "1").exit_code == 0
    snapcore.Budget.from_ledger(path).spend(Fraction(7, 10))
    d = cli.json("budget", "show", str(path), "--json")
    assert (d["total_exact"], d["spent_exact"], d["remaining_exact"]) == ("1", "7/10", "3/10")
    assert d["entries"][0]["epsilon_exact"] == str(Fraction(7, 10))


@pytest.mark.parametrize(
    ("given", "as_json", "tty", "want"),
    [
        (None, False, True, True),
        (None, True, True, False),
        (None, False, False, False),
        (True, True, False, True),
        (False, False, True, False),
    ],
)
def test_progress_bar_follows_the_flag_else_a_terminal_without_json(
    monkeypatch, given, as_json, tty, want
):
    import sys

    from snapcore.cli._output import shows_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    assert shows_progress(given, as_json) is want
