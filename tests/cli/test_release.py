"""``snapcore release`` from the command line (click's CliRunner)."""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from snapcore.data import example_path
from tests.helpers.plants import PLANTS


def example_column(name: str) -> list[str]:
    with example_path().open(newline="") as fh:
        return [row[name] for row in csv.DictReader(fh)]


def test_bundled_data_mean(cli):
    r = cli("release", "mean", "--column", "age", "--data-bounds", "0", "100", "--epsilon", "1")
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout
    for label in (
        "released value",
        "epsilon spent",
        "data bounds",
        "clamp interval",
        "grid step",
    ):
        assert label in out
    assert "bundled synthetic example data" in out
    value = float(out.split("released value")[1].split()[0])
    assert -1.0 < value < 101.0
    assert "WARNING" not in r.stderr
    # The 95% accuracy, independently: Δ·(ln 20/ε′ + Λ/2) with Δ = 100/1000, ε′ ≈ 1, Λ = 2.
    acc = float(out.split("accuracy")[1].split()[0])
    assert acc == pytest.approx(0.1 * (math.log(20) + 1), rel=1e-5)


def test_example_data_is_realistic():
    ages = [int(a) for a in example_column("age")]
    incomes = [int(v) for v in example_column("income")]
    assert len(ages) == 1000 and min(ages) >= 18 and max(ages) <= 90
    assert min(incomes) >= 0 and max(incomes) <= 400000
    assert set(example_column("region")) == {"north", "south", "east", "west"}
    assert set(example_column("education")) == {"primary", "secondary", "tertiary"}


def test_json_and_seed_reproducible(cli):
    args = ("sum", "-c", "hours_per_week", "-b", "0", "80", "-e", "0.5", "--seed", "7", "--json")
    a, b = cli("release", *args), cli("release", *args)
    assert a.exit_code == 0, a.stderr
    assert "NOT for production" in a.stderr
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    assert da["value"] == db["value"] and da["source"] == "seeded" and da["seed"] == "7"
    assert da["epsilon_spent_exact"] == "1/2" and da["relation"] == "replace"
    assert Fraction(da["sensitivity_exact"]) == 80
    lo, hi = da["clamp_bounds"]
    assert lo <= da["value"] <= hi


def test_histogram_categories_and_bins(cli):
    r = cli(
        "release",
        "histogram",
        "-c",
        "region",
        "--categories",
        "north,south,east,west",
        "-e",
        "1",
        "--json",
    )
    d = json.loads(r.stdout)
    assert d["labels"] == ["north", "south", "east", "west"] and len(d["value"]) == 4
    assert d["epsilon_per_value"] == 0.5
    r = cli(
        "release",
        "histogram",
        "-c",
        "age",
        "--bins",
        "0,30,60,100",
        "-e",
        "2",
        "--relation",
        "add-remove",
        "--n",
        "5000",
    )
    assert r.exit_code == 0, r.stderr
    assert "≥ 60" in r.stdout and "parallel composition" in r.stdout


def test_covariance_two_columns(cli):
    r = cli(
        "release",
        "covariance",
        "-c",
        "age",
        "-c",
        "income",
        "-b",
        "18",
        "90",
        "-b",
        "0",
        "400000",
        "-e",
        "1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert Fraction(d["sensitivity_exact"]) == Fraction(72 * 400000, 1000)


def test_csv_file(cli, tmp_path: Path):
    p = tmp_path / "d.csv"
    p.write_text("x,y\n1,a\n2,b\n3.5,a\n")
    args = ("mean", str(p), "-c", "x", "-b", "0", "4", "-e", "1", "--clamp", "0", "4", "--json")
    r = cli("release", *args)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["n"] == 3 and d["clamp_bounds"] == [0.0, 4.0] and 0 <= d["value"] <= 4


@pytest.mark.parametrize(
    ("args", "needle", "code"),
    [
        (("mean", "-c", "age", "-b", "0", "100"), "Missing option '--epsilon'", 2),
        (
            ("mean", "-c", "age", "-b", "0", "100", "-e", "abc"),
            "epsilon must be a decimal number",
            2,
        ),
        (("mean", "-c", "age", "-e", "1"), "needs --data-bounds", 2),
        (("mean", "-c", "age", "-b", "100", "0", "-e", "1"), "lower < upper", 2),
        (
            ("mean", "-c", "nope", "-b", "0", "1", "-e", "1"),
            "column 'nope' not found (--column nope)",
            3,
        ),
        (
            ("mean", "-c", "region", "-b", "0", "1", "-e", "1"),
            "every record must be a finite real number",
            3,
        ),
        (("median", "-c", "age", "-e", "1"), "statistic must be one of", 2),
        (("mean", "-c", "age", "-b", "0", "1", "-e", "-1"), "epsilon must be", 2),
        (("mean", "-c", "age", "-b", "0", "1", "-e", "1", "-g", "2"), "gamma must be", 2),
        (("count", "-e", "1"), "needs --n", 2),
        (("histogram", "-c", "age", "-e", "1", "--bins", "0,x"), "--bins must be", 2),
        (("mean", "missing.csv", "-c", "age", "-b", "0", "1", "-e", "1"), "cannot read", 3),
        (("mean", "-c", "age", "-b", "0", "1", "-e", "1", "--backend", "zz"), "backend", 2),
        (("mean", "-c", "age", "-b", "0", "1", "-e", "1", "--bogus"), "No such option", 2),
        (("mean", "-c", "age", "-b", "0", "1", "-e", "1", "-o", "x"), "KEY=VALUE", 2),
        (("mean", "-c", "nope", "-b", "0", "1", "-e", "1", "--seed", "3"), "not found", 3),
    ],
)
def test_bad_arguments_one_line(cli, args, needle, code):
    # exit status 2 for usage errors, 3 for data errors (snapcore.cli documents them)
    r = cli("release", *args)
    assert r.exit_code == code, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    assert needle in lines[0]
    assert "Traceback" not in r.stderr + r.stdout and r.stdout == ""


@pytest.mark.parametrize("spelling", ["nan", "NaN", "inf", "-Infinity", "1e400"])
def test_non_finite_csv(cli, tmp_path: Path, spelling: str):
    """No spelling of a non-finite number is a number (nor a missing value): the
    release is refused as a data error naming the column, never the cell."""
    p = tmp_path / "d.csv"
    p.write_text(f"x\n1\n{spelling}\n3\n")
    r = cli("release", "mean", str(p), "-c", "x", "-b", "0", "4", "-e", "1")
    assert r.exit_code == 3  # a data error
    assert r.stderr.strip().startswith("Error: column 'x'")
    assert spelling not in r.stderr.replace(str(p), "")


def test_listed_in_help(cli):
    r = cli("--help")
    assert "release" in r.stdout
    r = cli("release", "--help")
    assert r.exit_code == 0 and "--epsilon" in r.stdout and "--seed" in r.stdout


# -- a Parquet file's values, lengths and counts appear in no message -----------------


def _parquet(tmp_path: Path, plant: dict, kind: str) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n, v = plant["count"], plant["value"]
    if kind == "long-text":  # more than 4,300 digits: Python's int-from-str limit
        col = pa.array(["0.5"] * n + ["7" * plant["digits"]])
    elif kind == "text":
        col = pa.array(["0.5"] * n + [str(v)])
    elif kind == "null":  # an int64 column above 2**53 with one null
        col = pa.array([v % 2**62] * n + [None], type=pa.int64())
    else:  # clean doubles, for a wrong --n
        col = pa.array([0.5] * n)
    path = tmp_path / f"{kind}-{plant['count']}.parquet"
    pq.write_table(pa.table({"x": col}), path)
    return path


@pytest.mark.parametrize(
    ("kind", "extra"),
    [("long-text", ()), ("text", ()), ("null", ()), ("clean", ("--n", "5"))],
)
def test_a_refusal_of_parquet_data_depends_on_no_value_length_or_count(
    cli, tmp_path: Path, kind, extra
):
    outcomes = []
    for plant in PLANTS:
        path = _parquet(tmp_path, plant, kind)
        args = ["release", "mean", str(path), "-c", "x", "-b", "0", "1", "-e", "1", *extra]
        result = cli(*args, "--json")
        plain = cli(*args)
        texts = {str(plant["value"]), str(plant["value"] % 2**62), str(plant["digits"])}
        texts |= {str(plant["count"]), str(plant["count"] + 1)}
        for out in (result.stdout, result.stderr, plain.stdout, plain.stderr):
            assert not any(t in out for t in texts), (kind, out)
        assert result.exit_code not in (0, 1) and plain.exit_code == result.exit_code
        err = json.loads(result.stdout)["error"]
        outcomes.append((result.exit_code, err["kind"], err["message"]))
    assert outcomes[0] == outcomes[1], outcomes


@pytest.fixture
def padded_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Count the calls padded as a whole (a statistic's or a group-by release) and the
    mechanism's padded releases, by wrapping the padding's ``pad``; quanta stay in the
    process (no store)."""
    from snapcore.mechanism import _padding as mechanism_padding
    from snapcore.releases import _padding as release_padding

    calls: dict[str, list[int]] = {"whole": [], "mechanism": []}
    for module, name in ((release_padding, "whole"), (mechanism_padding, "mechanism")):
        real = module.pad

        def counting(
            start: int, q: int, stats: object = None, dither: int = 0, _r=real, _n=name
        ) -> int:
            calls[_n].append(q)
            return _r(start, q, stats, dither)

        monkeypatch.setattr(module, "pad", counting)
    monkeypatch.setenv("SNAPCORE_TIMING_STORE", "off")
    return calls


def test_the_command_line_release_goes_through_the_padding(cli, padded_calls) -> None:
    r = cli("release", "mean", "--column", "age", "--data-bounds", "0", "100", "-e", "1")
    assert r.exit_code == 0, r.output
    assert len(padded_calls["whole"]) == 1 and padded_calls["mechanism"]
    g = cli(
        "release",
        "count",
        "--by",
        "region",
        "--keys",
        "north,south,east,west",
        "--n",
        "1000",
        "-e",
        "1",
    )
    assert g.exit_code == 0, g.output
    assert len(padded_calls["whole"]) == 2  # the group-by release, once as a whole


def test_a_seeded_command_line_release_is_not_padded(cli, padded_calls) -> None:
    r = cli(
        "release", "mean", "--column", "age", "--data-bounds", "0", "100", "-e", "1", "--seed", "3"
    )
    assert r.exit_code == 0, r.output
    assert padded_calls == {"whole": [], "mechanism": []}


def test_ledger_entries_carry_a_label_and_json_the_remaining_epsilon(cli, tmp_path):
    from snapcore.releases._ledger import Ledger

    db = str(tmp_path / "l.db")
    assert cli("budget", "init", db, "--epsilon", "1").exit_code == 0
    csv = tmp_path / "people.csv"
    csv.write_text("age\n30\n40\n50\n")
    out = cli.json(
        "release",
        "mean",
        str(csv),
        "-c",
        "age",
        "-b",
        "0",
        "100",
        "-e",
        "0.25",
        "--ledger",
        db,
        "--seed",
        "1",
        "--json",
    )
    # 1 − 1/4, exactly
    assert out["epsilon_remaining"] == 0.75 and out["epsilon_remaining_exact"] == "3/4"
    assert out["label"] == f"mean of 'age' from {out['data']}" and "people.csv" in out["label"]
    cli.json(
        "release",
        "count",
        str(csv),
        "--n",
        "10",
        "-e",
        "0.5",
        "--ledger",
        db,
        "--label",
        "head count",
        "--seed",
        "1",
        "--json",
    )
    entries = Ledger(db).entries
    assert [e.label for e in entries] == [out["label"], "head count"]
    shown = cli("budget", "show", db).stdout
    assert "head count" in shown and "mean of 'age' from" in shown


def test_a_misspelt_statistic_or_option_gets_a_suggestion(cli):
    msg = cli.error(2, "usage", "release", "maen", "-c", "age", "-e", "1", "--json")
    assert "did you mean 'mean'?" in msg
    msg = cli.error(
        2, "usage", "release", "mean", "-c", "age", "-o", "bounds=1", "-e", "1", "--json"
    )
    assert "did you mean bounds= -> data_bounds=?" in msg and "valid options: none" not in msg


def test_a_grouped_release_prints_a_short_table_and_json_has_every_record(cli, tmp_path):
    csv = tmp_path / "g.csv"
    csv.write_text("g,x\na,10\na,20\nb,30\nb,50\nb,70\n")
    args = [
        "release",
        "mean",
        str(csv),
        "-c",
        "x",
        "--by",
        "g",
        "--keys",
        "a,b,c",
        "-b",
        "0",
        "100",
        "--n",
        "100",
        "-e",
        "1",
        "--seed",
        "2",
    ]
    r = cli(*args)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["key", "value"])
    rows = [ln.split() for ln in lines[head + 1 : head + 4]]
    assert [row[0] for row in rows] == ["a", "b", "c"]  # bare, as histogram bins print
    assert len(lines) < 15
    out = cli.json(*args, "--json")
    assert [float(row[1]) for row in rows] == out["values"]
    for group in out["groups"]:
        # a noisy sum of x − 50 over a noisy count, ε/2 each
        assert group["sum"]["epsilon_spent"] == group["count"]["epsilon_spent"] == 0.5
        assert 0 <= group["value"] <= 100


def test_a_private_size_variance_by_group_equals_the_python_release(cli, tmp_path):
    """The command line reads per-key partial states in chunks; the Python call gets the
    table in memory: the same seed gives the same variances, counts, sums and squares."""
    import snapcore

    g_col = ["a", "a", "b", "b", "b", "a", "b", "a"]
    x_col = [10.0, 20.0, 30.0, 50.0, 70.0, 35.5, 120.0, -4.0]
    csv_path = tmp_path / "g.csv"
    csv_path.write_text("g,x\n" + "".join(f"{g},{x}\n" for g, x in zip(g_col, x_col, strict=True)))
    args = ["release", "variance", str(csv_path), "-c", "x", "--by", "g", "--keys", "a,b,c"]
    args += ["-b", "0", "100", "--n", "40", "-e", "3", "--seed", "7", "--block-size", "1024"]
    out = cli.json(*args, "--json")
    py = snapcore.release(
        "variance",
        {"g": g_col, "x": x_col},
        column="x",
        by="g",
        keys=["a", "b", "c"],
        data_bounds=(0, 100),
        n=40,
        epsilon=3,
        source=snapcore.SeededSource("7"),
    )
    assert out["values"] == [py[k].value for k in ("a", "b", "c")]
    assert out["relation"] == "add-remove" and out["epsilon_spent_exact"] == "3"
    for group, k in zip(out["groups"], ("a", "b", "c"), strict=True):
        rel = py[k]
        assert group["count"]["value"] == rel.noisy_count.value
        assert group["sum"]["value"] == rel.noisy_sum.value
        assert group["sum_of_squares"]["value"] == rel.noisy_squares.value
        assert group["sum"]["epsilon_spent_exact"] == "1"
        assert 0 <= group["value"] <= 2500
    shown = cli(*args).stdout
    assert "key" in shown and "ε/3" in shown


def test_a_mean_of_private_group_sizes_on_the_command_line_is_the_python_release(cli, tmp_path):
    """The CLI reads the table into per-key partial states; snapcore.release reads it in
    memory: the same seed gives the same sums, counts and means."""
    import snapcore

    table = {"g": ["a", "a", "b", "b", "b", "a"], "x": [10.0, 20.0, 30.0, 50.0, 120.0, -4.5]}
    csv = tmp_path / "g.csv"
    csv.write_text("g,x\n" + "".join(f"{g},{x!r}\n" for g, x in zip(*table.values(), strict=True)))
    for seed in ("2", "7"):
        out = cli.json(
            "release", "mean", str(csv), "-c", "x", "--by", "g", "--keys", "a,b,c",
            "-b", "-10", "100", "--n", "100", "-e", "1", "--seed", seed, "--json",
        )  # fmt: skip
        want = snapcore.release(
            "mean", table, column="x", by="g", keys=["a", "b", "c"], data_bounds=(-10, 100),
            n=100, epsilon=1, source=snapcore.SeededSource(seed),
        )  # fmt: skip
        assert out["values"] == [want[k].value for k in ("a", "b", "c")]
        for group, k in zip(out["groups"], ("a", "b", "c"), strict=True):
            assert group["sum"]["value"] == want[k].numerator.value
            assert group["count"]["value"] == want[k].denominator.value


def test_a_mean_of_private_group_sizes_with_missing_drop_is_the_python_release(cli, tmp_path):
    """--missing drop with --by and private sizes: the command line takes the same
    relation (add-remove) as snapcore.release, and both give the means of the table
    without the missing record."""
    import snapcore

    table = {"g": ["a", "a", "b", "b", "a"], "x": [10.0, None, 30.0, 50.0, 20.0]}
    csv = tmp_path / "g.csv"
    csv.write_text("g,x\na,10.0\na,\nb,30.0\nb,50.0\na,20.0\n")
    out = cli.json(
        "release", "mean", str(csv), "-c", "x", "--by", "g", "--keys", "a,b",
        "-b", "0", "100", "--n", "100", "-e", "1", "--seed", "5", "--missing", "drop", "--json",
    )  # fmt: skip
    want = snapcore.release(
        "mean", table, column="x", by="g", keys=["a", "b"], data_bounds=(0, 100),
        n=100, epsilon=1, missing="drop", source=snapcore.SeededSource("5"),
    )  # fmt: skip
    assert out["relation"] == "add-remove" == want.relation.value
    assert out["values"] == [want[k].value for k in ("a", "b")]
    # Dropping is the table without the record: the same sums, counts and means.
    kept = {"g": ["a", "b", "b", "a"], "x": [10.0, 30.0, 50.0, 20.0]}
    dropped = snapcore.release(
        "mean", kept, column="x", by="g", keys=["a", "b"], data_bounds=(0, 100),
        n=100, epsilon=1, source=snapcore.SeededSource("5"),
    )  # fmt: skip
    for k in ("a", "b"):
        assert want[k].numerator.value == dropped[k].numerator.value
        assert want[k].denominator.value == dropped[k].denominator.value
        assert want[k].value == dropped[k].value


def test_threads_option(cli):
    """``--threads``: the same release whatever its value (a seeded histogram of
    40,000 bins, enough for the fast path's threads); 0 is refused naming the
    option and the rule."""
    edges = ",".join(str(i) for i in range(0, 40_001))
    args = ("histogram", "-c", "age", "-e", "1", "--bins", edges, "--seed", "5", "--json")
    one = cli("release", *args, "--threads", "1")
    two = cli("release", *args, "--threads", "2")
    assert one.exit_code == 0 and two.exit_code == 0, one.stderr + two.stderr
    assert json.loads(one.stdout)["value"] == json.loads(two.stdout)["value"]
    bad = cli("release", *args[:-1], "--threads", "0")
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "Error: --threads must be None or an int >= 1, got int 0"
