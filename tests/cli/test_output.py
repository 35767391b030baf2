"""Every subcommand's --json output (errors included) and the documented exit codes."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from snapcore.cli import EXIT_DATA, EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, EXIT_USAGE


def js(r) -> dict:
    return json.loads(r.stdout)


def error_of(r, code: int, kind: str) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    err = js(r)["error"]
    assert err["exit_code"] == code and err["kind"] == kind
    return err["message"]


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
    msg = error_of(cli("release", "count", "-e", "1", "--json"), EXIT_USAGE, "usage")
    assert "--n" in msg and "n=" not in msg
    msg = error_of(cli("release", "mean", "-c", "age", "-e", "1", "--json"), EXIT_USAGE, "usage")
    assert "--data-bounds" in msg
    # a missing value is a data error (3), and so is a missing column or file
    args = ("release", "mean", str(diabetes_like), "-c", "bmi", "-b", "0", "50", "-e", "1")
    msg = error_of(cli(*args, "--json"), EXIT_DATA, "data")
    assert "--missing" in msg
    error_of(
        cli("release", "mean", str(diabetes_like), "-c", "nope", "-b", "0", "1", "-e", "1",
            "--json"),
        EXIT_DATA, "data",
    )  # fmt: skip
    error_of(cli("release", "count", "/no/such.csv", "-e", "1", "--json"), EXIT_DATA, "data")
    # unknown option: a usage error, in JSON too
    error_of(cli("release", "mean", "--frobnicate", "--json"), EXIT_USAGE, "usage")
    # the plain-text error goes to stderr with the same exit status
    r = cli("release", "count", "-e", "1")
    assert r.exit_code == EXIT_USAGE and "--n" in r.stderr and r.stdout == ""


def test_release_missing_policies(cli, diabetes_like: Path):
    base = ("release", "mean", str(diabetes_like), "-c", "bmi", "-b", "0", "50", "-e", "1")
    r = cli(*base, "--missing", "impute", "--impute", "25", "--json")
    assert r.exit_code == EXIT_OK and js(r)["n"] == 6
    msg = error_of(cli(*base, "--missing", "drop", "--json"), EXIT_USAGE, "usage")
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
    msg = error_of(cli(*base, "-e", "1", "--json"), EXIT_USAGE, "usage")
    assert "--n" in msg
    error_of(cli("release", "count", "--by", "sex", "-e", "1", "--json"), EXIT_USAGE, "usage")


def test_info_json(cli):
    r = cli("info", "--json")
    assert r.exit_code == EXIT_OK
    assert {b["name"] for b in js(r)["backends"]} >= {"mpfr"}
    r = cli("info", "--json", "--epsilon", "1", "--clamp-bounds", "0", "100")
    assert js(r)["calibration"]["precision"] >= 53
    error_of(cli("info", "--json", "--epsilon", "1"), EXIT_USAGE, "usage")
    error_of(
        cli("info", "--json", "--epsilon", "-1", "--clamp-bounds", "0", "1"), EXIT_USAGE, "usage"
    )


def test_audit_json_and_refusal(cli):
    r = cli("audit", "--epsilon", "1", "--clamp-bound", "8", "--value", "0", "--json")
    assert r.exit_code == EXIT_OK and js(r)["private"] is True
    # the double-sampler demonstration is not private: privacy refused, status 4
    r = cli(
        "audit", "--epsilon", "1", "--clamp-bound", "8", "--value", "0",
        "--sampler-precision", "20", "--json",
    )  # fmt: skip
    assert r.exit_code == EXIT_REFUSED and js(r)["private"] is False
    error_of(cli("audit", "--epsilon", "1", "--value", "0", "--json"), EXIT_USAGE, "usage")


def test_plot_json(cli, tmp_path: Path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "g.png"
    r = cli("plot", "gamma", "--b-prime", "100", "--epsilon", "1", "-o", str(out), "--json")
    assert r.exit_code == EXIT_OK and js(r)["written"] == str(out) and out.exists()
    error_of(
        cli("plot", "gamma", "--b-prime", "100", "--epsilon", "1", "-o", "x.pdf", "--json"),
        EXIT_USAGE,
        "usage",
    )


def test_plot_from_a_release_plan(cli, tmp_path: Path):
    pytest.importorskip("matplotlib")
    from snapcore.analysis._guarantees import plan_calibration

    out = tmp_path / "d.png"
    args = ("plot", "distribution", "--statistic", "mean", "--n", "442")
    r = cli(*args, "--data-bounds", "0", "100", "--epsilon", "1", "--guess", "48.5",
            "-o", str(out), "--json")  # fmt: skip
    assert r.exit_code == EXIT_OK, r.stdout
    assert out.exists()
    # Δ of a mean of 442 records in [0, 100] is 100/442 (no hand-typed 0.226)
    cal = plan_calibration(epsilon=1, statistic="mean", n=442, data_bounds=(0, 100), gamma=0.05)
    assert cal.sensitivity == Fraction(100, 442)
    msg = error_of(cli(*args[:4], "--epsilon", "1", "--guess", "1", "--json"), EXIT_USAGE,
                   "usage")  # fmt: skip
    assert "--n" in msg


def test_compare_json(cli):
    r = cli(
        "compare", "--backend", "mpfr", "--size", "200", "--seconds", "0.01",
        "--no-conformance", "--json",
    )  # fmt: skip
    assert r.exit_code == EXIT_OK, r.stdout
    d = js(r)
    assert d["backends"][0]["name"] == "mpfr" and d["conformance_failed"] is False
    assert r.stderr == ""  # no progress bar when not a terminal
    error_of(cli("compare", "--backend", "nope", "--json"), EXIT_USAGE, "usage")


def test_budget_ledger_json(cli, tmp_path: Path):
    led = str(tmp_path / "b.ledger")
    r = cli("budget", "init", led, "--epsilon", "1", "--json")
    assert r.exit_code == EXIT_OK, r.stdout
    d = js(r)
    assert (d["total"], d["total_exact"], d["spent_exact"], d["entries"]) == (1.0, "1", "0", [])
    error_of(cli("budget", "init", led, "--epsilon", "1", "--json"), EXIT_DATA, "data")
    r = cli("budget", "show", led, "--json")
    assert r.exit_code == EXIT_OK and js(r)["total_exact"] == "1" and js(r)["entries"] == []
    error_of(cli("budget", "show", str(tmp_path / "none.ledger"), "--json"), EXIT_DATA, "data")
    # a release the ledger cannot cover: privacy refused, exit 4, nothing released
    args = ("release", "mean", "-c", "age", "-b", "0", "100", "--ledger", led, "--json")
    assert cli(*args, "-e", "0.75").exit_code == EXIT_OK
    msg = error_of(cli(*args, "-e", "0.5"), EXIT_REFUSED, "privacy refused")
    assert "refused" in msg


def test_budget_refusal_is_exit_4_and_internal_is_1(cli, monkeypatch):
    import snapcore.releases._api
    from snapcore.errors import BudgetExceededError

    def refuse(*a, **k):
        raise BudgetExceededError("release refused: no budget left")

    monkeypatch.setattr(snapcore.releases._api, "release", refuse)
    error_of(cli("release", "count", "-e", "1", "--json"), EXIT_REFUSED, "privacy refused")

    def crash(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(snapcore.releases._api, "release", crash)
    msg = error_of(cli("release", "count", "-e", "1", "--json"), EXIT_INTERNAL, "internal")
    assert "RuntimeError" in msg
