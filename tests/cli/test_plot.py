"""``snapcore plot`` (snapcore.cli._plot): the pictures written to files, their plan
read from a release's parameters, and the usage errors."""

from __future__ import annotations

import builtins
from fractions import Fraction
from pathlib import Path

import pytest

from snapcore.cli import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE

pytest.importorskip("matplotlib")


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (
            ["accuracy", "--clamp-bounds", "0", "10", "--eps-min", "0.1", "--eps-max", "10"],
            "a.png",
        ),
        (["distribution", "--epsilon", "1", "--clamp-bound", "8", "--guess", "3"], "d.svg"),
        (["gamma", "--b-prime", "10", "--epsilon", "2"], "g.png"),
    ],
)
def test_plot_writes_files(cli, tmp_path, args, name):
    out = tmp_path / name
    res = cli("plot", *args, "-o", str(out))
    assert res.exit_code == EXIT_OK, res.output
    data = out.read_bytes()
    assert data[:4] == b"\x89PNG" if name.endswith(".png") else b"<svg" in data[:400]


def test_plot_bad_arguments(cli, tmp_path):
    r = cli("plot", "accuracy", "-o", str(tmp_path / "x.png"))
    assert r.exit_code != 0 and "exactly one of --clamp-bounds" in r.output
    r = cli("plot", "accuracy", "--clamp-bounds", "0", "1", "-o", str(tmp_path / "x.pdf"))
    assert r.exit_code != 0 and ".png or .svg" in r.output
    r = cli(
        "plot", "distribution", "--epsilon", "-1", "--clamp-bound", "1", "--guess", "0",
        "-o", str(tmp_path / "x.png"),
    )  # fmt: skip
    assert r.exit_code != 0 and "epsilon must be" in r.output and "Traceback" not in r.output


def test_plot_without_matplotlib_names_the_extra(cli, monkeypatch, tmp_path):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    r = cli("plot", "accuracy", "--clamp-bounds", "0", "1", "-o", str(tmp_path / "x.png"))
    assert r.exit_code == EXIT_INTERNAL and "snapcore[plot]" in r.output


@pytest.mark.parametrize(
    ("plan", "want"),
    [
        # mean of 442 records on [0, 100] under replace: Δ = 100/442, B′ = 50, ε as given
        (
            ["--statistic", "mean", "--n", "442", "--data-bounds", "0", "100", "--epsilon", "1"],
            (50.0, 1.0, 100 / 442),
        ),
        # count capped at a public n = 100000 (add-remove): Δ = 1, B′ = n/2
        (["--statistic", "count", "--n", "100000", "--epsilon", "0.25"], (50000.0, 0.25, 1.0)),
        (["--b-prime", "10", "--epsilon", "2", "--sensitivity", "3"], (10.0, 2.0, 3.0)),
    ],
)
def test_plot_gamma_from_a_release_plan(cli, tmp_path, plan, want):
    out = tmp_path / "g.png"
    d = cli.json("plot", "gamma", *plan, "--dpi", "40", "-o", str(out), "--json")
    assert (d["b_prime"], d["epsilon_per_value"], d["sensitivity"]) == pytest.approx(want)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plot_gamma_plan_errors(cli, tmp_path):
    out = str(tmp_path / "g.png")
    for args, words in (
        (["--epsilon", "1"], "--b-prime"),
        (["--statistic", "mean", "--epsilon", "1"], "--n"),
        (["--statistic", "mean", "--n", "9", "--b-prime", "3", "--epsilon", "1"], "--b-prime"),
        (["--n", "9", "--b-prime", "3", "--epsilon", "1"], "--statistic"),
        (["--statistic", "mean", "--n", "9", "--epsilon", "1"], "--data-bounds"),
    ):
        r = cli("plot", "gamma", *args, "-o", out)
        assert r.exit_code == EXIT_USAGE and words in r.output, (args, r.output)


def test_plot_json(cli, tmp_path: Path):
    out = tmp_path / "g.png"
    d = cli.json("plot", "gamma", "--b-prime", "100", "--epsilon", "1", "-o", str(out), "--json")
    assert d["written"] == str(out) and out.exists()
    cli.error(
        EXIT_USAGE, "usage",
        "plot", "gamma", "--b-prime", "100", "--epsilon", "1", "-o", "x.pdf", "--json",
    )  # fmt: skip


def test_plot_from_a_release_plan(cli, tmp_path: Path):
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
    msg = cli.error(EXIT_USAGE, "usage", *args[:4], "--epsilon", "1", "--guess", "1", "--json")
    assert "--n" in msg


def test_plot_plans_a_histogram_from_bins_or_categories(cli, tmp_path):
    for opt in (["--bins", "0,10,20"], ["--categories", "a,b,c"]):
        out = tmp_path / "p.png"
        r = cli("plot", "accuracy", "--statistic", "histogram", "--n", "100", *opt, "-o", str(out))
        assert r.exit_code == 0, r.stderr
        assert out.stat().st_size > 0
        out.unlink()
    r = cli(
        "plot",
        "accuracy",
        "--bins",
        "0,1",
        "--clamp-bounds",
        "0",
        "1",
        "-o",
        str(tmp_path / "q.png"),
    )
    assert r.exit_code == 2 and "give --statistic too" in r.stderr
